package shell

import "strings"

// GrantPatterns are the command-rule patterns an "always allow this
// command" of cmd grants, or false when cmd is not a single plain simple
// command (a pipeline, a redirection, an expansion: approve rules never
// match those, so there is nothing to grant).
//
// The analyser names what is granted. For a program whose options and
// operands it knows (ls, rg, sed, git status, ...) the grant is the
// shortest prefix of cmd ending in " *" that approves cmd — the '*' then
// stands only for words the approve side knows to be free of writes and
// execution ("git status" grants "git status *": "git status --short" is
// approved later, "git status --porcelain > f" is not) — together with the
// bare prefix. For any other program or subcommand (rm, curl, git push, a
// wrapper such as timeout, a program that runs code: make, python, sh,
// ...) the '*' would stand for operands nothing checks (rm -rf's paths,
// push's remote) or for code, so the grant is exactly cmd (blanks
// normalized).
func GrantPatterns(cmd string) ([]string, bool) {
	norm, ok := normalizeApprove(cmd)
	if !ok || norm == "" {
		return nil, false
	}
	words := strings.Split(norm, " ")
	if min, ok := grantMin(words); ok {
		for k := min; k <= len(words); k++ {
			prefix := strings.Join(words[:k], " ")
			star := prefix + " *"
			if matchApprove(star, norm) || (k == len(words) && matchApprove(prefix, norm)) {
				return []string{star, prefix}, true
			}
		}
	}
	if matchApprove(norm, norm) {
		return []string{norm}, true
	}
	return nil, false
}

// grantMin is the fewest words of a grant's prefix for a program whose
// every word after it the approve side checks: 1 (the program), 2 for a
// program with subcommands (the subcommand, which must be a known one
// without subcommands of its own). false: nothing is checked, only the
// exact command may be granted.
func grantMin(words []string) (int, bool) {
	sp := approveSpecFor(words[0])
	if sp == nil || sp.runs || sp.wrapper || guarded(words[0]) {
		return 0, false
	}
	if sp.subs == nil {
		return 1, true
	}
	if len(words) < 2 {
		return 0, false // "git *" would be any subcommand
	}
	next, known := sp.subs[words[1]]
	if !known || next.runs || next.wrapper || next.subs != nil {
		return 0, false
	}
	return 2, true
}
