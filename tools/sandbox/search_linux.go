package sandbox

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

// SearchFD is a file opened for grep without the bookkeeping of *os.File
// (no poller registration, no finalizer): grep opens tens of thousands.
type SearchFD int

// DirFD is an open directory of a walk.
type DirFD int

// O_PATH is the same on every Linux architecture but missing from package
// syscall on some.
const OPath = 0x200000

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// OpenRootDir opens the directory at p (absolute, canonical) following no
// symlink on the way: each component is opened from the one before with
// O_DIRECTORY|O_NOFOLLOW, starting at "/".
func OpenRootDir(p string) (DirFD, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	d := DirFD(fd)
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." {
			continue
		}
		sub, err := d.OpenDir(c)
		d.Close()
		if err != nil {
			return -1, err
		}
		d = sub
	}
	return d, nil
}

// OpenDir opens the subdirectory name of d; a symlink (ELOOP) or a
// non-directory (ENOTDIR) there is refused.
func (d DirFD) OpenDir(name string) (DirFD, error) {
	if name == ".." {
		return -1, syscall.EINVAL
	}
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, err
	}
	return DirFD(fd), nil
}

func (d DirFD) Close() { syscall.Close(int(d)) }

// OpenRegular opens the regular file name of d for reading: a symlink there
// fails (ELOOP), anything but a regular file fails with errNotFile (the
// open does not block: O_NONBLOCK).
func (d DirFD) OpenRegular(name string) (SearchFD, error) {
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
			err = ErrNotFile
		}
		return -1, err
	}
	return SearchFD(fd), nil
}

// ReadFile reads the regular file name of d (ignore files), at most max
// bytes; a symlink is not followed.
func (d DirFD) ReadFile(name string, max int) ([]byte, error) {
	f, err := d.OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 16<<10)
	for len(out) < max {
		n, err := f.Read(buf)
		if n <= 0 || err != nil {
			break
		}
		out = append(out, buf[:n]...)
	}
	return out, nil
}

// statType is the type of the entry name of d, not following a symlink (for
// file systems whose listings do not say).
func (d DirFD) statType(name string) EntryType {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, OPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return EntryOther
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return EntryOther
	}
	return modeType(st.Mode)
}

// statFollow reports whether the entry name of d is, or is a symlink to, a
// directory.
func (d DirFD) IsDirFollow(name string) bool {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(int(d), name, OPath|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

func modeType(m uint32) EntryType {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return EntryDir
	case syscall.S_IFREG:
		return EntryFile
	case syscall.S_IFLNK:
		return EntrySymlink
	}
	return EntryOther
}

// Entries lists d sorted by name, without "." and "..". buf is scratch
// space for getdents, returned for reuse.
func (d DirFD) Entries(buf []byte) ([]DirEntry, []byte, error) {
	if len(buf) < 32<<10 {
		buf = make([]byte, 32<<10)
	}
	var out []DirEntry
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
			e := DirEntry{Name: string(name)}
			switch typ {
			case syscall.DT_DIR:
				e.Type = EntryDir
			case syscall.DT_REG:
				e.Type = EntryFile
			case syscall.DT_LNK:
				e.Type = EntrySymlink
			case syscall.DT_UNKNOWN:
				e.Type = d.statType(e.Name)
			default:
				e.Type = EntryOther
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
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

func (f SearchFD) Read(b []byte) (int, error) {
	return retryEINTR(func() (int, error) { return syscall.Read(int(f), b) })
}

func (f SearchFD) Close() { syscall.Close(int(f)) }
