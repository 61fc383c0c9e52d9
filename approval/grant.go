package approval

import "github.com/flemma-dev/flemma/approval/shell"

// GrantRules are the command rules ("bash(git status *)") an "always allow
// this command" of a bash call's command grants, as the analyser names them
// (shell.GrantPatterns); false when no rule can cover the command (not a
// single plain command). Each approves command (MatchCommand).
func GrantRules(command string) ([]string, bool) {
	pats, ok := shell.GrantPatterns(command)
	if !ok {
		return nil, false
	}
	rules := make([]string, len(pats))
	for i, p := range pats {
		rules[i] = "bash(" + p + ")"
	}
	return rules, true
}
