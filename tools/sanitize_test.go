package tools

import (
	"slices"
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

func TestScrubEnv(t *testing.T) {
	env := []string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=ghp", "my_db_password=x", "AWS_REGION=eu", "HOME=/h", "KEYBOARD=us", "NOEQUALS"}
	got := ScrubEnv(env, DefaultEnvDeny)
	want := []string{"PATH=/bin", "HOME=/h", "KEYBOARD=us", "NOEQUALS"}
	if !slices.Equal(got, want) {
		t.Errorf("ScrubEnv = %v, want %v", got, want)
	}
	if got := ScrubEnv(env, []string{}); len(got) != len(env) {
		t.Errorf("empty deny list scrubbed %v", got)
	}
}

func TestRedact(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-abcdef123456", "SHORT_TOKEN=abc", "EDITOR_NAME=visible-value", "MY_SECRET=sk-abcdef"}
	in := "key sk-abcdef123456 and sk-abcdef and abc and visible-value"
	got := Redact(in, env, DefaultEnvDeny)
	want := "key [redacted] and [redacted] and abc and visible-value"
	if got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

func TestFinish(t *testing.T) {
	env := &Env{Environ: []string{"ANTHROPIC_API_KEY=sk-ant-0123456789"}, ExtraEnv: map[string]string{"DEPLOY_TOKEN": "tok-secret-value"}}
	// The escape sequence in the middle of the secret is removed first, so
	// the secret is still found.
	in := "\x1b[32msk-ant-01234\x1b[0m56789 tok-secret-value ok"
	if got := Finish(in, env); got != "[redacted] [redacted] ok" {
		t.Errorf("Finish = %q", got)
	}
	if got := Finish("plain", nil); got != "plain" {
		t.Errorf("Finish(nil env) = %q", got)
	}
}

func TestWildMatchFold(t *testing.T) {
	for _, tt := range []struct {
		pat, name string
		want      bool
	}{
		{"*_KEY", "OPENAI_API_KEY", true}, {"*_KEY", "openai_api_key", true}, {"*_KEY", "KEYBOARD", false},
		{"AWS_*", "AWS_", true}, {"AWS_*", "XAWS_A", false}, {"A?C", "abc", true}, {"*", "", true}, {"*_*_*", "A_B_C", true},
	} {
		if got := wildMatchFold(tt.pat, tt.name); got != tt.want {
			t.Errorf("wildMatchFold(%q, %q) = %v", tt.pat, tt.name, got)
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
