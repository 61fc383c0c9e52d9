package tools

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// The walks of grep, find and ls hold each directory open while they look
// inside it and open what they find relative to it (openat), never following
// a symlink (O_NOFOLLOW) and checking the type of what they opened (fstat).
// A directory replaced by a symlink between the listing and the open — by a
// command running at the same time — is then refused instead of followed,
// and the path a walk reports (and checks against deny_read) is always the
// path of what it opened.

// searchFD is a file opened for grep without the bookkeeping of *os.File
// (no poller registration, no finalizer): grep opens tens of thousands.
type searchFD int

// dirFD is an open directory of a walk.
type dirFD int

// O_PATH is the same on every Linux architecture but missing from package
// syscall on some.
const oPath = 0x200000

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// openRootDir opens the directory at p (absolute, canonical) following no
// symlink on the way: each component is opened from the one before with
// O_DIRECTORY|O_NOFOLLOW, starting at "/".
func openRootDir(p string) (dirFD, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	d := dirFD(fd)
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." {
			continue
		}
		sub, err := d.openDir(c)
		d.close()
		if err != nil {
			return -1, err
		}
		d = sub
	}
	return d, nil
}

// openDir opens the subdirectory name of d; a symlink (ELOOP) or a
// non-directory (ENOTDIR) there is refused.
func (d dirFD) openDir(name string) (dirFD, error) {
	if name == ".." {
		return -1, syscall.EINVAL
	}
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	return dirFD(fd), nil
}

func (d dirFD) close() { syscall.Close(int(d)) }

// openRegular opens the regular file name of d for reading: a symlink there
// fails (ELOOP), anything but a regular file fails with errNotFile (the
// open does not block: O_NONBLOCK).
func (d dirFD) openRegular(name string) (searchFD, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	})
	if err != nil {
		return -1, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		if err == nil {
			err = errNotFile
		}
		return -1, err
	}
	return searchFD(fd), nil
}

// readFile reads the regular file name of d (ignore files), at most max
// bytes; a symlink is not followed.
func (d dirFD) readFile(name string, max int) ([]byte, error) {
	f, err := d.openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.close()
	var out []byte
	buf := make([]byte, 16<<10)
	for len(out) < max {
		n, err := f.read(buf)
		if n <= 0 || err != nil {
			break
		}
		out = append(out, buf[:n]...)
	}
	return out, nil
}

// statType is the type of the entry name of d, not following a symlink (for
// file systems whose listings do not say).
func (d dirFD) statType(name string) entryType {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return entryOther
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return entryOther
	}
	return modeType(st.Mode)
}

// statFollow reports whether the entry name of d is, or is a symlink to, a
// directory.
func (d dirFD) isDirFollow(name string) bool {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, oPath|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

func modeType(m uint32) entryType {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return entryDir
	case syscall.S_IFREG:
		return entryFile
	case syscall.S_IFLNK:
		return entrySymlink
	}
	return entryOther
}

// entries lists d sorted by name, without "." and "..". buf is scratch
// space for getdents, returned for reuse.
func (d dirFD) entries(buf []byte) ([]dirEntry, []byte, error) {
	if len(buf) < 32<<10 {
		buf = make([]byte, 32<<10)
	}
	var out []dirEntry
	for {
		n, err := retryEINTR(func() (int, error) { return syscall.Getdents(int(d), buf) })
		if err != nil {
			return out, buf, err
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
		for off := 0; off < n; {
			rec := buf[off:n]
			if len(rec) < 19 {
				return out, buf, errors.New("short dirent")
			}
			reclen := int(*(*uint16)(unsafe.Pointer(&rec[16])))
			if reclen < 19 || reclen > len(rec) {
				return out, buf, errors.New("bad dirent")
			}
			typ := rec[18]
			name := rec[19:reclen]
			if i := indexZero(name); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
				continue
			}
			e := dirEntry{name: string(name)}
			switch typ {
			case syscall.DT_DIR:
				e.typ = entryDir
			case syscall.DT_REG:
				e.typ = entryFile
			case syscall.DT_LNK:
				e.typ = entrySymlink
			case syscall.DT_UNKNOWN:
				e.typ = d.statType(e.name)
			default:
				e.typ = entryOther
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out, buf, nil
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

func (f searchFD) read(b []byte) (int, error) {
	return retryEINTR(func() (int, error) { return syscall.Read(int(f), b) })
}

func (f searchFD) close() { syscall.Close(int(f)) }
