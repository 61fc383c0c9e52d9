//go:build unix

package sandbox

import "syscall"

// statID returns the identity of the file at p, following symlinks.
func statID(p string) (fileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
