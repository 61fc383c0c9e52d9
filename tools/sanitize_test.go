package tools

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/secrets"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

func TestRedact(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-abcdef123456", "SHORT_TOKEN=abc", "EDITOR_NAME=visible-value", "MY_SECRET=sk-abcdef"}
	in := "key sk-abcdef123456 and sk-abcdef and abc and visible-value"
	got := Redact(in, env, sandbox.DefaultEnvDeny)
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

// A configured credential (a provider's header token, a resolved key) is
// hidden in tool output whatever printed it: a variable under another
// name, a config file the model cat-ed.
func TestFinishRedactsConfiguredCredentials(t *testing.T) {
	secrets.Default.AddHeader("Bearer tool-visible-token-42")
	got := Finish("curl said: Authorization: Bearer tool-visible-token-42\n", &Env{})
	if strings.Contains(got, "tool-visible-token-42") || !strings.Contains(got, "[redacted]") {
		t.Errorf("Finish = %q", got)
	}
}

// Redactor finds the secrets once and redacts like Redact.
func TestRedactorLikeRedact(t *testing.T) {
	env := []string{"MY_API_TOKEN=s3cr3t-value", "HOME=/home/u", "SHORT_TOKEN=abc"}
	deny := []string{"*_TOKEN"}
	r := Redactor(env, deny)
	for _, in := range []string{"curl -H s3cr3t-value", "no secret here /home/u", "abc"} {
		if got, want := r(in), Redact(in, env, deny); got != want {
			t.Errorf("Redactor(%q) = %q, Redact = %q", in, got, want)
		}
	}
	if got := r("x s3cr3t-value"); got != "x [redacted]" {
		t.Errorf("got %q", got)
	}
	if got := Redactor([]string{"HOME=/h"}, deny)("plain"); got != "plain" {
		t.Errorf("no secrets: %q", got)
	}
}

// BenchmarkAuditRedaction: what the audit log does to one call's
// arguments before it keeps them (issue 28 item 3): the secret values of
// the environment (found once per step) and credential shapes.
func BenchmarkAuditRedaction(b *testing.B) {
	input := `{"command": "curl -H 'Authorization: Bearer abc' https://example.com/api && go test ./... -run 'TestX|TestY' -count=1 2>&1 | tail -50", "label": "running the tests", "timeout": 300}`
	secrets := Redactor(nil, []string{"*_TOKEN", "*_KEY", "*SECRET*", "*PASSWORD*"})
	b.ReportAllocs()
	for b.Loop() {
		_ = RedactShapes(secrets(input))
	}
}
