package sandbox

import "strings"

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

// ScrubEnv returns environ ("NAME=value" entries) without the variables
// whose names match a deny glob (case-insensitive).
func ScrubEnv(environ []string, deny []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !EnvDenied(name, deny) {
			out = append(out, kv)
		}
	}
	return out
}

func EnvDenied(name string, deny []string) bool {
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
