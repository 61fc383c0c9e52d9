package tools

import (
	"math"
	"regexp"
	"strings"
)

// RedactShapes replaces, in text, what looks like a credential by its
// shape — whoever it belongs to and whatever variable or file holds it —
// by [redacted]:
//
//   - the password (or a token used as the user name) in a URL's user
//     information: https://user:pass@host, https://ghp_…@github.com;
//   - JSON Web Tokens (eyJ….eyJ….sig);
//   - tokens with a known prefix: GitHub (ghp_, gho_, ghu_, ghs_, ghr_,
//     github_pat_), GitLab (glpat-), Slack (xoxb-, xoxp-, …), OpenAI and
//     Anthropic style (sk-…), npm (npm_), AWS access key ids (AKIA…),
//     Google API keys (AIza…), Stripe (sk_live_, rk_live_);
//   - PEM private key blocks;
//   - the credential after "Bearer", "Basic" or "token" (an HTTP
//     Authorization header, git's http.extraheader);
//   - in key = value, key: value, "key": "value" and <key>value</key>
//     lines: the value of a key whose name ends in a word that says it is
//     secret (password, passwd, passphrase, pwd, secret, token, api key,
//     access key, private key, credential(s), auth), and any long base64 or
//     hex value (24 characters or more, letters and digits mixed) whatever
//     its key.
//
// It is the redaction of attached file text (issue 24, class 4); the list
// illustrates the rule — a credential is known by its form, not by where it
// was found — which holds for files nobody listed.
func RedactShapes(text string) string {
	if text == "" {
		return text
	}
	lower := ""
	for _, r := range shapeRules {
		if r.hint != "" {
			if lower == "" {
				lower = strings.ToLower(text)
			}
			if !strings.Contains(lower, r.hint) {
				continue
			}
		}
		text = r.re.ReplaceAllStringFunc(text, r.repl)
		lower = ""
	}
	return text
}

type shapeRule struct {
	hint string // a lower-case substring every match holds: a cheap skip
	re   *regexp.Regexp
	repl func(string) string
}

func whole(string) string { return redactedPlaceholder }

// credentialValue reports whether v looks like a credential rather than a
// word: long enough, and mixing letters and digits (or long digits).
func credentialValue(v string, min int) bool {
	if len(v) < min {
		return false
	}
	var letters, digits int
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		}
	}
	return letters > 0 && digits > 0 || digits >= min
}

// randomValue reports whether v, the value of a key whose name says
// nothing, looks random enough to be a credential and not a path, a name or
// an identifier: 32 or more hex digits, or letters and digits mixed with
// the entropy of random base64 (at least 4.2 bits per character; words,
// paths and UUIDs stay below 4).
func randomValue(v string) bool {
	hex := len(v) >= 32
	var counts [256]int
	for i := 0; i < len(v); i++ {
		c := v[i]
		counts[c]++
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			hex = false
		}
	}
	if hex {
		return true
	}
	if !credentialValue(v, 24) {
		return false
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h >= 4.2
}

// secretKey is a key name that ends in a word saying its value is secret.
const secretKey = `[a-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_.-]?key|apikey|access[_.-]?key|private[_.-]?key|credentials?|auth)`

var (
	urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^\s/:@'"<>]+)(:[^\s/@'"<>]*)?@`)
	authScheme  = regexp.MustCompile(`(?i)(\b(?:bearer|basic|token)\s+)([A-Za-z0-9+/=_.~-]{16,})`)
	// The value of a secret key: at least 6 characters, not a reference
	// to somewhere else (${VAR}, <placeholder>, %(x)s).
	secretValue = regexp.MustCompile(`(?i)(\b` + secretKey + `["']?\s*[:=]\s*["']?)([^\s"'<>,;$%{][^\s"'<>,;]{5,})`)
	secretXML   = regexp.MustCompile(`(?i)(<` + secretKey + `>)([^<\s][^<]{5,})(</)`)
	// Any key = value whose value is a long credential-like string.
	longValue = regexp.MustCompile(`(?i)([a-z0-9_.-]+["']?\s*[:=]\s*["']?)([A-Za-z0-9+=_-][A-Za-z0-9+/=_-]{23,})`)
)

var shapeRules = []shapeRule{
	{"-----begin", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), whole},
	{"://", urlUserinfo, func(m string) string {
		sm := urlUserinfo.FindStringSubmatch(m)
		user, pass := sm[2], sm[3]
		switch {
		case len(pass) > 1:
			return sm[1] + user + ":" + redactedPlaceholder + "@"
		case credentialValue(user, 16) || knownToken.MatchString(user):
			return sm[1] + redactedPlaceholder + "@"
		}
		return m
	}},
	{"eyj", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), whole},
	{"", knownToken, whole},
	{"", authScheme, func(m string) string {
		sm := authScheme.FindStringSubmatch(m)
		if !credentialValue(sm[2], 16) {
			return m
		}
		return sm[1] + redactedPlaceholder
	}},
	{"", secretXML, func(m string) string {
		sm := secretXML.FindStringSubmatch(m)
		return sm[1] + redactedPlaceholder + sm[3]
	}},
	{"", secretValue, func(m string) string {
		sm := secretValue.FindStringSubmatch(m)
		if sm[2] == redactedPlaceholder || strings.HasPrefix(sm[2], "[redacted]") {
			return m
		}
		return sm[1] + redactedPlaceholder
	}},
	{"", longValue, func(m string) string {
		sm := longValue.FindStringSubmatch(m)
		if !randomValue(sm[2]) {
			return m
		}
		return sm[1] + redactedPlaceholder
	}},
}

// knownToken matches tokens whose prefix says what they are.
var knownToken = regexp.MustCompile(`\b(?:` +
	`gh[pousr]_[A-Za-z0-9]{30,}` +
	`|github_pat_[A-Za-z0-9_]{30,}` +
	`|glpat-[A-Za-z0-9_-]{20,}` +
	`|xox[abposr]-[A-Za-z0-9-]{10,}` +
	`|sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}` +
	`|(?:sk|rk)_live_[A-Za-z0-9]{16,}` +
	`|npm_[A-Za-z0-9]{36}` +
	`|A[SK]IA[0-9A-Z]{16}` +
	`|AIza[0-9A-Za-z_-]{35}` +
	`)`)
