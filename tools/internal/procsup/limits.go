package procsup

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Limits bound one command's tree (issue 24 #6). Zero means no limit.
//
//   - Processes: the processes of the tree at once. The supervisor counts
//     them (Watch) and kills the tree beyond; the command also gets
//     RLIMIT_NPROC = the tasks its user runs at the start plus eight per
//     allowed process (threads count there), which stops a fork bomb in
//     the kernel — except for root, whom RLIMIT_NPROC never binds.
//   - Memory: bytes. Each process gets RLIMIT_DATA (its heap and private
//     writable mappings, not the address space reserved by V8 or the Go
//     runtime), and the supervisor kills the tree when the resident memory
//     of its processes together goes beyond.
//   - FileSize: RLIMIT_FSIZE, bytes (a write beyond fails; SIGXFSZ).
//   - OpenFiles: RLIMIT_NOFILE.
//   - CPU: RLIMIT_CPU, seconds of processor time per process.
type Limits struct {
	Processes int
	Memory    int64
	FileSize  int64
	OpenFiles int
	CPU       int
}

// Any reports whether a limit is set.
func (l Limits) Any() bool {
	return l.Processes > 0 || l.Memory > 0 || l.FileSize > 0 || l.OpenFiles > 0 || l.CPU > 0
}

// Why the supervisor killed a tree (the LimitHit reply's value).
const (
	HitProcesses = 1
	HitMemory    = 2
)

// LimitArg0 selects the limit wrapper: the supervisor starts the command
// as `/proc/self/exe` with argv LimitArg0, the encoded rlimits, the
// executable's path, then the command's argv; the wrapper sets the rlimits
// on itself and executes the command in its place (same pid, same process
// group, same environment), so that not one instruction of the command
// runs without them.
const LimitArg0 = "flemma-limit"

// rlimits are what the wrapper sets: resource number, value.
type rlimit struct {
	resource int
	value    uint64
}

// Resource numbers (asm-generic, x86 and arm alike).
const (
	rlimitCPU    = 0
	rlimitFSIZE  = 1
	rlimitDATA   = 2
	rlimitNPROC  = 6
	rlimitNOFILE = 7
)

// encodeRlimits writes the rlimits for the wrapper's argv: "r=v,r=v".
func encodeRlimits(rs []rlimit) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%d", r.resource, r.value)
	}
	return b.String()
}

func decodeRlimits(s string) ([]rlimit, error) {
	var out []rlimit
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		res, err1 := strconv.Atoi(k)
		val, err2 := strconv.ParseUint(v, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad limit %q", part)
		}
		out = append(out, rlimit{res, val})
	}
	return out, nil
}

// rlimitsOf turns limits into rlimits; tasks is what RLIMIT_NPROC must
// allow beyond the limit (the user's running tasks), -1 for no NPROC
// (root: it would not bind).
func rlimitsOf(l Limits, tasks int) []rlimit {
	var rs []rlimit
	if l.CPU > 0 {
		rs = append(rs, rlimit{rlimitCPU, uint64(l.CPU)})
	}
	if l.FileSize > 0 {
		rs = append(rs, rlimit{rlimitFSIZE, uint64(l.FileSize)})
	}
	if l.Memory > 0 {
		rs = append(rs, rlimit{rlimitDATA, uint64(l.Memory)})
	}
	if l.Processes > 0 && tasks >= 0 {
		rs = append(rs, rlimit{rlimitNPROC, uint64(tasks + 8*l.Processes)})
	}
	if l.OpenFiles > 0 {
		rs = append(rs, rlimit{rlimitNOFILE, uint64(l.OpenFiles)})
	}
	return rs
}

// EncodeLimits writes lim as the rlimits the limit wrapper and the
// sandbox trampoline set: RLIMIT_NPROC (not for root, whom it does not
// bind) from the machine's running tasks now.
func EncodeLimits(lim Limits) string {
	return encodeRlimits(rlimitsOf(lim, tasksFor(lim)))
}

// tasksFor is what RLIMIT_NPROC must allow beyond lim.Processes: the
// machine's running tasks; -1 (no RLIMIT_NPROC) for root, whom it does
// not bind, or without a process limit.
func tasksFor(lim Limits) int {
	if os.Getuid() == 0 || lim.Processes <= 0 {
		return -1
	}
	return systemTasks()
}

// TrampolineArgs is the start of an argv that runs bubblewrap's argv
// through the host binary exe (see SandboxExecArg): with the limits set,
// and the socket filter when filter.
func TrampolineArgs(exe string, lim Limits, filter bool) []string {
	f := "0"
	if filter {
		f = "1"
	}
	return []string{exe, SandboxExecArg, EncodeLimits(lim), f}
}

// systemTasks is the number of tasks (threads) of the whole system, from
// /proc/loadavg ("0.00 0.01 0.05 1/123 4567"): more than the user's, so
// RLIMIT_NPROC set from it never stops a command before its own share.
func systemTasks() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1 << 16
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 1 << 16
	}
	_, total, _ := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(total)
	if err != nil {
		return 1 << 16
	}
	return n
}
