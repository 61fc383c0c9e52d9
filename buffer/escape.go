package buffer

import "strings"

// Escaping of text that must not become structure.
//
// Text that does not come from the user — a model's answer and its thinking
// — is written into the buffer, and the buffer is parsed again on every
// step. A line of that text that reads as structure (a role marker, a tool
// header, a thinking tag, an abort marker) would become a message, a tool
// call or a placeholder that nobody made: model text could forge a tool call
// and its approval. EscapeLine prefixes such a line with a backslash, which
// no structure starts with, so Parse reads it as text; UnescapeLine removes
// the backslash again when the text is sent back to the model. A line that
// already starts with backslashes before such a line gets one more, so the
// escape is exactly reversible: UnescapeLine(EscapeLine(s)) == s for every s.

// Structural reports whether line, standing at column 1 outside a code
// fence, would be read by Parse as structure: a role marker (@You:), a
// **Tool Use:** or **Tool Result:** header, a <thinking …> or </thinking>
// tag, a flemma:aborted marker, or a compaction summary's marker or
// closing marker. A trailing "\r" is ignored, as Parse ignores it.
func Structural(line string) bool {
	s := strings.TrimSuffix(line, "\r")
	if s == "" {
		return false
	}
	switch s[0] {
	case '@':
		_, ok := roleMarker(s)
		return ok
	case '*':
		return strings.HasPrefix(s, toolUsePrefix) || strings.HasPrefix(s, toolResultPrefix)
	case '<':
		if s == thinkingClose {
			return true
		}
		if _, ok := thinkingOpen(s); ok {
			return true
		}
		if _, ok := abortMarker(s); ok {
			return true
		}
		if _, ok := summaryOpen(s); ok {
			return true
		}
		return summaryEnd(s)
	}
	return false
}

// EscapeLine returns line with one more leading backslash when, without its
// leading backslashes, it is Structural; otherwise line unchanged.
func EscapeLine(line string) string {
	if Structural(strings.TrimLeft(line, `\`)) {
		return `\` + line
	}
	return line
}

// UnescapeLine undoes EscapeLine.
func UnescapeLine(line string) string {
	if line != "" && line[0] == '\\' && Structural(strings.TrimLeft(line, `\`)) {
		return line[1:]
	}
	return line
}

// EscapeText applies EscapeLine to every line of s ("\n"-separated).
func EscapeText(s string) string { return mapLines(s, EscapeLine) }

// UnescapeText applies UnescapeLine to every line of s.
func UnescapeText(s string) string { return mapLines(s, UnescapeLine) }

func mapLines(s string, f func(string) string) string {
	if !strings.ContainsAny(s, `\@*<`) {
		return s // nothing to do (the common case)
	}
	lines := strings.Split(s, "\n")
	changed := false
	for i, l := range lines {
		if m := f(l); m != l {
			lines[i], changed = m, true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(lines, "\n")
}

// FenceState follows code fences through lines of message text with the rules
// Parse uses: an opener is three or more backticks at column 1 with no
// backtick after them, a closer at least as many backticks and nothing but
// blanks. The zero value is outside any fence.
type FenceState struct{ open int }

// Feed advances the state by one line.
func (f *FenceState) Feed(line string) {
	line = strings.TrimSuffix(line, "\r")
	if f.open > 0 {
		if fenceCloses(line, f.open) {
			f.open = 0
		}
		return
	}
	f.open = fenceOpen(line)
}

// Closer returns the line that closes the open fence, or "" when none is
// open.
func (f *FenceState) Closer() string {
	if f.open == 0 {
		return ""
	}
	return strings.Repeat("`", f.open)
}
