package buffer

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\n\twith tab", "plain text\n\twith tab"},
		{"héllo wörld ✓", "héllo wörld ✓"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[1;38;5;196mbold\x1b[m", "bold"},
		{"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
		{"\x1b]0;window title\x07text", "text"},
		{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPdevice control\x1b\\after", "after"},
		{"\x1b(Bcharset", "charset"},
		{"\x1b7saved\x1b8", "saved"},
		{"\u009b31mc1 csi", "c1 csi"},
		{"\u009d0;title\u009cafter", "after"},
		{"crlf\r\nline", "crlf\nline"},
		{"progress 10%\rprogress 100%\ndone", "progress 100%\ndone"},
		{"trailing cr\r", "trailing cr"},
		{"ab\bc", "ac"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"\x1b]unterminated osc\nnext line", "\nnext line"},
		{"\x1b[", ""},
		{"clear\x1b[2J\x1b[Hscreen", "clearscreen"},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Sanitize(Sanitize(tt.in)); got != tt.want {
			t.Errorf("Sanitize is not idempotent on %q: %q", tt.in, got)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"\x1b[31mx", "a\rb", "\u009b1m", "\x1b]8;;u\x07", "a\bb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		if strings.ContainsAny(out, "\x1b\r\x07\x00\b\u009b\u009d") {
			t.Errorf("Sanitize(%q) = %q keeps a control character", s, out)
		}
		if Sanitize(out) != out {
			t.Errorf("Sanitize not idempotent on %q", s)
		}
	})
}
