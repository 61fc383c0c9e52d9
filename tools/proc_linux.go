package tools

import (
	"bytes"
	"os"
	"strconv"
)

// groupAlive reports whether a process of p's group is still running.
// Zombies do not count: orphans of a killed command are reparented to PID 1,
// which may take a while to reap them, and they are already dead.
func groupAlive(p *os.Process) bool {
	if !groupExists(p.Pid) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if pgrp, err := strconv.Atoi(string(f[2])); err == nil && pgrp == p.Pid {
			return true
		}
	}
	return false
}
