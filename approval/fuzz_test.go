package approval

import (
	"strings"
	"testing"

	"github.com/google/shlex"
)

// FuzzMatchCommand checks the approve side's invariant — whatever bash(*)
// approves is a plain word list that the shell splits exactly as strings.Fields
// does — and that the deny side terminates on any input.
func FuzzMatchCommand(f *testing.F) {
	for _, s := range []string{
		"git status", "ls -la src", "echo $(rm -rf /)", "a;b", "cat <<EOF\nx\nEOF", "f() { rm; }",
		"sh -c 'eval \"rm x\"'", "ｇｉｔ status", "g''it", "echo\u00a0hi", "x=`y`", "((1<<2))\nrm",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if MatchCommand("bash(*)", cmd, true) {
			words, err := shlex.Split(cmd)
			if err != nil || strings.Join(words, " ") != strings.Join(strings.Fields(cmd), " ") {
				t.Fatalf("approved %q, which the shell would not split as plain words (%q, %v)", cmd, words, err)
			}
			for i := 0; i < len(cmd); i++ {
				if c := cmd[i]; c != ' ' && c != '\t' && !plainByte(c) {
					t.Fatalf("approved %q containing byte %q", cmd, c)
				}
			}
			// Anything approvable is also seen by a deny rule.
			if !MatchCommand("bash(*)", cmd, false) {
				t.Fatalf("deny bash(*) does not see approved %q", cmd)
			}
		}
		_ = MatchCommand("bash(rm *)", cmd, false)
		// A denied command stays denied when chained after another one.
		if MatchCommand("bash(rm *)", cmd, false) && !strings.ContainsAny(cmd, "'\"\\`$#<(") {
			if !MatchCommand("bash(rm *)", "true; "+cmd, false) {
				t.Fatalf("%q denied alone but not after 'true; '", cmd)
			}
		}
	})
}
