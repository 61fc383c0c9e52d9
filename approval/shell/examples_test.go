package shell

import (
	"strings"
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

// TestEveryProgramHasExamples: every program the approve side knows is
// named by an approve example, so that its knowledge is shown working.
func TestEveryProgramHasExamples(t *testing.T) {
	named := map[string]bool{}
	for _, table := range families {
		for _, e := range table {
			if e.approve {
				if p, _, _ := strings.Cut(e.cmd, " "); p != "" {
					named[basename(p)] = true
				}
			}
		}
	}
	for name, sp := range approveSpecs {
		if sp == runsSpec {
			continue // the runners family shows a few; they are not inspected
		}
		if !named[name] {
			t.Errorf("%s has approve-side knowledge but no example", name)
		}
	}
}

// FuzzApprove: the approve side never approves what the glob alone would
// not (a plain command the glob matches, guarded programs named), and
// never panics, whatever the pattern and command.
func FuzzApprove(f *testing.F) {
	for _, table := range families {
		for _, e := range table {
			if e.approve {
				f.Add(e.rule, e.cmd)
			}
		}
	}
	f.Fuzz(func(t *testing.T, pattern, cmd string) {
		p := Compile(pattern)
		if !p.Approves(cmd) {
			return
		}
		norm, ok := normalizeApprove(cmd)
		if !ok || !globMatchWord(p.String(), norm) {
			t.Fatalf("bash(%s) approves %q, which its glob does not match", pattern, cmd)
		}
	})
}
