package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/tools/internal/procsup"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// The host's side of the supervisor (package procsup; see proc.go for why
// this mechanism).

type treePlatform struct {
	ctl   *os.File // the host's end of the control socket; nil when unsupervised
	shell int      // the shell's pid, leader of its process group

	// Unsupervised.
	waited      <-chan error
	terminating atomic.Bool
}

// errNoSupervisor: the supervisor could not run; the command runs
// unsupervised.
var errNoSupervisor = errors.New("supervisor unavailable")

func (t *Tree) start(path string, argv []string, dir string, env []string, out *os.File, files []*os.File, lim Limits) error {
	if !testhook.NoSupervisor {
		err := t.startSupervised(path, argv, dir, env, out, files, lim)
		if !errors.Is(err, errNoSupervisor) {
			return err
		}
	}
	// Unsupervised, the rlimits still apply (through the limit wrapper);
	// the tree's count and memory are not watched.
	path, argv = procsup.WrapLimits(path, argv, lim)
	return t.startGroup(path, argv, dir, env, out, files)
}

// startSupervised starts the supervisor with the control socket as its
// descriptor 3 and files as 4, 5, …; it hands them on to the command as 3,
// 4, … (see package procsup).
func (t *Tree) startSupervised(path string, argv []string, dir string, env []string, out *os.File, files []*os.File, lim Limits) error {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	// Non-blocking: the host's end gets the poller, so reads can time out.
	syscall.SetNonblock(fds[0], true)
	ctl := os.NewFile(uintptr(fds[0]), "flemma-supervisor-ctl")
	peer := os.NewFile(uintptr(fds[1]), "flemma-supervisor-ctl")
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{procsup.Arg0},
		Dir:        dir,
		Env:        procsup.SupervisorEnv(),
		Stdout:     out,
		Stderr:     out,
		ExtraFiles: append([]*os.File{peer}, files...),
		// Its own process group: a signal to the host's group (Neovim
		// stopping its job) must leave the supervisor able to clean up.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	peer.Close()
	if err != nil {
		ctl.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "chdir" {
			return err
		}
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	fail := func(err error) error {
		cmd.Process.Kill()
		cmd.Wait()
		ctl.Close()
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	ctl.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := ctl.Write(procsup.EncodeCommand(path, argv, dedupEnv(env), len(files), lim)); err != nil {
		return fail(err)
	}
	var rep [5]byte
	if _, err := io.ReadFull(ctl, rep[:]); err != nil {
		return fail(err)
	}
	ctl.SetDeadline(time.Time{})
	n := int(binary.LittleEndian.Uint32(rep[1:]))
	switch rep[0] {
	case procsup.Running:
	case procsup.StartFailed:
		cmd.Wait()
		ctl.Close()
		return &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	default:
		return fail(fmt.Errorf("unexpected reply %q", rep[0]))
	}
	t.cmd, t.plat.ctl, t.plat.shell = cmd, ctl, n
	return nil
}

func (t *Tree) wait() {
	if t.plat.ctl == nil {
		t.waitGroup()
		return
	}
	waitErr := t.cmd.Wait()
	ctl := t.plat.ctl
	ctl.SetReadDeadline(time.Now().Add(time.Second))
	var rep [5]byte
	var err error
	for {
		if _, err = io.ReadFull(ctl, rep[:]); err != nil || rep[0] != procsup.LimitHit {
			break
		}
		t.hit = int(binary.LittleEndian.Uint32(rep[1:]))
	}
	if err == nil && rep[0] == procsup.Exited {
		t.status = statusOf(syscall.WaitStatus(binary.LittleEndian.Uint32(rep[1:])))
	} else {
		// The supervisor died before its tree (killed with SIGKILL?): its
		// orphans went to init. Take what can still be reached: the
		// shell's process group (the shell itself died with the
		// supervisor, Pdeathsig; while members remain, the group's id
		// cannot be reused).
		syscall.Kill(-t.plat.shell, syscall.SIGKILL)
		t.err = fmt.Errorf("the command's supervisor ended without reporting (%v)", waitErr)
	}
	ctl.Close()
}

func (t *Tree) send(b byte) {
	t.plat.ctl.SetWriteDeadline(time.Now().Add(time.Second))
	t.plat.ctl.Write([]byte{b}) // fails once the supervisor is gone
}

func (t *Tree) terminate() {
	if t.plat.ctl == nil {
		t.terminateGroup()
		return
	}
	t.send(procsup.Terminate)
}

func (t *Tree) killNow() {
	if t.plat.ctl == nil {
		t.killGroup()
		return
	}
	t.send(procsup.Kill)
}

// killDirect is the last resort when the supervisor does not finish: the
// host kills the supervisor's subtree itself, then the supervisor.
func (t *Tree) killDirect() {
	if t.plat.ctl == nil {
		t.killGroup()
		return
	}
	// os.Process signals through a pidfd: never another process that got
	// the supervisor's pid after it was reaped. Stopped, it stays (its pid
	// is ours) while we kill what is below it.
	if t.cmd.Process.Signal(syscall.SIGSTOP) != nil {
		return // already gone
	}
	procsup.KillDescendants(t.cmd.Process.Pid)
	t.cmd.Process.Kill()
}

// dedupEnv keeps the last value of each variable, as os/exec does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, env[i])
	}
	slices.Reverse(out)
	return out
}

func groupSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// GroupAlive reports whether a process of the group pgid is still running.
// Zombies do not count: orphans of a killed command may wait a while for
// their new parent to reap them, and they are already dead.
func GroupAlive(pgid int) bool {
	if !groupExists(pgid) {
		return false
	}
	for _, p := range procsup.Procs() {
		if p.Pgrp == pgid && p.Running() {
			return true
		}
	}
	return false
}
