package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/tools/internal/procsup"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// A command's process tree is the command and every process it starts,
// however that process detaches: setsid, a double fork, nohup, disown. None
// of them may outlive the call that started the command: when the command
// ends, times out or is cancelled, and when the host itself dies, the whole
// tree is killed.
//
// How (package procsup, and proc_linux.go for the host's side): on Linux
// every command runs under a supervisor, a copy of the host binary started
// as /proc/self/exe in a mode selected by its argv[0] and environment
// (procsup's init function runs it and never returns; procsup imports only
// the standard library so that this happens before the heavier packages of
// the binary initialise). The supervisor makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every process of the tree that loses its
// parent is re-parented to it and no process can leave its subtree; it reaps
// them all, and it kills its whole subtree (found through /proc) when the
// command's shell exits, when the host asks (SIGTERM, then SIGKILL after a
// grace period), and when its control socket with the host reaches EOF —
// which happens when the host dies for any reason, SIGKILL included. It
// exits only when no process of the tree is left.
//
// Why not the alternatives: a PID namespace of our own (CLONE_NEWPID, with a
// user namespace when unprivileged) has the kernel kill the tree when its
// init dies, but unprivileged user namespaces are disabled or restricted on
// many systems (Ubuntu 24.04's AppArmor policy, Debian's
// unprivileged_userns_clone, containers), and it changes what the command
// sees (files of other users owned by nobody, set-user-ID programs inert,
// $$ = 1) where the "none" backend promises an unsandboxed command.
// Making the host itself the subreaper cannot tell whose orphan is whose
// when commands run concurrently, would have it reap processes behind
// os/exec's back, and does nothing when the host dies. cgroup v2's
// cgroup.kill needs a delegated, writable cgroup, which most sessions do not
// have, and it does nothing when the host dies either. Pdeathsig on the
// direct child kills only the shell, not what it detached. Bubblewrap
// (--unshare-pid, --die-with-parent) has the kernel's guarantee; under the
// supervisor it is the supervisor's child, so both layers apply.
//
// Elsewhere (other Unix systems, or when the supervisor cannot be started)
// the command leads its own process group, which is signalled as a whole:
// what leaves the group (setsid) survives, and so does everything when the
// host is killed.

// exitStatus is how a command's shell ended.
type exitStatus struct {
	code   int    // exit code; -1 when killed by a signal
	signal string // "signal: killed" when killed by a signal
}

func statusOf(ws syscall.WaitStatus) exitStatus {
	if ws.Signaled() {
		return exitStatus{code: -1, signal: "signal: " + ws.Signal().String()}
	}
	return exitStatus{code: ws.ExitStatus()}
}

// Tree is one running command and everything it started.
type Tree struct {
	cmd  *exec.Cmd // the supervisor, or (unsupervised) the command itself
	plat treePlatform
	done chan struct{} // closed when the tree is gone and waited for

	// Set before done is closed.
	hit    int // the limit the supervisor killed the tree for (procsup.HitProcesses, HitMemory)
	status exitStatus
	err    error // the command's end could not be known
}

// Done is closed when the tree is gone and waited for.
func (t *Tree) Done() <-chan struct{} { return t.done }

// Exit is how the command ended, once Done is closed: its exit code (-1 when
// a signal killed it, then signal names it, "signal: killed"), or err when
// its end could not be known.
func (t *Tree) Exit() (code int, signal string, err error) {
	return t.status.code, t.status.signal, t.err
}

// LimitHit says, once Done is closed, which limit of the tree made the
// supervisor kill it ("processes", "memory"), or "".
func (t *Tree) LimitHit() string {
	switch t.hit {
	case procsup.HitProcesses:
		return "processes"
	case procsup.HitMemory:
		return "memory"
	}
	return ""
}

var (
	liveMu       sync.Mutex
	liveTrees    = map[*Tree]struct{}{}
	shuttingDown bool
)

func init() {
	testhook.ResetShutdown = func() {
		liveMu.Lock()
		shuttingDown = false
		liveMu.Unlock()
	}
}

// ErrShuttingDown refuses commands once KillAll has been called.
var ErrShuttingDown = errors.New("the host is shutting down")

// killWait is how long kill waits for a tree to be gone before it falls back
// to signalling what it can reach directly.
var killWait = 3 * time.Second

// StartTreeLimited starts argv (argv[0] is looked up in PATH) in dir with
// env, stdin /dev/null and stdout and stderr on out, and files as its
// descriptors 3, 4, … in this order (the caller closes them once it
// returned), under limits: the command runs with them as rlimits, and
// (supervised) its tree is killed when its processes or their resident
// memory go beyond them (LimitHit says which).
func StartTreeLimited(argv []string, dir string, env []string, out *os.File, files []*os.File, lim Limits) (*Tree, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = []string{} // never the host's environment
	}
	closeInheritedOnExec()
	liveMu.Lock()
	defer liveMu.Unlock()
	if shuttingDown {
		return nil, ErrShuttingDown
	}
	t := &Tree{done: make(chan struct{})}
	if err := t.start(path, argv, dir, env, out, files, lim); err != nil {
		return nil, err
	}
	liveTrees[t] = struct{}{}
	go func() {
		t.wait()
		liveMu.Lock()
		delete(liveTrees, t)
		liveMu.Unlock()
		close(t.done)
	}()
	return t, nil
}

// Stop ends the tree: SIGTERM to every process, SIGKILL to what is left
// after grace. It returns when the tree is gone (or kill gave up).
func (t *Tree) Stop(grace time.Duration) {
	t.terminate()
	select {
	case <-t.done:
		return
	case <-time.After(grace):
	}
	t.kill()
}

// kill SIGKILLs every process of the tree and returns when the tree is gone,
// or after killWait and a last direct attempt.
func (t *Tree) kill() {
	t.killNow()
	select {
	case <-t.done:
		return
	case <-time.After(killWait):
	}
	t.killDirect()
	select {
	case <-t.done:
	case <-time.After(time.Second):
	}
}

// KillAll kills every command that bash started and that is still running,
// with every process it started, and refuses to start commands from then
// on. The host calls it when it shuts down (its stdin reached EOF, or it
// got SIGTERM or SIGINT); it returns when the trees are gone, or after a few
// seconds. (When the host dies without calling it, the supervisors notice
// and kill the trees themselves, on Linux.)
func KillAll() {
	liveMu.Lock()
	shuttingDown = true
	ts := make([]*Tree, 0, len(liveTrees))
	for t := range liveTrees {
		ts = append(ts, t)
	}
	liveMu.Unlock()
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.kill()
		}()
	}
	wg.Wait()
}

// exitStatusOf turns the wait error of an unsupervised command into an
// exitStatus.
func exitStatusOf(waitErr error) (exitStatus, error) {
	if waitErr == nil {
		return exitStatus{}, nil
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return exitStatus{}, waitErr
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
		return statusOf(ws), nil
	}
	if code := ee.ExitCode(); code >= 0 {
		return exitStatus{code: code}, nil
	}
	return exitStatus{code: -1, signal: ee.ProcessState.String()}, nil
}

// Limits bound a command's tree: processes, memory, file size, open
// files, processor time (see procsup.Limits for how each is enforced).
type Limits = procsup.Limits
