//go:build unix

package sandbox

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds the process's CPU time (user + system) per operation to
// the results: on a loaded machine the wall time of a benchmark mostly
// measures the wait for a core.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
