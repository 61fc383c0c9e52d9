//go:build unix && !linux

package sandbox

import (
	"os"
	"sync/atomic"
	"syscall"
)

// Without Linux's child subreapers the command runs unsupervised, as a
// process group (see proc.go).

type treePlatform struct {
	waited      <-chan error
	terminating atomic.Bool
}

func (t *Tree) start(path string, argv []string, dir string, env []string, out *os.File, files []*os.File, _ Limits) error {
	return t.startGroup(path, argv, dir, env, out, files)
}

func (t *Tree) wait()       { t.waitGroup() }
func (t *Tree) terminate()  { t.terminateGroup() }
func (t *Tree) killNow()    { t.killGroup() }
func (t *Tree) killDirect() { t.killGroup() }

func groupSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// GroupAlive reports whether the process group pgid has any member.
func GroupAlive(pgid int) bool { return groupExists(pgid) }
