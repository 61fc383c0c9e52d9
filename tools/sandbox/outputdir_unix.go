//go:build unix

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether a process pid exists (one of another user
// counts: EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByMe reports whether the file fi describes belongs to this user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
