package tools

import (
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/secrets"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Finish makes tool output safe to enter the buffer: terminal control
// sequences are removed (buffer.Sanitize) and then the values of secret environment
// variables are replaced by [redacted] (Redact). The executor calls it on
// every result; the built-ins also call it before they truncate, so that the
// limits apply to the text the model will see. It is idempotent.
func Finish(text string, env *Env) string {
	// Every configured credential (a provider's key or header, a stored
	// token) is hidden whatever printed it.
	text = secrets.Default.Redact(buffer.Sanitize(text))
	if env == nil {
		return Redact(text, nil, sandbox.DefaultEnvDeny)
	}
	env.redactOnce.Do(func() { env.redactor = newRedactor(env.secretEnv(), env.envDeny()) })
	if env.redactor == nil {
		return text
	}
	return env.redactor.Replace(text)
}

// Redact replaces, in text, the value of every variable of environ (nil:
// the host's environment) whose name matches deny and whose value is at
// least 6 bytes long, by [redacted]. Longer values are replaced first.
func Redact(text string, environ []string, deny []string) string {
	if environ == nil {
		environ = (*Env)(nil).environ()
	}
	r := newRedactor(environ, deny)
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// Redactor is Redact with the secrets found once (nil environ: the host's
// environment), for many texts in a row.
func Redactor(environ []string, deny []string) func(string) string {
	if environ == nil {
		environ = (*Env)(nil).environ()
	}
	r := newRedactor(environ, deny)
	if r == nil {
		return func(text string) string { return text }
	}
	return r.Replace
}

func newRedactor(environ []string, deny []string) *strings.Replacer {
	seen := map[string]bool{}
	var secrets []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || len(val) < minSecretLen || seen[val] || !sandbox.EnvDenied(name, deny) {
			continue
		}
		seen[val] = true
		secrets = append(secrets, val)
	}
	if len(secrets) == 0 {
		return nil
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: longest first, so a secret that contains another is
	// replaced whole.
	sort.Slice(secrets, func(i, j int) bool {
		if len(secrets[i]) != len(secrets[j]) {
			return len(secrets[i]) > len(secrets[j])
		}
		return secrets[i] < secrets[j]
	})
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, redactedPlaceholder)
	}
	return strings.NewReplacer(pairs...)
}
