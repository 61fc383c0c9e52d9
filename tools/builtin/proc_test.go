//go:build linux

package builtin

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/internal/procsup"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// The tests of this file start sleeps whose argument is a marker unique to
// the test, in every way a command can detach from its shell, and look for
// them in /proc.

// markers returns n distinct numbers unlikely to be any other process's
// sleep argument.
func markers(n int) []string {
	base := 700000000 + rand.Intn(99000000)
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(base + i)
	}
	return out
}

// detachingCommand starts one sleep per marker: setsid, a subshell's
// background job (double fork), nohup + disown, setsid inside a detached
// subshell, and one that ignores SIGTERM; then the shell itself sleeps on
// the last marker (ignoring SIGTERM too, when stubborn).
func detachingCommand(m []string, stubborn bool) string {
	trap := ""
	if stubborn {
		trap = "trap '' TERM; "
	}
	return fmt.Sprintf("setsid sleep %s & (sleep %s &); nohup sleep %s >/dev/null 2>&1 & disown; (setsid sh -c 'sleep %s &' &); "+
		"sh -c \"trap '' TERM; exec sleep %s\" & %ssleep %s; echo unreachable",
		m[0], m[1], m[2], m[3], m[4], trap, m[5])
}

const detachingMarkers = 6

// alive returns the markers whose sleep is running (zombies are dead: they
// only wait to be reaped).
func alive(ms []string) []string {
	want := map[string]string{}
	for _, m := range ms {
		want["sleep\x00"+m+"\x00"] = m
	}
	ents, _ := os.ReadDir("/proc")
	var out []string
	buf := make([]byte, 512)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		m, ok := want[string(b)]
		if !ok {
			continue
		}
		if p, ok := procsup.Stat(pid, buf); ok && p.Running() {
			out = append(out, m+"(pid "+e.Name()+")")
		}
	}
	return out
}

// waitState polls cond until it holds or d passes, and reports whether it
// held.
func waitState(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// backends runs fn for the none backend and, when it works here, bwrap.
func backends(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Run("none", func(t *testing.T) {
		fn(t, newFixture(t))
	})
	t.Run("bwrap", func(t *testing.T) {
		fn(t, bwrapFixture(t, true))
	})
}

func shortGrace(t *testing.T) {
	saved := killGrace
	killGrace = 300 * time.Millisecond
	t.Cleanup(func() { killGrace = saved })
}

// runDetaching runs the detaching command through the executor on a
// goroutine and waits until all its sleeps run.
func runDetaching(t *testing.T, f *fixture, ctx context.Context, input map[string]any, ms []string) <-chan tools.Result {
	t.Helper()
	done := make(chan tools.Result, 1)
	go func() { done <- f.runCtx(ctx, "bash", input) }()
	if !waitState(10*time.Second, func() bool { return len(alive(ms)) == len(ms) }) {
		t.Fatalf("the command's sleeps did not all start: running %v of %v", alive(ms), ms)
	}
	return done
}

// TestBashTimeoutKillsDetached: when a command times out, every process it
// started is gone by the time the call returns, however it detached — even
// those that ignore SIGTERM.
func TestBashTimeoutKillsDetached(t *testing.T) {
	shortGrace(t)
	backends(t, func(t *testing.T, f *fixture) {
		ms := markers(detachingMarkers)
		res := <-runDetaching(t, f, context.Background(), map[string]any{"command": detachingCommand(ms, true), "timeout": 3}, ms)
		want(t, "timeout", res, false, "Command timed out after 3 seconds.")
		if a := alive(ms); len(a) > 0 {
			t.Errorf("still running after the call returned: %v", a)
		}
	})
}

// TestBashCancelKillsDetached: the same for a cancelled call (<C-c>).
func TestBashCancelKillsDetached(t *testing.T) {
	shortGrace(t)
	backends(t, func(t *testing.T, f *fixture) {
		ms := markers(detachingMarkers)
		ctx, cancel := context.WithCancel(context.Background())
		done := runDetaching(t, f, ctx, map[string]any{"command": detachingCommand(ms, true)}, ms)
		cancel()
		want(t, "cancel", <-done, false, "User aborted tool execution.")
		if a := alive(ms); len(a) > 0 {
			t.Errorf("still running after the call returned: %v", a)
		}
	})
}

// TestBashExitKillsDetached: a command whose shell exits leaves nothing
// running either (as under bubblewrap, whose PID namespace ends with it).
func TestBashExitKillsDetached(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		ms := markers(detachingMarkers)
		// The shell waits until every sleep runs, then exits.
		cmd := strings.TrimSuffix(detachingCommand(ms, false), "sleep "+ms[5]+"; echo unreachable") + "sleep " + ms[5] + " & " +
			"for m in " + strings.Join(ms, " ") + "; do until pgrep -f \"^sleep $m\\$\" >/dev/null; do sleep 0.01; done; done; echo all-running"
		start := time.Now()
		res := f.run("bash", map[string]any{"command": cmd})
		want(t, "exit", res, true, "all-running")
		if a := alive(ms); len(a) > 0 {
			t.Errorf("still running after the call returned: %v", a)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s", d)
		}
	})
}

