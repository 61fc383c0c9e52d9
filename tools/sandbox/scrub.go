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

// DefaultEnvAllow are the only variables of the user's environment a
// command or a stdio MCP server gets (issue 24 #5: a deny list missed
// DOCKER_AUTH_CONFIG, CI_JOB_JWT, GIT_CONFIG_PARAMETERS, SLACK_HOOK_URL,
// AUTHORIZATION, …): what programs need to find themselves, their files
// and the user's language — the system's basics, the locale and the
// terminal, and where each common tool chain keeps its installation and
// caches — matched case-insensitively, `*` for any run. What else a command
// needs, the user adds by name and value (tools.bash.env, a server's env).
// Even under these names, a value shaped like a credential is dropped
// (LooksLikeCredential), env_deny still removes what it names, and the
// socket variables of SocketEnv never pass.
var DefaultEnvAllow = []string{
	// The system, the user, the locale, the terminal.
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "HOSTNAME", "LANG", "LANGUAGE", "LC_*", "TZ",
	"TERM", "COLORTERM", "TERMINFO", "TERMINFO_DIRS", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR",
	"TMPDIR", "TMP", "TEMP", "EDITOR", "VISUAL", "PAGER", "MANPATH", "INFOPATH", "CI",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
	// Building native code.
	"LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "PKG_CONFIG_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS",
	// Tool chains: where they live, their caches and module proxies.
	"GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOTMPDIR", "GOTOOLCHAIN", "GOFLAGS", "GOPROXY",
	"GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOINSECURE", "GOEXPERIMENT", "GOAMD64", "CGO_ENABLED",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"VIRTUAL_ENV", "PYTHONPATH", "PYENV_ROOT", "PYENV_VERSION", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PIPX_HOME", "UV_CACHE_DIR",
	"NVM_DIR", "NVM_BIN", "NODE_PATH", "NODE_ENV", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "VOLTA_HOME",
	"JAVA_HOME", "GRADLE_USER_HOME", "M2_HOME", "GEM_HOME", "GEM_PATH", "RBENV_ROOT",
	// Certificates and proxies (a proxy URL with a password is dropped).
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	// Who commits.
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
}

// AllowEnv returns the entries of environ whose names allow matches and
// deny does not, that name no socket (SocketEnv), and whose values do not
// look like a credential (LooksLikeCredential).
func AllowEnv(environ, allow, deny []string) []string {
	out := make([]string, 0, len(allow))
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !EnvDenied(name, allow) || EnvDenied(name, deny) || EnvDenied(name, SocketEnv) || LooksLikeCredential(val) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// credentialPrefixes start the tokens of common services (GitHub, GitLab,
// Slack, OpenAI, Anthropic, Stripe, npm, PyPI, Hugging Face, DigitalOcean,
// SendGrid, Google, AWS access keys): a word that starts with one of them
// and goes on for at least 16 token characters is a credential.
var credentialPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glptt-", "glrt-",
	"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-", "sk-", "sk_live_", "sk_test_", "rk_live_",
	"npm_", "pypi-", "hf_", "dop_v1_", "SG.", "AIza", "AKIA", "ASIA", "ya29.",
}

// LooksLikeCredential reports whether a value is shaped like a secret,
// whatever its variable is called: a URL carrying a password or a token as
// its user (scheme://user:pass@host, https://ghp_…@github.com), a webhook
// URL (Slack, Discord), an Authorization value (Bearer/Basic/token …), a
// JWT, a private key, a token with a well-known prefix (ghp_, glpat-,
// xoxb-, sk-, AKIA, …), a word of 24 or more base64 characters in mixed
// case with digits, or a whole value that is one long opaque word (32 or
// more base64 or hex characters with both letters and digits, not a path).
func LooksLikeCredential(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 8 {
		return false
	}
	if urlCredential(v) || strings.Contains(v, "-----BEGIN") ||
		strings.Contains(v, "hooks.slack.com/") || strings.Contains(v, "discord.com/api/webhooks/") || strings.Contains(v, "discordapp.com/api/webhooks/") {
		return true
	}
	lower := strings.ToLower(v)
	for _, scheme := range []string{"bearer ", "basic ", "token ", "bot "} {
		if strings.HasPrefix(lower, scheme) && opaque(strings.TrimSpace(v[len(scheme):]), 16) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return !tokenChar(r) && r != '.' }) {
		if jwt(w) {
			return true
		}
		for _, p := range credentialPrefixes {
			if strings.HasPrefix(w, p) && len(w)-len(p) >= 16 && opaque(w[len(p):], 16) {
				return true
			}
		}
	}
	// A long word of base64 in a longer value (an "auth" in JSON, a
	// header): mixed case and digits, which names, paths and hashes of
	// hex or lower-case base32 do not have.
	if strings.HasPrefix(v, "/") {
		return false // a path, or a list of them
	}
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return !tokenChar(r) || r == '/' }) {
		if len(w) >= 24 && mixedCase(w) && opaque(w, 24) {
			return true
		}
	}
	return opaque(v, 32)
}

func mixedCase(w string) bool {
	return strings.ContainsFunc(w, func(r rune) bool { return r >= 'a' && r <= 'z' }) &&
		strings.ContainsFunc(w, func(r rune) bool { return r >= 'A' && r <= 'Z' })
}

// urlCredential: a URL whose user part holds a password, or is itself a
// token (16 characters or more, or a known prefix).
func urlCredential(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		rest := v[i+3:]
		end := strings.IndexAny(rest, "/?# \t,;")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at > 0 {
			user, pass, hasPass := strings.Cut(rest[:at], ":")
			if hasPass && pass != "" || len(user) >= 16 {
				return true
			}
			for _, p := range credentialPrefixes {
				if strings.HasPrefix(user, p) {
					return true
				}
			}
		}
		v = rest
	}
}

// jwt: three dot-separated base64url parts, the first a JSON header.
func jwt(w string) bool {
	parts := strings.Split(w, ".")
	return len(parts) == 3 && strings.HasPrefix(parts[0], "eyJ") && len(parts[0]) >= 10 && len(parts[1]) >= 10 && len(parts[2]) >= 10
}

func tokenChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '+' || r == '/' || r == '='
}

// opaque: at least n token characters and nothing else, with letters and
// digits both (a word, a version or a path is not one).
func opaque(w string, n int) bool {
	if len(w) < n {
		return false
	}
	letters, digits := false, false
	for _, r := range w {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters = true
		case tokenChar(r):
		default:
			return false
		}
	}
	return letters && digits
}
