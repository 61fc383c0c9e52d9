//go:build !unix

package sandbox

import (
	"os"
	"os/exec"
)

// Without process groups only the command itself can be killed.

type treePlatform struct{}

func (t *Tree) start(path string, argv []string, dir string, env []string, out *os.File, files []*os.File, _ Limits) error {
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: env, Stdout: out, Stderr: out, ExtraFiles: files}
	if err := cmd.Start(); err != nil {
		return err
	}
	t.cmd = cmd
	return nil
}

func (t *Tree) wait()       { t.status, t.err = exitStatusOf(t.cmd.Wait()) }
func (t *Tree) terminate()  { t.cmd.Process.Kill() }
func (t *Tree) killNow()    { t.cmd.Process.Kill() }
func (t *Tree) killDirect() { t.cmd.Process.Kill() }

// closeInheritedOnExec: descriptors cannot be marked here.
func closeInheritedOnExec() {}
