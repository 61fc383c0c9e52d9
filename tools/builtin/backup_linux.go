package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// backupDir is the open backup directory. Every entry is reached relative
// to it (openat and friends) with O_NOFOLLOW or AT_SYMLINK_NOFOLLOW.
type backupDir struct {
	fd  int
	dir string // canonical path, for messages and the in-process state
}

// openBackupDir opens (creating it, 0700) the backup directory dir. The
// folders above it may be symbolic links (a home directory often is); the
// backup directory itself may not be one. It must belong to this user;
// permissions wider than 0700 are narrowed.
func openBackupDir(dir string) (*backupDir, error) {
	if dir == "" {
		d, err := DefaultBackupDir()
		if err != nil {
			return nil, backupError(err)
		}
		dir = d
	}
	if !filepath.IsAbs(dir) {
		return nil, backupError(fmt.Errorf("the backup directory %q is not an absolute path", dir))
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, backupError(err)
	}
	cp, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, backupError(err)
	}
	pfd, err := sandbox.OpenDirNoFollow(cp, false, sandbox.RootRef{})
	if err != nil {
		return nil, backupError(err)
	}
	defer syscall.Close(pfd)
	if err := syscall.Mkdirat(pfd, base, 0o700); err != nil && !errors.Is(err, syscall.EEXIST) {
		return nil, backupError(err)
	}
	fd, err := sandbox.OpenatDir(pfd, base)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			return nil, backupError(fmt.Errorf("the backup directory %s is a symbolic link or not a folder: refusing to use it", dir))
		}
		return nil, backupError(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, backupError(err)
	}
	if int(st.Uid) != os.Getuid() {
		syscall.Close(fd)
		return nil, backupError(fmt.Errorf("the backup directory %s belongs to another user: refusing to use it", dir))
	}
	if st.Mode&0o077 != 0 {
		if err := syscall.Fchmod(fd, 0o700); err != nil {
			syscall.Close(fd)
			return nil, backupError(err)
		}
	}
	return &backupDir{fd: fd, dir: filepath.Join(cp, base)}, nil
}

func (d *backupDir) path() string { return d.dir }

func (d *backupDir) close() { syscall.Close(d.fd) }

// createTemp creates a new file (0600) under a temporary name.
func (d *backupDir) createTemp() (*os.File, string, error) {
	var r [8]byte
	rand.Read(r[:])
	name := backupTempPrefix + hex.EncodeToString(r[:])
	fd, err := syscall.Openat(d.fd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, "", err
	}
	return os.NewFile(uintptr(fd), name), name, nil
}

// remove unlinks the entry name (a symlink is removed, never followed).
func (d *backupDir) remove(name string) error { return syscall.Unlinkat(d.fd, name) }

func (d *backupDir) rename(from, to string) error { return syscall.Renameat(d.fd, from, d.fd, to) }

func (d *backupDir) sync() error { return syscall.Fsync(d.fd) }

type backupStat struct {
	regular, symlink bool
	size             int64
	mtime            time.Time
}

// stat describes the entry name without following a symlink (one
// fstatat with AT_SYMLINK_NOFOLLOW).
func (d *backupDir) stat(name string) (backupStat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return backupStat{}, err
	}
	return backupStat{
		regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
		symlink: st.Mode&unix.S_IFMT == unix.S_IFLNK,
		size:    st.Size,
		mtime:   time.Unix(st.Mtim.Unix()),
	}, nil
}

// touch sets the modification time of the entry name to now, without
// following a symlink (utimensat with AT_SYMLINK_NOFOLLOW).
func (d *backupDir) touch(name string) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	const atSymlinkNofollow = 0x100
	_, _, e := syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(d.fd), uintptr(unsafe.Pointer(p)), 0, atSymlinkNofollow, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// names lists the directory.
func (d *backupDir) names() ([]string, error) {
	fd, err := syscall.Openat(d.fd, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	ents, _, err := sandbox.DirFD(fd).Entries(nil)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names, err
}

// open opens the regular file name for reading; a symlink there fails
// (ELOOP), anything but a regular file with errNotRegular.
func (d *backupDir) open(name string) (*os.File, error) {
	fd, err := syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, sandbox.ErrNotRegular
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// syncAll flushes the file system holding the directory (syncfs): every
// file written there so far is on disk after it.
func (d *backupDir) syncAll() error { return unix.Syncfs(d.fd) }
