//go:build !flemmabench

package cycle

import (
	"strings"
	"testing"
)

// The host users run serves no method made for benchmarks (issue 25: the
// production flemma.bench_run is gone; -tags flemmabench builds it in).
func TestNoBenchMethods(t *testing.T) {
	env := newEnv(t, noSandbox())
	for _, m := range env.h.Methods() {
		if strings.Contains(m.Name, "bench") {
			t.Errorf("the host serves %s", m.Name)
		}
	}
}
