package buffer

import "unicode/utf8"

// Sanitize makes untrusted text (tool output, a model's answer) safe to
// enter the buffer: it removes what a terminal would interpret rather than
// show: ANSI escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-byte
// escapes), their 8-bit C1 forms, and other control characters. Tabs and newlines
// stay; CRLF becomes LF; a lone carriage return overwrites the line as a
// terminal would (progress bars show their final state); a backspace erases
// the character before it. Invalid UTF-8 becomes U+FFFD.
func Sanitize(s string) string {
	if isClean(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	lineStart := 0 // offset in b of the current line
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
			b = append(b, c)
			i++
			if c == '\n' {
				lineStart = len(b)
			}
		case c == '\r':
			j := i
			for j < len(s) && s[j] == '\r' {
				j++
			}
			if j < len(s) && s[j] != '\n' {
				// Carriage return inside a line: what follows overwrites it.
				b = b[:lineStart]
			}
			i = j
		case c == '\b':
			if len(b) > lineStart {
				_, size := utf8.DecodeLastRune(b[lineStart:])
				b = b[:len(b)-size]
			}
			i++
		case c == 0x1b:
			i = skipEscape(s, i+1)
		case c < 0x20 || c == 0x7f:
			i++
		case c < 0x80:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, "\uFFFD"...)
			case r == 0x9b: // C1 CSI
				i = skipCSI(s, i+size)
				continue
			case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // OSC, DCS, SOS, PM, APC
				i = skipString(s, i+size)
				continue
			case r >= 0x80 && r <= 0x9f:
			default:
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return string(b)
}

// isClean reports whether s has nothing for Sanitize to do.
func isClean(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			ascii = false
			if c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f {
				return false // a C1 control character
			}
		}
	}
	return ascii || utf8.ValidString(s)
}

// skipEscape returns the index after the escape sequence whose ESC was just
// before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// nF escapes: intermediates 0x20-0x2F then one final byte (ESC ( B).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI skips parameter bytes (0x30-0x3F), intermediate bytes (0x20-0x2F)
// and the final byte (0x40-0x7E) of a control sequence.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips the body of an OSC/DCS/SOS/PM/APC string up to and
// including its terminator (BEL, ESC \ or C1 ST). An unterminated string
// ends at the end of its line, so a stray ESC ] cannot swallow the output.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i
		case s[i] == '\n':
			return i
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		}
		i++
	}
	return i
}
