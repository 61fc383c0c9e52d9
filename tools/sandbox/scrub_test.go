package sandbox

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
