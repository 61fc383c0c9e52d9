package shell

import (
	"testing"
)

// TestFamilyExamples checks every family's example table: each approve
// example matches or falls through as it says, each deny example gets its
// verdict.
func TestFamilyExamples(t *testing.T) {
	n := 0
	for name, table := range families {
		if len(table) == 0 {
			t.Errorf("family %s has no examples", name)
		}
		for _, e := range table {
			n++
			switch {
			case e.approve:
				if got := Compile(e.rule).Approves(e.cmd); got != e.want {
					t.Errorf("%s: approve rule bash(%s) on %q = %v, want %v", name, e.rule, e.cmd, got, e.want)
				}
			case e.unverify:
				if !Analyze(e.cmd).Unverifiable() {
					t.Errorf("%s: %q is not unverifiable", name, e.cmd)
				}
			default:
				if got := verdictOf(e.cmd, e.rule); got != e.verdict {
					t.Errorf("%s: deny rule bash(%s) on %q = %v, want %v", name, e.rule, e.cmd, got, e.verdict)
				}
			}
		}
	}
	t.Logf("%d examples in %d families", n, len(families))
}
