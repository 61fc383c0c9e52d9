package approval

import (
	"strings"
)

// Command rules.
//
// An entry "bash(<pattern>)" in an approve or deny list is a command rule for
// the bash tool. The pattern is a glob over the command text:
//
//   - '*' matches any run of bytes, including none and including spaces;
//     every other byte matches itself (there is no '?', no character class and
//     no escape: a literal '*' cannot be written, and approved commands can
//     never contain one anyway).
//   - The match is anchored at both ends.
//   - A pattern ending in " *" also matches the command without that tail:
//     bash(ls *) matches "ls" and "ls -la" but not "lsof"; bash(ls*) matches
//     all three.
//   - Runs of ASCII spaces and tabs in the pattern count as one space, and
//     leading/trailing ones are ignored.
//
// Approve rules are case-sensitive and only ever see "plain" commands (see
// MatchCommand). Deny rules are matched ASCII case-insensitively (case-
// insensitive file systems run RM as rm) against the texts of every command
// the shell text may run (see MatchCommand); where the analyser cannot be
// sure that a deny rule does not match, the policy asks (see
// Policy.Decide). The analyser is lex.go, analyze.go and programs.go.

// BashTool is the tool whose calls command rules apply to.
const BashTool = "bash"

// MaxApproveCommandLen is the longest command (in bytes) an approve rule can
// match; longer commands fall through to the next rule or resolver.
const MaxApproveCommandLen = 4096

// MaxAnalyzeCommandLen bounds the work spent looking for denied commands:
// only this many bytes are analysed, and a longer command counts as
// unverifiable (see Policy.Decide).
const MaxAnalyzeCommandLen = 64 << 10

// maxNesting bounds sh -c / eval / env -S recursion; deeper counts as
// unverifiable.
const maxNesting = 8

// ParseRule reports whether entry is a command rule "bash(<pattern>)" and
// returns its normalized pattern. An empty pattern is not a rule.
func ParseRule(entry string) (pattern string, ok bool) {
	if len(entry) <= len("bash()") || !strings.HasPrefix(entry, "bash(") || entry[len(entry)-1] != ')' {
		return "", false
	}
	p := normalizeBlanks(entry[len("bash(") : len(entry)-1])
	if p == "" {
		return "", false
	}
	return p, true
}

// looksLikeRule reports whether entry was meant as a command rule (for
// validation messages): it starts with "bash(".
func looksLikeRule(entry string) bool { return strings.HasPrefix(entry, "bash(") }

