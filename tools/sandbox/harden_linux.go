package sandbox

import "syscall"

// HardenProcess makes this process's memory and /proc files (environ,
// mem, …) unreadable by other processes of the same user — the commands
// it starts included — by clearing its "dumpable" flag (prctl
// PR_SET_DUMPABLE 0). Without it, an unsandboxed command could read the
// host's environment, API keys included, from /proc/$PPID/environ. It also
// disables core dumps of the process. Call it early in main.
func HardenProcess() error {
	const prSetDumpable = 4
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return e
	}
	return nil
}
