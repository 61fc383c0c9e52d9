package cycle

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// A call recorded by a process that is still this one counts as running
// there; recorded before this process started, by the same pid, it was
// another process's (a pid reused after a machine crash): interrupted.
func TestPidAliveSince(t *testing.T) {
	me := os.Getpid()
	if !pidAliveSince(me, time.Now()) {
		t.Errorf("this process is not alive since now")
	}
	if pidAliveSince(1<<30, time.Now()) {
		t.Errorf("a pid that does not exist is alive")
	}
	if runtime.GOOS != "linux" {
		t.Skip("process start times come from /proc")
	}
	start, ok := processStart(me)
	if !ok || time.Since(start) < 0 || time.Since(start) > time.Hour {
		t.Fatalf("processStart = %v, %v", start, ok)
	}
	if pidAliveSince(me, start.Add(-time.Minute)) {
		t.Errorf("a call recorded before this process started counts as this process's")
	}
}