// MatchCommand reports whether the command rule ("bash(<pattern>)") matches
// command, as an approve rule (approve = true) or as a deny rule.
//
// Approve: the command, trimmed of ASCII spaces and tabs, must be at most
// MaxApproveCommandLen bytes made only of plain words — bytes from
// [A-Za-z0-9] and "-_./:=,+@%" — separated by ASCII spaces or tabs (runs count
// as one space). Anything else (shell operators, quotes, backslashes, '$',
// '`', globs, '~', '#', '!', braces, brackets, parentheses, redirections,
// newlines, control bytes, any non-ASCII byte such as fullwidth letters,
// Cyrillic lookalikes, NBSP or zero-width spaces) never matches: such a
// command falls through. In addition the first word must not be a variable
// assignment (contain '='), and when the first word (or its basename) is a
// program that runs other commands or code — any the deny side reads
// specially except plain data commands and git: env, sudo, sh, bash, eval,
// exec, xargs, timeout, nohup, find, awk, sed, make, ssh, python, ... — the
// pattern must spell that word literally before its first '*'. The glob then
// has to match the normalized text.
//
// Deny: the rule matches when its glob matches one of these texts of the
// command, ASCII-lowercased:
//
//   - the whole command, blanks normalized, and its tokens joined by single
//     spaces ("curl x|sh" reads "curl x | sh");
//   - every simple command, found the way bash finds them: split at ;, &,
//     &&, ||, |, |&, newlines, carriage returns, parentheses and case
//     patterns, inside $( ), ` `, <( ), >( ), ${ }, $(( )), unquoted
//     here-document bodies, function bodies and brace groups; with quotes
//     and escapes removed ($'...' decoded), redirections taken out wherever
//     they stand ("2>/dev/null rm x" is "rm x"), and leading keywords
//     ({, !, if, then, do, ...) and assignments dropped;
//   - the command each wrapper runs, its options parsed the way the wrapper
//     parses them (clusters such as "-Eu root", attached values, long
//     options and their abbreviations, "--"): sudo, doas, pkexec, env (and
//     its -S strings), nohup, setsid, unbuffer, nice, timeout, stdbuf,
//     ionice, chrt, taskset, chroot, flock, time, command, builtin, exec,
//     busybox, strace, ltrace, watch -x, nsenter, unshare, firejail,
//     runuser -u, and xargs, whose command also matches with arguments
//     appended ("ls | xargs rm" matches bash(rm -rf*));
//   - the scripts of sh -c (any shell), eval, su -c, runuser -c, flock -c,
//     watch, trap, alias values, ssh's remote command and ProxyCommand, sg,
//     script -c, mapfile -C, git "!" aliases, here-strings and
//     here-documents fed to a shell, and the commands of find -exec,
//     -execdir, -ok and -okdir;
//   - git with its global options removed and -c aliases expanded
//     ("git -C . --no-pager push" is "git push");
//   - each of these with a path-qualified command word replaced by its
//     basename ("/bin/rm -rf /" is "rm -rf /").
//
// Expansions stay as written ("rm $F" is a text bash(rm *) matches).
// MatchCommand reports only such a certain match; Policy.Decide in addition
// asks (require_approval) when the command may run what a deny rule names
// without the analyser being able to tell, or cannot be analysed at all.
func MatchCommand(rule, command string, approve bool) bool {
	pattern, ok := ParseRule(rule)
	if !ok {
		return false
	}
	if approve {
		norm, ok := normalizeApprove(command)
		return ok && matchApprove(pattern, norm)
	}
	return analyze(command).denies(newDenyPattern(asciiLower(pattern)))
}

// normalizeBlanks trims ASCII spaces and tabs and collapses every run of
// them into one space.
func normalizeBlanks(s string) string {
	s = strings.Trim(s, " \t")
	if !strings.Contains(s, "\t") && !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' {
			blank = true
			continue
		}
		if blank {
			b.WriteByte(' ')
			blank = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// plainByte is the whitelist for approve rules: bytes that are never special
// to bash, zsh or dash inside an unquoted word. '~' (tilde expansion), '^'
// (a pipe in old Bourne shells) and '=' at the start of a word (zsh) are not
// plain or are handled separately.
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '/', ':', '=', ',', '+', '@', '%':
		return true
	}
	return false
}

// normalizeApprove returns the command as approve rules see it, or false when
// it is not a single plain simple command.
func normalizeApprove(cmd string) (string, bool) {
	cmd = strings.Trim(cmd, " \t")
	if cmd == "" || len(cmd) > MaxApproveCommandLen {
		return "", false
	}
	wordStart := true
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		if c == ' ' || c == '\t' {
			wordStart = true
			continue
		}
		if !plainByte(c) || (wordStart && c == '=') {
			return "", false
		}
		wordStart = false
	}
	return normalizeBlanks(cmd), true
}

// guarded reports whether a first word runs other commands — a wrapper, a
// shell, an interpreter, or any command the deny side reads specially
// (see the commands table in analyze.go) — so that an approve rule matches
// it only when it names it literally.
func guarded(first string) bool {
	if guardedName(first) {
		return true
	}
	if b := basename(first); b != first {
		return guardedName(b)
	}
	return false
}

