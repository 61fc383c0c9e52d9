package buffer

import "strings"

// Line classification. Every function here looks at one line (without its
// terminator) and decides with plain byte tests: no regexp, no allocation.
// "Space" always means ASCII whitespace [ \t\n\v\f\r], like Lua's %s.

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isBlank reports whether s is empty or whitespace only.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return false
		}
	}
	return true
}

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

func trimRightSpace(s string) string {
	j := len(s)
	for j > 0 && isSpace(s[j-1]) {
		j--
	}
	return s[:j]
}

func trimSpace(s string) string { return trimRightSpace(trimLeftSpace(s)) }

// fields splits s on runs of ASCII whitespace.
func fields(s string) []string {
	var out []string
	for {
		s = trimLeftSpace(s)
		if s == "" {
			return out
		}
		i := 0
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
}

// roleMarker recognises a whole-line role marker ^@([A-Za-z0-9]+):\s*$ and
// returns the role.
func roleMarker(s string) (string, bool) {
	if len(s) < 3 || s[0] != '@' {
		return "", false
	}
	i := 1
	for i < len(s) && isAlnum(s[i]) {
		i++
	}
	if i == 1 || i == len(s) || s[i] != ':' || !isBlank(s[i+1:]) {
		return "", false
	}
	return s[1:i], true
}

// backticks returns the number of leading backticks of s.
func backticks(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// fenceOpen returns the backtick count of a fence opener, or 0. An opener is
// at least three backticks at column 1 whose rest contains no backtick (the
// CommonMark rule for backtick fences), so "```code```" is not one.
func fenceOpen(s string) int {
	n := backticks(s)
	if n < 3 || strings.IndexByte(s[n:], '`') >= 0 {
		return 0
	}
	return n
}

// fenceCloses reports whether s closes a fence opened with n backticks: at
// least n backticks and nothing but whitespace after them.
func fenceCloses(s string, n int) bool {
	k := backticks(s)
	return k >= n && isBlank(s[k:])
}

func isLangChar(c byte) bool {
	return isAlnum(c) || c == ':' || c == '.' || c == '_' || c == '-'
}

// fenceInfo splits the opener s (with n backticks) into its language tag
// [A-Za-z0-9:._-]* and the trimmed rest, the info string.
func fenceInfo(s string, n int) (lang, info string) {
	r := s[n:]
	i := 0
	for i < len(r) && isLangChar(r[i]) {
		i++
	}
	return r[:i], trimSpace(r[i:])
}

// frontmatterOpen recognises line 1 of a frontmatter: exactly three
// backticks, an alphanumeric tag, optional trailing whitespace.
func frontmatterOpen(s string) (string, bool) {
	if backticks(s) != 3 {
		return "", false
	}
	i := 3
	for i < len(s) && isAlnum(s[i]) {
		i++
	}
	if i == 3 || !isBlank(s[i:]) {
		return "", false
	}
	return s[3:i], true
}

// frontmatterClose recognises a line of exactly three backticks (plus
// optional trailing whitespace).
func frontmatterClose(s string) bool {
	return backticks(s) == 3 && isBlank(s[3:])
}

const (
	toolUsePrefix    = "**Tool Use:**"
	toolResultPrefix = "**Tool Result:**"
)

// toolUseHeader parses ^\*\*Tool Use:\*\*\s*`([^`]+)`\s*\(`([^)]+)`\) and
// returns the text after the closing parenthesis as suffix.
func toolUseHeader(s string) (name, id, suffix string, ok bool) {
	if !strings.HasPrefix(s, toolUsePrefix) {
		return
	}
	r := trimLeftSpace(s[len(toolUsePrefix):])
	if r == "" || r[0] != '`' {
		return
	}
	r = r[1:]
	j := strings.IndexByte(r, '`')
	if j <= 0 {
		return
	}
	name = r[:j]
	r = trimLeftSpace(r[j+1:])
	if !strings.HasPrefix(r, "(`") {
		return "", "", "", false
	}
	r = r[2:]
	// The id is [^)]+ followed by "`)": it ends just before the first ')'.
	k := strings.IndexByte(r, ')')
	if k < 2 || r[k-1] != '`' {
		return "", "", "", false
	}
	return name, r[:k-1], trimRightSpace(r[k+1:]), true
}

// toolResultHeader parses ^\*\*Tool Result:\*\*\s*`([^`]+)`(.*)$.
func toolResultHeader(s string) (id, suffix string, ok bool) {
	if !strings.HasPrefix(s, toolResultPrefix) {
		return
	}
	r := trimLeftSpace(s[len(toolResultPrefix):])
	if r == "" || r[0] != '`' {
		return
	}
	j := strings.IndexByte(r[1:], '`')
	if j <= 0 {
		return
	}
	return r[1 : 1+j], trimRightSpace(r[2+j:]), true
}

// thinkingTag is a recognised opening <thinking …> tag.
type thinkingTag struct {
	provider, signature string
	redacted            bool
	selfClosing         bool
}

const thinkingClose = "</thinking>"

// thinkingOpen recognises, with no surrounding whitespace:
//
//	<thinking>
//	<thinking redacted>
//	<thinking PROVIDER:signature="SIG">
//	<thinking PROVIDER:signature="SIG"/>
func thinkingOpen(s string) (thinkingTag, bool) {
	const prefix = "<thinking"
	if s == "<thinking>" {
		return thinkingTag{}, true
	}
	if len(s) <= len(prefix) || !strings.HasPrefix(s, prefix) || !isSpace(s[len(prefix)]) {
		return thinkingTag{}, false
	}
	r := trimLeftSpace(s[len(prefix):])
	if r == "redacted>" {
		return thinkingTag{redacted: true}, true
	}
	i := 0
	for i < len(r) && isAlnum(r[i]) {
		i++
	}
	const sig = `:signature="`
	if i == 0 || !strings.HasPrefix(r[i:], sig) {
		return thinkingTag{}, false
	}
	t := thinkingTag{provider: r[:i]}
	r = r[i+len(sig):]
	q := strings.IndexByte(r, '"')
	if q < 0 {
		return thinkingTag{}, false
	}
	t.signature = r[:q]
	switch trimLeftSpace(r[q+1:]) {
	case ">":
	case "/>":
		t.selfClosing = true
	default:
		return thinkingTag{}, false
	}
	return t, true
}

// abortMarker recognises ^<!--\s*flemma:aborted:\s*(.*?)\s*-->$ and returns
// the trimmed message.
func abortMarker(s string) (string, bool) {
	const tag = "flemma:aborted:"
	if len(s) < 7 || !strings.HasPrefix(s, "<!--") || !strings.HasSuffix(s, "-->") {
		return "", false
	}
	inner := trimLeftSpace(s[4 : len(s)-3])
	if !strings.HasPrefix(inner, tag) {
		return "", false
	}
	return trimSpace(inner[len(tag):]), true
}

// keyValue splits a modeline token ^([A-Za-z0-9_]+)=(.+)$.
func keyValue(tok string) (key, value string, ok bool) {
	i := 0
	for i < len(tok) && (isAlnum(tok[i]) || tok[i] == '_') {
		i++
	}
	if i == 0 || i >= len(tok)-1 || tok[i] != '=' {
		return "", "", false
	}
	return tok[:i], tok[i+1:], true
}

// unquote removes one pair of matching surrounding quotes.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// fenceStatus reads the status of a flemma:tool fence from its info string
// (seed-era rules): the last status=VALUE token decides; a missing or
// unknown value means pending.
func fenceStatus(info string) Status {
	value := ""
	for _, tok := range fields(info) {
		if k, v, ok := keyValue(tok); ok && k == "status" {
			value = v
		}
	}
	if s, ok := ParseStatus(value); ok {
		return s
	}
	return StatusPending
}

// headerSuffix reads a v0.11 header suffix: the whole remainder after the id
// must be one parenthesised group. An explicit status=WORD wins, else the
// first positional that is a status word. The word "error" (not a
// lifecycle status) sets isErr. extra returns the key=value tokens other
// than status, verbatim.
func headerSuffix(suffix string) (st Status, isErr bool, extra []string) {
	t := trimSpace(suffix)
	if len(t) < 2 || t[0] != '(' || t[len(t)-1] != ')' {
		return "", false, nil
	}
	explicit, positional := "", ""
	for _, tok := range fields(t[1 : len(t)-1]) {
		if k, v, ok := keyValue(tok); ok {
			if k == "status" {
				explicit = unquote(v)
			} else {
				extra = append(extra, tok)
			}
			continue
		}
		if positional == "" {
			if w := unquote(tok); isStatusWord(w) {
				positional = w
			}
		}
	}
	word := positional
	if isStatusWord(explicit) {
		word = explicit
	}
	if word == "error" {
		return "", true, extra
	}
	st, _ = ParseStatus(word)
	return st, false, extra
}

func isStatusWord(w string) bool {
	_, ok := ParseStatus(w)
	return ok || w == "error"
}

// errorSuffix reports whether a result header suffix ends with "(error)",
// the seed-era error mark (Lua %s*%(error%)%s*$).
func errorSuffix(suffix string) bool {
	return strings.HasSuffix(trimRightSpace(suffix), "(error)")
}

// The markers of a compaction summary (issue 30).
const (
	summaryTag   = "flemma:summary"
	summaryClose = "<!-- /flemma:summary -->"
)

// summaryOpen recognises the marker of a compaction summary,
// ^<!--\s*flemma:summary(:\s*(.*?))?\s*-->$, and returns the trimmed note.
func summaryOpen(s string) (string, bool) {
	if len(s) < 7 || !strings.HasPrefix(s, "<!--") || !strings.HasSuffix(s, "-->") {
		return "", false
	}
	inner := trimLeftSpace(s[4 : len(s)-3])
	if !strings.HasPrefix(inner, summaryTag) {
		return "", false
	}
	rest := inner[len(summaryTag):]
	if isBlank(rest) {
		return "", true
	}
	if rest[0] != ':' {
		return "", false
	}
	return trimSpace(rest[1:]), true
}

// summaryEnd recognises the closing marker ^<!--\s*/flemma:summary\s*-->$.
func summaryEnd(s string) bool {
	if len(s) < 7 || !strings.HasPrefix(s, "<!--") || !strings.HasSuffix(s, "-->") {
		return false
	}
	return trimSpace(s[4:len(s)-3]) == "/"+summaryTag
}

// summaryLike reports whether s looks like a summary marker that is not
// one (extra text after the comment, a typo after the tag): worth a
// diagnostic, since the writer of the line probably meant a marker.
func summaryLike(s string) bool {
	return strings.HasPrefix(s, "<!--") && strings.Contains(s, summaryTag)
}

// SummaryMarker returns the marker line of a compaction summary with note
// (newlines and control characters in note become spaces).
func SummaryMarker(note string) string {
	note = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, note)
	note = trimSpace(note)
	if note == "" {
		return "<!-- " + summaryTag + " -->"
	}
	return "<!-- " + summaryTag + ": " + note + " -->"
}

// SummaryEnd is the closing marker line of a compaction summary.
const SummaryEnd = summaryClose
