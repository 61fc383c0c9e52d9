// Package preview formats the one-line summary shown inside a pending tool
// placeholder ("bash: $ make test  # running tests"), measured in display cells.
//
// It is pure: no Neovim, no I/O. Placing the line (extmark, highlight, which
// window's width) is the caller's business; Format only builds the text.
//
// # Line shape
//
// A preview is "<tool>: <summary>", or the tool name alone when the summary
// is empty. The summary is, in order of precedence: the tool's own formatter
// (Options.Custom, a Lua format_preview), the built-in formatter for the
// tool name, or the generic key=value form. Built-in summaries are parts
// joined by two spaces; a label, when the input has one, is always the last
// part, written "# <label>":
//
//	bash              $ <command>                      $ make test  # running tests
//	read              <path>  +<offset|0>[,<limit>]    src/config.lua  +0,50  # reading config
//	edit              <path>                           config.lua  # fixing typo
//	write             <path> (<size of content>)       output.txt (2.3KB)  # saving log
//	grep              /<pattern>/ in <path> (<glob>)   /TODO/ in src/ (*.go)  # finding todos
//	find              <pattern> in <path>              *.go in src/
//	ls                <path> (depth <max_depth>)       src/ (depth 2)
//	calculator        <expression>                     2 + 2
//	calculator_async  <expression>  # <delay>ms        sqrt(16)  # 500ms
//
// A field that is missing, JSON null or the empty string leaves its piece
// out. read shows the range only when offset or limit is given; write shows
// the size whenever content is a string ("(0B)" for ""); ls shows the depth
// only above the default 1; calculator_async shows the delay whenever it is
// given (0 included, as in Lua where 0 is true). timeout and limit are never
// shown (defaults, not what the call does). command, expression and label
// are trimmed of surrounding white space; paths and patterns are shown
// exactly, as white space there is significant.
//
// The generic form lists scalar keys, then table keys, each sorted by byte
// order: strings quoted with " escaped as \", numbers as Lua's tostring
// prints them (integers without ".0"), booleans bare, arrays as "[]",
// "[1 item]", "[N items]", objects as "{}", "{a, b}" or "{a, b, +N more}".
//
// # Text
//
// Every piece of input text is cleaned: \n, \r\n, \r, U+0085, U+2028 and
// U+2029 become Options.EOL ("↵" by default), a tab becomes a space, C0/C1
// controls, DEL and the bidirectional controls are dropped, invalid UTF-8
// becomes U+FFFD, and a run of more than 16 combining marks or other
// cell-less runes is cut short. The line is then cut to the width in cells
// (go-runewidth: CJK and emoji 2, combining marks 0) on a grapheme-cluster
// boundary, ending in "…" (one cell). Format builds only a bounded prefix of
// the line, so a megabyte of command costs what eighty cells do.
//
// # Decisions
//
// Each with the alternative rejected:
//
//   - Label as a trailing "  # label" part (SPEC §8, seed 004), not HEAD's
//     "label — detail" em-dash layout (reference/runtime.md §9.2).
//   - write: one space before the size, "output.txt (2.3KB)", as SPEC §8 and
//     seed 004 show; not the Lua code's two ("./x  (1.5KB)", seed-era §6.2).
//   - grep pattern between slashes, /TODO/, marking a regular expression as
//     the Lua plugin does; not in double quotes, which read as a literal
//     string and clash with quotes inside patterns.
//   - grep/find/ls qualifiers read as a phrase with single spaces ("in src/",
//     "(*.go)", "(depth 2)"), like write's "(2.3KB)"; not the Lua plugin's
//     unlabelled two-space parts ("/TODO/  src  *.go"), which do not say
//     which is the path and which the glob.
//   - calculators show a label too ("  # label" after "  # 500ms"): this
//     project's calculator schemas have one; not ignoring it as the Lua
//     extras (which have none) would.
//   - An empty summary (empty input, all-null input, "" from Custom) gives
//     the tool name alone, as the Lua fallback pins ("noop"); not "noop: "
//     with a dangling colon, which the Lua code gives for a custom "".
//   - The label key is listed in the generic form like any other key, as in
//     the Lua plugin; not hidden or promoted.
//   - Objects name their first 2 keys before "+N more", as the Lua plugin
//     does; not more, since the line is short anyway.
//   - An empty JSON array shows "[]" and an empty object "{}": Go keeps the
//     two apart, where a Lua table cannot ("{}" for both).
//   - Integral numbers up to 2^53 print exactly (123456789012345); other
//     numbers follow Lua's %.14g. Not %.14g throughout, which would round
//     large integer ids.
//   - Widths come from go-runewidth conditions built here, with
//     Options.AmbiguousWide standing for Neovim's 'ambiwidth'=double; not
//     runewidth.DefaultCondition, which follows the host's locale (LANG,
//     RUNEWIDTH_EASTASIAN) rather than Neovim's setting.
//   - Under ambiwidth=double a one-cell line cannot hold "…" (two cells) and
//     is cut without it; not returned empty.
//   - Bidirectional controls are dropped, so a command cannot display in an
//     order other than the one it runs in; not kept as ordinary format
//     characters.
//   - Options.Custom is called once, with the width left after "<tool>: "
//     (clamped at 0), and its text is used as is (cleaned and cut, not
//     trimmed); not called again when the line is rebuilt.
package preview