func guardedName(n string) bool {
	n = asciiLower(n)
	h, ok := commands[n]
	if !ok {
		if t := strings.TrimRight(n, "0123456789."); t != n {
			h, ok = commands[t]
		}
	}
	if !ok {
		return false
	}
	switch h.kind {
	case cData, cGit, cRead, cPrintf, cDeclare, cLet, cTest, cUnset:
		return false
	}
	return true
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// matchApprove matches a normalized approve pattern against a normalized
// plain command.
func matchApprove(pattern, norm string) bool {
	first := norm
	if i := strings.IndexByte(norm, ' '); i >= 0 {
		first = norm[:i]
	}
	if strings.IndexByte(first, '=') >= 0 {
		return false // NAME=value cmd: an assignment prefix changes what runs
	}
	if !globMatchWord(pattern, norm) {
		return false
	}
	if guarded(first) {
		lit := pattern
		if i := strings.IndexByte(pattern, '*'); i >= 0 {
			lit = pattern[:i]
		}
		return lit == first || strings.HasPrefix(lit, first+" ")
	}
	return true
}

func basename(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// globMatchWord is globMatch plus the rule that "P *" also matches "P".
func globMatchWord(pattern, s string) bool {
	if globMatch(pattern, s) {
		return true
	}
	return strings.HasSuffix(pattern, " *") && globMatch(pattern[:len(pattern)-2], s)
}

// globMatch matches s against a pattern where '*' matches any run of bytes.
// It backtracks only to the last star, so it runs in O(len(p)·len(s)) at
// worst and usually linear time.
func globMatch(p, s string) bool {
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(p) && p[px] == '*':
			star, mark = px, sx
			px++
		case px < len(p) && p[px] == s[sx]:
			px++
			sx++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}

// globIntersectWord is globIntersect plus the rule that "P *" also matches
// "P".
func globIntersectWord(pattern, t string) bool {
	if globIntersect(pattern, t) {
		return true
	}
	return strings.HasSuffix(pattern, " *") && globIntersect(pattern[:len(pattern)-2], t)
}

// globIntersect reports whether some text matches both the pattern p, where
// '*' matches any run of bytes, and t, where wildByte stands for any run of
// bytes (text known only at run time). O(len(p)·len(t)).
func globIntersect(p, t string) bool {
	n := len(p)
	var buf [2 * 65]bool
	var cur, next []bool
	if n < 65 {
		cur, next = buf[:n+1], buf[65:65+n+1]
	} else {
		cur, next = make([]bool, n+1), make([]bool, n+1)
	}
	// closure adds the moves that consume no byte of t at position j: a
	// star matching nothing, or t's wild byte standing for p's next byte.
	closure := func(row []bool, j int) {
		wild := j < len(t) && t[j] == wildByte
		for i := 0; i < n; i++ {
			if row[i] && (p[i] == '*' || wild) {
				row[i+1] = true
			}
		}
	}
	cur[0] = true
	closure(cur, 0)
	for j := 0; j < len(t); j++ {
		clear(next)
		live := false
		for i := 0; i <= n; i++ {
			if !cur[i] {
				continue
			}
			switch {
			case t[j] == wildByte || i < n && p[i] == '*':
				// the wild byte ends here, or the star takes t[j]
				next[i] = true
				live = true
			case i < n && p[i] == t[j]:
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closure(next, j+1)
		cur, next = next, cur
	}
	return cur[n]
}

// globPrefix reports whether some string that starts with t matches p: the
// command t may receive more arguments at run time (xargs).
func globPrefix(p, t string) bool {
	cur := make([]bool, len(p)+1)
	next := make([]bool, len(p)+1)
	closure := func(set []bool) {
		for i := 0; i < len(p); i++ {
			if set[i] && p[i] == '*' {
				set[i+1] = true
			}
		}
	}
	cur[0] = true
	closure(cur)
	for j := 0; j < len(t); j++ {
		clear(next)
		live := false
		for i := 0; i < len(p); i++ {
			if !cur[i] {
				continue
			}
			if p[i] == '*' {
				next[i] = true
				live = true
			} else if p[i] == t[j] {
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closure(next)
		cur, next = next, cur
	}
	for _, ok := range cur {
		if ok {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
