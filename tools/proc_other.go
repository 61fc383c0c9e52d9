//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

func setProcessGroup(cmd *exec.Cmd) {}

func signalGroup(p *os.Process, kill bool) { p.Kill() }

func groupAlive(p *os.Process) bool { return false }
