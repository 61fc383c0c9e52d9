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

// TestLooksLikeCredential: values shaped like secrets, whatever the
// variable's name, and ordinary values that are not.
func TestLooksLikeCredential(t *testing.T) {
	secret := []string{
		"https://user:hunter2@example.com/x", "https://ghp_abcdefghijklmnopqrstuvwxyz012345@github.com/o/r",
		"https://oauth2tokenvalue123456@gitlab.example.com/r.git", "http://u:p@proxy:3128",
		"https://hooks.slack.com/services/T0/B0/XX", "https://discord.com/api/webhooks/1/abc",
		"Bearer abcdef0123456789abcdef", "Basic dXNlcjpwYXNzd29yZDEyMzQ1Ng==", "token ghp_abcdefghijklmnop1234",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZ25h",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "glpat-abcdefghij0123456789", "xoxb-1234567890-abcdefghijkl",
		"sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "sk-proj-abcdefghijklmnop0123456789", "AKIAIOSFODNN7EXAMPLE1",
		"npm_abcdefghijklmnopqrstuvwxyz0123456789", "AUTHORIZATION: bearer ghp_abcdefghijklmnop1234",
		"-----BEGIN OPENSSH PRIVATE KEY-----", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMw==",
		"0123456789abcdef0123456789abcdef01234567", `{"auths":{"r":{"auth":"dXNlcjpwYXNzd29yZDEyMzQ1Ng=="}}}`,
	}
	plain := []string{
		"", "x", "/usr/bin:/bin", "/nix/store/0123456789abcdefghijklmnopqrstuv-go-1.22/bin:/usr/bin", "C.UTF-8",
		"xterm-256color", "https://proxy.golang.org,direct", "ssh://git@github.com/o/r.git", "git@github.com:o/r.git",
		"-mod=mod -trimpath", "nvim", "less -R", "/home/u/.cache/go-build", "en_US.UTF-8", "true",
		"http://proxy.internal:3128", "--max-old-space-size=4096", "A U Thor", "a@example.com", "sk-learn",
		"deadbeef", "/tmp/TestSomething1234567890abcdefghij/001",
	}
	for _, v := range secret {
		if !LooksLikeCredential(v) {
			t.Errorf("LooksLikeCredential(%q) = false", v)
		}
	}
	for _, v := range plain {
		if LooksLikeCredential(v) {
			t.Errorf("LooksLikeCredential(%q) = true", v)
		}
	}
}
