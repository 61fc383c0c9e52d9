// Package buffer parses the text of a .chat buffer into a Document whose every
// node carries its line position, and renders the blocks the host writes back
// (placeholders, tool results) together with the smallest line-range edits that
// put them in place.
//
// It is pure: no Neovim, no I/O. Line numbers are 1-based in the Document and
// 0-based, end-exclusive in Edit, matching nvim_buf_set_lines. Columns in
// diagnostics are 1-based byte offsets.
//
// # Grammar
//
// Parse reads the lines as Neovim returns them (a single trailing "\r" is
// dropped from each). "Blank" means empty or ASCII whitespace only.
//
//   - Frontmatter: line 1 is ```TAG (exactly three backticks, TAG
//     alphanumeric); the first later line of exactly three backticks closes
//     it. If a role marker comes first, there is no frontmatter (reported).
//
//   - Role marker: a whole line @ROLE: with ROLE alphanumeric and only
//     whitespace after the colon. A message runs from its marker to the line
//     before the next marker, trailing blank lines included. Lines before the
//     first marker are the Preamble (reported, never sent).
//
//   - Code fences: an opener is three or more backticks at column 1 whose rest
//     holds no backtick (CommonMark), and a closer is at least as many
//     backticks followed by whitespace only. A marker inside an open fence is
//     content; an unclosed fence runs to the end of the buffer. The same rule
//     holds for the fences of tool blocks, which therefore also need at least
//     three backticks (the Lua Flemma accepts one), so the message splitter
//     and the block parser always agree on where a fence ends.
//
//   - @Assistant: holds Text, Thinking (<thinking>, <thinking redacted>,
//     <thinking P:signature="S"> … </thinking>, or the self-closing
//     <thinking P:signature="S"/>), ToolUse and Aborted
//     (<!-- flemma:aborted: MESSAGE -->). @You: holds Text, ToolResult and
//     Summary (<!-- flemma:summary: NOTE --> … <!-- /flemma:summary -->,
//     the closing marker outside code fences and within the message).
//     Other roles hold one Text. Structure is recognised only outside code
//     fences, so a quoted example stays text, and fences inside thinking
//     content do not count.
//
//   - Tool use: **Tool Use:** `NAME` (`ID`) at column 1, blank lines, then
//     a fence with language json (any case) or none, holding a JSON object.
//     Keys whose value is null are dropped, as in the Lua Flemma.
//
//   - Tool result: **Tool Result:** `ID`[ SUFFIX], blank lines, then a fence
//     whose body is the content, verbatim. A header ending in "(error)" marks
//     an error result. A fence with language flemma:tool makes a placeholder
//     whose status comes from the status= token of its info string (aliases
//     reject and deny; missing or unknown means pending), as in seed 004. For
//     compatibility with Lua Flemma v0.11 a SUFFIX that is one parenthesised
//     group naming a status, e.g. "(pending)" or "(status=approved
//     timeout=30)", makes the same placeholder (ToolResult.HeaderForm); the
//     fence wins when both are present.
//
//   - Compaction: the last Summary is in force (Document.Summary). The
//     text and blocks before its marker stay in the Document, but the
//     queries (ToolUses, Result, Unresolved, Incomplete, BlockAt) see only
//     the blocks after it, so what the summary replaces is never pending
//     work; Whole gives the view of every block.
//
// # Tolerance
//
// Parse never fails. A block that cannot be read (a tool use without a fence
// or with bad JSON, an unclosed fence, an unclosed <thinking>) is reported in
// Document.Diagnostics and its lines stay Text, and parsing goes on with the
// next line: no text is ever dropped. Pairing problems (a result for an
// unknown tool use, a duplicate id) are reported too. Diagnostics are sorted
// by line and column.
//
// # Rendering and edits
//
// Render rebuilds the text line for line, so Render(Parse(x)) has the lines of
// x in canonical form and Render∘Parse is idempotent. The edit functions
// (PlacePlaceholders, ReplaceResult, SetStatus, StripFence) take the Document
// and the exact lines it was parsed from, find blocks by tool id, and return
// edits that touch only the target block; the caller applies them in one
// atomic call (Apply does the same in memory).
package buffer