// TestBashStatusThroughSupervisor: exit codes and signals of the shell reach
// the result unchanged.
func TestBashStatusThroughSupervisor(t *testing.T) {
	f := newFixture(t)
	want(t, "code", f.run("bash", map[string]any{"command": "exit 42"}), false, "Command exited with code 42")
	want(t, "signal", f.run("bash", map[string]any{"command": "kill -KILL $$"}), false, "Command was terminated by a signal (signal: killed)")
	want(t, "argv intact", f.run("bash", map[string]any{"command": `printf '%s|' "a  b" '' "$0"; echo`}), true, "a  b||bash|")
	want(t, "not in env", f.run("bash", map[string]any{"command": "env | grep -c FLEMMA_SUPERVISE || true"}), true, "0")
	// The command's environment reaches the command, not the supervisor's
	// own environment.
	f.env.ExtraEnv = map[string]string{"FLEMMA_PROBE": "probe-value"}
	want(t, "env", f.run("bash", map[string]any{"command": "echo $FLEMMA_PROBE; tr '\\0' '\\n' </proc/$PPID/environ | grep -c FLEMMA_PROBE || true"}), true, "probe-value\n0")
	f.env.ExtraEnv = nil
	// The supervisor's command line does not hold the command (pkill -f
	// must not find it).
	res := f.run("bash", map[string]any{"command": "cat /proc/$PPID/cmdline | tr '\\0' ' '; echo; echo marker-xyz >/dev/null"})
	want(t, "supervisor argv", res, true, procsup.Arg0)
	if strings.Contains(res.Content, "marker-xyz") {
		t.Errorf("the supervisor's argv holds the command: %q", res.Content)
	}
	// The command cannot end its supervisor (and so free its tree) with a
	// catchable signal: the tree dies instead.
	ms := markers(1)
	res = f.run("bash", map[string]any{"command": "setsid sleep " + ms[0] + " & sleep 0.2; kill -TERM $PPID; sleep 5; echo survived"})
	if strings.Contains(res.Content, "survived") {
		t.Errorf("the command survived killing its supervisor: %q", res.Content)
	}
	if a := alive(ms); len(a) > 0 {
		t.Errorf("still running after the supervisor was signalled: %v", a)
	}
}

// TestBashUnsupervisedFallback: without the supervisor (other systems) the
// command still runs, times out and is cancelled as a process group.
func TestBashUnsupervisedFallback(t *testing.T) {
	testhook.NoSupervisor = true
	defer func() { testhook.NoSupervisor = false }()
	shortGrace(t)
	f := newFixture(t)
	want(t, "echo", f.run("bash", map[string]any{"command": "echo hi; echo $PPID > ppid"}), true, "hi")
	if ppid, _ := strconv.Atoi(strings.TrimSpace(f.read("ppid"))); ppid != os.Getpid() {
		t.Errorf("unsupervised command's parent = %d, want the host %d", ppid, os.Getpid())
	}
	want(t, "code", f.run("bash", map[string]any{"command": "exit 3"}), false, "Command exited with code 3")
	want(t, "timeout", f.run("bash", map[string]any{"command": "echo a; sleep 10", "timeout": 0.3}), false, "a\n\nCommand timed out after 0.3 seconds.")
	ms := markers(2)
	ctx, cancel := context.WithCancel(context.Background())
	done := runDetaching(t, f, ctx, map[string]any{"command": "sleep " + ms[0] + " & sleep " + ms[1]}, ms)
	cancel()
	want(t, "cancel", <-done, false, "User aborted tool execution.")
	if a := alive(ms); len(a) > 0 {
		t.Errorf("group members still running: %v", a)
	}
}

