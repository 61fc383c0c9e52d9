package headless

import (
	"regexp"
	"strings"
)

// editorHint matches what only means something inside Neovim: a key
// (<C-c>, <C-]>, <CR>, <Esc>, <Leader>…) or an Ex command (:Flemma …,
// :checkhealth, :help).
var editorHint = regexp.MustCompile(`<(?:[CMASD]-[^<>\s]+|CR|Esc|Leader|Tab|BS)>|(?:^|[\s(\x60'"])(?::Flemma\b|:checkhealth\b|:help\b|:h\s)`)

var (
	hintParen  = regexp.MustCompile(`\s*\([^()]*\)`)
	hintClause = regexp.MustCompile(`[;,—–]\s*[^;,.—–]*`)
)

// Plain rewrites a message of the engine for a run without an editor: the
// parts that name a Neovim key or command (a parenthesis, a clause after
// ';' ',' or a dash, else the whole sentence) are left out, so that
// "retry 2/5 in 3 s; <C-c> cancels" reads "retry 2/5 in 3 s" and "…
// Press <C-]> to go on." loses its last sentence. The rule is the hint,
// not a list of messages: a message written later follows it too.
func Plain(msg string) string {
	if !editorHint.MatchString(msg) {
		return msg
	}
	msg = hintParen.ReplaceAllStringFunc(msg, dropIfHint)
	msg = hintClause.ReplaceAllStringFunc(msg, dropIfHint)
	var keep []string
	for _, s := range sentences(msg) {
		if !editorHint.MatchString(s) {
			keep = append(keep, s)
		}
	}
	out := strings.TrimSpace(strings.Join(keep, " "))
	if out == "" {
		return strings.TrimSpace(msg)
	}
	return out
}

func dropIfHint(s string) string {
	if editorHint.MatchString(s) {
		return ""
	}
	return s
}

// sentences splits s after ". ", "! ", "? " and ": " that end a clause
// before a capital letter.
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i+2 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' && s[i+2] >= 'A' && s[i+2] <= 'Z' {
			out = append(out, strings.TrimSpace(s[start:i+1]))
			start = i + 2
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
