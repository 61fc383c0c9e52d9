package shell

import (
	"strings"
)

// make runs whatever its makefile says: its targets and variables may name
// any command (a suspect), and make functions such as $(shell ...) or
// --eval build commands the analyser cannot read.
func (a *analysis) runMake(x cmdCall) step {
	for _, w := range x.args {
		if !w.lit || strings.Contains(w.val, "$") || strings.HasPrefix(w.val, "--eval") || w.val == "-E" {
			a.unverify() // make functions such as $(shell ...) build commands
		}
	}
	a.suspectAll(x.args)
	a.suspectAll(x.c.stdin)
	return step{k: kUnknown}
}