// TestKillAll: KillAll kills the running commands' trees and refuses new
// commands.
func TestKillAll(t *testing.T) {
	defer testhook.ResetShutdown()
	f := newFixture(t)
	ms := markers(detachingMarkers)
	done := runDetaching(t, f, context.Background(), map[string]any{"command": detachingCommand(ms, true)}, ms)
	start := time.Now()
	sandbox.KillAll()
	if a := alive(ms); len(a) > 0 {
		t.Errorf("still running after KillAll returned: %v", a)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("KillAll took %s", d)
	}
	want(t, "killed", <-done, false, "Command was terminated by a signal (signal: killed)")
	want(t, "refused", f.run("bash", map[string]any{"command": "echo"}), false, "Failed to start command: the host is shutting down")
}

// TestHostDeathHelper is not a test: TestHostDeathKillsTree runs the test
// binary with FLEMMA_TEST_HOST_DEATH set to act as a host that runs a
// command, then kills it.
func TestHostDeathHelper(t *testing.T) {
	backend := os.Getenv("FLEMMA_TEST_HOST_DEATH")
	if backend == "" {
		t.Skip("helper process only")
	}
	dir := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Enabled: true, Backend: backend, Writable: []string{sandbox.URNCwd}, Network: true}, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	runBash(context.Background(), tools.Call{ID: "x", Cwd: dir, Env: env}, BashInput{Command: os.Getenv("FLEMMA_TEST_COMMAND"), Timeout: ptr(120.0)})
	t.Fatal("the command ended before the host was killed")
}

// TestHostDeathKillsTree: when the host is killed (SIGKILL: it cannot clean
// up), every process its command started dies with it.
func TestHostDeathKillsTree(t *testing.T) {
	backends(t, func(t *testing.T, f *fixture) {
		backend := f.env.Sandbox.Backend()
		ms := markers(detachingMarkers)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		log, _ := os.Create(filepath.Join(t.TempDir(), "helper.log"))
		defer log.Close()
		cmd := exec.Command(exe, "-test.run=^TestHostDeathHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "FLEMMA_TEST_HOST_DEATH="+backend, "FLEMMA_TEST_COMMAND="+detachingCommand(ms, true))
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		defer cmd.Process.Kill()
		if !waitState(10*time.Second, func() bool { return len(alive(ms)) == len(ms) }) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("the helper's command did not start all its sleeps (running %v); helper output:\n%s", alive(ms), b)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if !waitState(10*time.Second, func() bool { return len(alive(ms)) == 0 }) {
			t.Errorf("10 s after the host was killed, still running: %v", alive(ms))
		}
	})
}

// TestBwrapKillTree: bubblewrap on its own (without the supervisor) takes
// its whole tree with it when it is killed, setsid'd and double-forked
// processes included — the kernel ends its PID namespace.
func TestBwrapKillTree(t *testing.T) {
	f := bwrapFixture(t, true)
	ms := markers(detachingMarkers)
	argv, err := f.env.Sandbox.WrapCommand([]string{"bash", "-c", detachingCommand(ms, true)})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitState(10*time.Second, func() bool { return len(alive(ms)) == len(ms) }) {
		t.Fatalf("the sleeps did not all start: %v", alive(ms))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !waitState(10*time.Second, func() bool { return len(alive(ms)) == 0 }) {
		t.Errorf("still running after bwrap was killed: %v", alive(ms))
	}
}
