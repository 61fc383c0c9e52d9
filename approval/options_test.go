package approval

import (
	"testing"
)

// TestApproveRulesSideEffects (issue 24, class 11): an approve rule matches
// only when every word its '*' stands for is known to be free of writes
// and execution for that program; anything else asks. Each row goes
// through a policy with the rule, as the config resolver decides.
func TestApproveRulesSideEffects(t *testing.T) {
	tests := []struct {
		rule, command string
		approve       bool
	}{
		// The instances of the issue.
		{"bash(git log*)", "git log --output=/home/u/x", false},
		{"bash(git log*)", "git log --output=~/x", false},
		{"bash(rg *)", "rg --pre=sh x", false},
		{"bash(rg *)", "rg --pre sh x", false},
		// Still approved: what the rules were written for.
		{"bash(git log*)", "git log --oneline", true},
		{"bash(git log*)", "git log --oneline -10 --stat", true},
		{"bash(rg *)", "rg -n TODO src", true},
		// Equals forms, separate values, combined short flags.
		{"bash(git log*)", "git log --output /tmp/x", false},
		{"bash(sort *)", "sort -o out names", false},
		{"bash(sort *)", "sort -uo out names", false},
		{"bash(sort *)", "sort --output=out names", false},
		{"bash(sort *)", "sort --compress-program=sh names", false},
		{"bash(rg *)", "rg -uz x", false},
		{"bash(rg *)", "rg -z x", false},
		{"bash(rg *)", "rg --search-zip x", false},
		{"bash(rg *)", "rg --pre-glob=*.pdf x", false},
		{"bash(rg *)", "rg --hostname-bin=sh x", false},
		{"bash(sed *)", "sed -ni 1p f", false},
		{"bash(sed *)", "sed -i s/a/b/ f", false},
		{"bash(sed *)", "sed s/a/b/w/tmp/x f", false},
		{"bash(sed *)", "sed 1ecat f", false},
		// Abbreviations git and getopt accept.
		{"bash(git log*)", "git log --outp=/tmp/x", false},
		{"bash(git log*)", "git log --out /tmp/x", false},
		{"bash(sort *)", "sort --out=x names", false},
		// Options after operands (GNU programs permute), after "--".
		{"bash(git log*)", "git log main --output=x", false},
		{"bash(grep *)", "grep x f --include=*.go", false}, // '*' is not plain anyway
		{"bash(rg *)", "rg x --pre=sh", false},
		{"bash(git log*)", "git log -- --output=x", true}, // a path after "--"
		{"bash(rg *)", "rg -- --pre=sh", true},            // a pattern after "--"
		// Options inside quotes: not a plain command, never approved.
		{"bash(git log*)", "git log '--output=x'", false},
		{"bash(git log*)", `git log "--output=x"`, false},
		{"bash(rg *)", `rg --pre\=sh x`, false},
		// git's global options and pager/editor variables.
		{"bash(git *)", "git -c core.pager=sh log", false},
		{"bash(git *)", "git -C /tmp/evil status", false},
		{"bash(git *)", "git --git-dir=/tmp/x log", false},
		{"bash(git *)", "git --work-tree=/tmp status", false},
		{"bash(git *)", "git --exec-path=/tmp log", false},
		{"bash(git *)", "git --config-env=core.pager=X log", false},
		{"bash(git log*)", "GIT_PAGER=sh git log", false},
		{"bash(git log*)", "PAGER=sh git log", false},
		{"bash(env *)", "env GIT_PAGER=sh git log", false},
		{"bash(env *)", "env EDITOR=sh git commit", false},
		{"bash(git *)", "git log -p --ext-diff", false},
		{"bash(git *)", "git log -p --textconv", false},
		{"bash(git commit*)", "git commit -e -m x", false},
		// find, grep, ls, cat, head, tail, wc, echo, pwd.
		{"bash(find *)", "find . -name x -exec rm x", false},
		{"bash(find *)", "find . -execdir sh x", false},
		{"bash(find *)", "find . -ok rm x", false},
		{"bash(find *)", "find . -delete", false},
		{"bash(find *)", "find . -fprint /tmp/x", false},
		{"bash(find *)", "find . -fls /tmp/x", false},
		{"bash(find *)", "find . -type f -name x.go", true},
		{"bash(grep *)", "grep -rn TODO src", true},
		{"bash(ls *)", "ls -la", true},
		{"bash(cat *)", "cat -n f", true},
		{"bash(head *)", "head -5 f", true},
		{"bash(tail *)", "tail -n 20 f", true},
		{"bash(wc *)", "wc -l f", true},
		{"bash(echo *)", "echo --output=x", true}, // echo prints its words
		{"bash(pwd*)", "pwd", true},
		// awk, xargs.
		{"bash(awk *)", "awk -f prog.awk f", false},
		{"bash(awk *)", "awk NR==1 f", true},
		{"bash(*)", "xargs rm", false},
		// Programs whose purpose is running code: a rule naming them is
		// the user's grant; a '*' never stands for them.
		{"bash(make test*)", "make test", true},
		{"bash(go test*)", "go test ./...", true},
		{"bash(npm test*)", "npm test", true},
		{"bash(python3 *)", "python3 -c print", true},
		{"bash(*)", "python3 -c print", false},
		{"bash(*)", "go run main.go", false},
		// A program nobody knows: the '*' may stand for operands only.
		{"bash(mytool *)", "mytool build x", true},
		{"bash(mytool *)", "mytool --plugin=x build", false},
		{"bash(curl *)", "curl -o /home/u/.bashrc http://x", false},
		// What the rule spells is the user's choice.
		{"bash(sort -o *)", "sort -o out.txt names", true},
		{"bash(git log --format=*)", "git log --format=%H", true},
		{"bash(git log --output=*)", "git log --output=x", true},
	}
	for _, tt := range tests {
		pol := defaultPresets.Expand([]string{tt.rule}, nil)
		d, rule := pol.Decide(bashCall(tt.command))
		if got := d == Approve; got != tt.approve {
			t.Errorf("%s on %q: %s (%s), want approve %v", tt.rule, tt.command, d, rule, tt.approve)
		}
	}
}
