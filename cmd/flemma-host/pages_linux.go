package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dropStartPages lets go of the executable's pages that starting touched
// (issue 23, host memory): the ~300 packages' initialisation reads code and
// tables all over the binary, and the kernel maps their neighbours too, so
// a host that then waits for Neovim keeps 15 MB of the binary resident of
// which its work uses a fraction. MADV_DONTNEED on the read-only mappings of
// the executable (code, read-only data, the pc tables) only unmaps them:
// they stay in the page cache and what the host uses next comes back at its
// first touch, a minor fault. Writable mappings are never touched (their
// pages may hold the process's own data).
func dropStartPages() int { return exeAdvise(syscall.MADV_DONTNEED) }

// vmRSS is the process's VmRSS in kB (0 if unknown), for the log.
func vmRSS() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}

func exeAdvise(advice uintptr) int {
	n := 0
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		// address perms offset dev inode path
		if len(f) < 6 || f[5] != exe || strings.Contains(f[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), advice)
		n++
	}
	return n
}
