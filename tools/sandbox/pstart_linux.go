package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// processStart returns the start time of process pid, in clock ticks after
// boot (field 22 of /proc/<pid>/stat): with the pid, it names one process
// for the life of the system.
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// pid (comm) state ppid …: comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field 22 is f[19].
	if len(f) < 20 || !isDigits(string(f[19])) {
		return "", false
	}
	return string(f[19]), true
}

// pidNamespace identifies this process's PID namespace (the inode of
// /proc/self/ns/pid), or "0".
func pidNamespace() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "0"
	}
	// "pid:[4026531836]"
	l = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
	if !isDigits(l) {
		return "0"
	}
	return l
}
