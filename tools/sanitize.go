package tools

import (
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// DefaultEnvDeny are the environment variables never passed to commands
// (SPEC §9, seed 001; broadened after the first outside security review),
// matched case-insensitively; `*` matches any run of characters. Besides
// these, a variable whose value holds a password in a URL is always
// removed (Env), and the socket variables of SocketEnv never reach a
// command.
var DefaultEnvDeny = []string{
	// Anything that says what it is.
	"*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_CREDS",
	"*API_KEY*", "*APIKEY*", "*PRIVATE_KEY*", "*_KEY", "*_KEY_*", "*_PAT", "*_PASS", "*_PWD",
	"*_AUTH", "*_COOKIE", "*_SALT", "*WEBHOOK*", "*_DSN",
	// Connection strings.
	"*DATABASE_URL*", "*_DB_URL", "*_DB_URI", "*CONNECTION_STRING*", "*_CONN_STR*",
	"*MONGO*_URI*", "*MONGO*_URL*", "*REDIS*_URL*", "*POSTGRES*_URL*", "*MYSQL*_URL*", "*AMQP*_URL*", "*RABBITMQ*_URL*",
	// Package registries, agents, sessions, tickets.
	"NPM_CONFIG__AUTH*", "NPM_CONFIG_//*", "SSH_AUTH_SOCK", "BW_SESSION", "OP_SESSION_*", "KRB5CCNAME",
	// Whole families.
	"AWS_*", "ANTHROPIC_*", "OPENAI_*",
}

// Finish makes tool output safe to enter the buffer: terminal control
// sequences are removed (buffer.Sanitize) and then the values of secret environment
// variables are replaced by [redacted] (Redact). The executor calls it on
// every result; the built-ins also call it before they truncate, so that the
// limits apply to the text the model will see. It is idempotent.
func Finish(text string, env *Env) string {
	text = buffer.Sanitize(text)
	if env == nil {
		return Redact(text, nil, DefaultEnvDeny)
	}
	env.redactOnce.Do(func() { env.redactor = newRedactor(env.secretEnv(), env.envDeny()) })
	if env.redactor == nil {
		return text
	}
	return env.redactor.Replace(text)
}

// ScrubEnv returns environ ("NAME=value" entries) without the variables
// whose names match a deny glob (case-insensitive).
func ScrubEnv(environ []string, deny []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !envDenied(name, deny) {
			out = append(out, kv)
		}
	}
	return out
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

func newRedactor(environ []string, deny []string) *strings.Replacer {
	seen := map[string]bool{}
	var secrets []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || len(val) < minSecretLen || seen[val] || !envDenied(name, deny) {
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

func envDenied(name string, deny []string) bool {
	for _, g := range deny {
		if wildMatchFold(g, name) {
			return true
		}
	}
	return false
}

// wildMatchFold matches name against a glob whose only metacharacters are `*`
// (any run) and `?` (one byte), ignoring ASCII case.
func wildMatchFold(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || lowerASCII(pattern[p]) == lowerASCII(name[n])):
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
