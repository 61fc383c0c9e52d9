//go:build unix && !linux

package tools

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

func (t *tree) start(path string, argv []string, dir string, env []string, out *os.File, files []*os.File) error {
	return t.startGroup(path, argv, dir, env, out, files)
}

func (t *tree) wait()       { t.waitGroup() }
func (t *tree) terminate()  { t.terminateGroup() }
func (t *tree) killNow()    { t.killGroup() }
func (t *tree) killDirect() { t.killGroup() }

func groupSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAlive reports whether the process group pgid has any member.
func groupAlive(pgid int) bool { return groupExists(pgid) }
