//go:build linux

package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// limitsFixture is a fixture whose commands run under lim, with (when it
// works) or without bubblewrap.
func limitsFixture(t *testing.T, bwrap bool, lim sandbox.Limits) *fixture {
	t.Helper()
	f := newFixture(t)
	cfg := sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}, Limits: &lim}
	if bwrap {
		requireBwrap(t)
		cfg.Backend = "bwrap"
	}
	f.setSandbox(cfg)
	return f
}

// TestLimits is issue 24 #6 as attacks: one command must not take the
// machine down — a fork bomb, a runaway allocation (one process, or many
// small ones), a file that fills the disk, descriptors without end, a
// busy loop. Each is stopped by its limit, with and without bubblewrap,
// and says so; none was before (the command saw nproc=96365 and no memory
// limit). Runs as root too (the tests here do): RLIMIT_NPROC does not bind
// root, the supervisor's count does.
func TestLimits(t *testing.T) {
	for _, bwrap := range []bool{false, true} {
		name := "none"
		if bwrap {
			name = "bwrap"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("fork bomb", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{Processes: 40})
				// Each level starts two more and waits: 2^9 processes
				// unless something stops it (bounded, not to take down
				// the machine of a test that fails).
				res := f.run("bash", map[string]any{"command": "b() { [ $1 -gt 0 ] || { sleep 30; return; }; b $(($1-1)) & b $(($1-1)) & wait; }; b 8; echo survived", "timeout": 60})
				want(t, "fork bomb", res, false, "more than 40 processes", "sandbox.limits.processes")
				if strings.Contains(res.Content, "survived") {
					t.Errorf("the bomb ran to its end:\n%s", res.Content)
				}
			})
			t.Run("many sleepers", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{Processes: 20})
				res := f.run("bash", map[string]any{"command": "for i in $(seq 60); do sleep 30 & done; wait", "timeout": 60})
				want(t, "sleepers", res, false, "more than 20 processes")
				// Under the limit, the same command shape works.
				res = f.run("bash", map[string]any{"command": "for i in $(seq 5); do sleep 0.1 & done; wait; echo done"})
				want(t, "few sleepers", res, true, "done")
			})
			t.Run("one big allocation", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{Memory: 256 << 20})
				res := f.run("bash", map[string]any{"command": "python3 -c 'b = bytearray(1 << 30); print(\"allocated\")'"})
				if strings.Contains(res.Content, "allocated") || !strings.Contains(res.Content, "MemoryError") {
					t.Errorf("1 GiB in one process under a 256 MiB limit:\n%s", res.Content)
				}
				res = f.run("bash", map[string]any{"command": "python3 -c 'b = bytearray(64 << 20); print(\"allocated\")'"})
				want(t, "64 MiB under 256", res, true, "allocated")
			})
			t.Run("many small allocations", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{Memory: 200 << 20})
				// Six processes of 60 MiB each: every one under the
				// limit, together beyond it.
				cmd := "for i in 1 2 3 4 5 6; do python3 -c 'import time; b = b\"x\" * (60 << 20); time.sleep(30)' & done; wait; echo survived"
				res := f.run("bash", map[string]any{"command": cmd, "timeout": 60})
				want(t, "tree memory", res, false, "sandbox.limits.memory")
				if strings.Contains(res.Content, "survived") {
					t.Errorf("the tree's memory was not bounded:\n%s", res.Content)
				}
			})
			t.Run("file size", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{FileSize: 1 << 20})
				res := f.run("bash", map[string]any{"command": "head -c 40M /dev/zero > big; echo rc=$?; ls -l big"})
				if fi, err := os.Stat(filepath.Join(f.dir, "big")); err != nil || fi.Size() > 1<<20 {
					t.Errorf("file size limit: %v %v\n%s", fi.Size(), err, res.Content)
				}
				if !strings.Contains(res.Content, "rc=153") && !strings.Contains(res.Content, "File size limit exceeded") {
					t.Errorf("the writer was not stopped:\n%s", res.Content)
				}
			})
			t.Run("open files", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{OpenFiles: 64})
				res := f.run("bash", map[string]any{"command": "python3 -c 'fs = [open(\"/dev/null\") for _ in range(500)]; print(\"opened\")'; ulimit -n"})
				if strings.Contains(res.Content, "opened") || !strings.Contains(res.Content, "Too many open files") || !strings.Contains(res.Content, "64") {
					t.Errorf("open files limit:\n%s", res.Content)
				}
			})
			t.Run("cpu", func(t *testing.T) {
				f := limitsFixture(t, bwrap, sandbox.Limits{CPU: 1})
				res := f.run("bash", map[string]any{"command": "python3 -c 'while True: pass'; echo rc=$?", "timeout": 60})
				if !strings.Contains(res.Content, "rc=152") && !strings.Contains(res.Content, "CPU time limit exceeded") {
					t.Errorf("cpu limit:\n%s", res.Content)
				}
			})
		})
	}
}

// TestLimitsStatus: :Flemma sandbox:status shows the limits, and says what
// holds when flemma runs as root.
func TestLimitsStatus(t *testing.T) {
	sb, err := sandbox.New(sandbox.DefaultConfig(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	st := sb.Status()
	for _, w := range []string{"limits of each command: processes 1024, memory ", "file size 4 GiB, open files 8192, cpu 600 s per process"} {
		if !strings.Contains(st, w) {
			t.Errorf("status lacks %q:\n%s", w, st)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(st, "RLIMIT_NPROC does not bind") {
		t.Errorf("status as root does not say what holds:\n%s", st)
	}
	if d := sandbox.DefaultLimits(); d.Memory <= 0 || d.Processes != 1024 {
		t.Errorf("DefaultLimits = %+v", d)
	}
}

// TestWrapCommandLimits: the argv Lua tools get (ctx.sandbox.wrap_command)
// runs under the limits too, with the socket filter and without it.
func TestWrapCommandLimits(t *testing.T) {
	requireBwrap(t)
	for _, sockets := range []bool{false, true} {
		f := newFixture(t)
		lim := sandbox.Limits{OpenFiles: 77, FileSize: 1 << 20}
		f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, UnixSockets: sockets, Limits: &lim})
		argv, err := f.env.Sandbox.WrapCommand([]string{"/bin/sh", "-c", "ulimit -n; ulimit -f"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "77\n") || !strings.Contains(string(out), "2048") && !strings.Contains(string(out), "1024") {
			t.Errorf("unix_sockets=%v: limits under wrap_command: %v\n%s\nargv: %q", sockets, err, out, argv[:4])
		}
	}
}
