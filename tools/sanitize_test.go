package tools

import (
	"slices"
	"testing"
)

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
