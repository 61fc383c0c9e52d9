//go:build unix && !linux

package tools

import "os"

// groupAlive reports whether p's process group has any member.
func groupAlive(p *os.Process) bool { return groupExists(p.Pid) }
