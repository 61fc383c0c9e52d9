//go:build unix

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// The unsupervised form of a process tree (other Unix systems, or Linux
// when the supervisor cannot run): the command leads a new process group,
// which is signalled as a whole.

// startGroup starts the command itself as the leader of a new process
// group. It is started, and waited for, on a goroutine locked to its thread:
// on Linux the command gets SIGKILL when the thread that forked it ends
// (Pdeathsig), and a thread of the Go runtime can end when a goroutine
// locked to it returns.
func (t *Tree) startGroup(path string, argv []string, dir string, env []string, out *os.File, files []*os.File) error {
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env, Stdout: out, Stderr: out, ExtraFiles: files, SysProcAttr: groupSysProcAttr()}
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return err
	}
	t.cmd = cmd
	t.plat.waited = waited
	return nil
}

// waitGroup waits for the command, then for its process group to be empty:
// after a normal exit what is left of the group is killed at once; after
// terminate the group has until kill. It gives up after a bound.
func (t *Tree) waitGroup() {
	t.status, t.err = exitStatusOf(<-t.plat.waited)
	pgid := t.cmd.Process.Pid
	for deadline := time.Now().Add(killWait + 2*time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !t.plat.terminating.Load() {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if !GroupAlive(pgid) {
			return
		}
	}
}

func (t *Tree) terminateGroup() {
	t.plat.terminating.Store(true)
	syscall.Kill(-t.cmd.Process.Pid, syscall.SIGTERM)
}

func (t *Tree) killGroup() {
	t.plat.terminating.Store(false)
	syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
}

// groupExists reports whether the process group pgid has any member,
// zombies included.
func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var inheritOnce sync.Once

func init() { testhook.ForgetInherited = func() { inheritOnce = sync.Once{} } }

// closeInheritedOnExec marks every descriptor this process inherited from
// its parent close-on-exec (Go opens all of its own so), once, before the
// first command starts: a command gets stdin, stdout, stderr and what
// startTree gives it, never a descriptor of Neovim's that leaked into the
// host — under bubblewrap one from outside the sandbox would let the
// command escape it.
func closeInheritedOnExec() {
	inheritOnce.Do(func() {
		for _, fd := range openFDs() {
			if fd > 2 {
				syscall.CloseOnExec(fd)
			}
		}
	})
}

// openFDs lists this process's open descriptors: /proc/self/fd where
// there is one, else every number below 1024 (CloseOnExec of a number
// that is not open does nothing).
func openFDs() []int {
	var fds []int
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
		return fds
	}
	for fd := 3; fd < 1024; fd++ {
		fds = append(fds, fd)
	}
	return fds
}
