package approval

import (
	"strings"

	"github.com/flemma-dev/flemma/approval/shell"
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
// Policy.Decide). The analyser is the package approval/shell.

// BashTool is the tool whose calls command rules apply to.
const BashTool = "bash"

// MaxApproveCommandLen is the longest command (in bytes) an approve rule can
// match; longer commands fall through to the next rule or resolver.
const MaxApproveCommandLen = shell.MaxApproveLen

// MaxAnalyzeCommandLen bounds the work spent looking for denied commands:
// only this many bytes are analysed, and a longer command counts as
// unverifiable (see Policy.Decide).
const MaxAnalyzeCommandLen = shell.MaxAnalyzeLen

// ParseRule reports whether entry is a command rule "bash(<pattern>)" and
// returns its normalized pattern. An empty pattern is not a rule.
func ParseRule(entry string) (pattern string, ok bool) {
	if len(entry) <= len("bash()") || !strings.HasPrefix(entry, "bash(") || entry[len(entry)-1] != ')' {
		return "", false
	}
	p := shell.Normalize(entry[len("bash(") : len(entry)-1])
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
// has to match the normalized text, and every word the pattern's '*' stands
// for must be known to be free of writes and execution for the program it
// belongs to (per-program option knowledge: git log --output, rg --pre,
// sort -o, find -exec, sed -i never pass unless the pattern spells them;
// an option of a program nobody described never passes; a program that
// runs code by design — make, go, npm, ... — passes whole when the pattern
// names it). See approval/shell/approve.go for the rules.
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
	p := shell.Compile(pattern)
	if approve {
		return p.Approves(command)
	}
	return shell.Analyze(command).Runs(p)
}
