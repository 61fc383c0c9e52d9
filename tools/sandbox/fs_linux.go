package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// OpenDirNoFollow opens the directory at dir (absolute and canonical) without
// following any symlink: each component is opened with
// openat(O_NOFOLLOW|O_DIRECTORY) from the one before, starting at "/". A
// component that is (now) a symlink or not a directory fails with
// errPathChanged. With create, missing components are created (0755).
// When root is set, the component at root.path must still be the
// directory root.id names (the writable root was not replaced by another
// directory), else errRootReplaced.
func OpenDirNoFollow(dir string, create bool, root RootRef) (int, error) {
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if root.ok && root.path == "/" {
		if err := checkID(fd, root.id); err != nil {
			syscall.Close(fd)
			return -1, err
		}
	}
	at := ""
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		at += "/" + c
		nfd, err := OpenatDir(fd, c)
		if errors.Is(err, syscall.ENOENT) && create {
			if err = syscall.Mkdirat(fd, c, 0o755); err == nil || errors.Is(err, syscall.EEXIST) {
				nfd, err = OpenatDir(fd, c)
			}
		}
		syscall.Close(fd)
		if err != nil {
			if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
				return -1, ErrPathChanged
			}
			return -1, err
		}
		fd = nfd
		if root.ok && at == root.path {
			if err := checkID(fd, root.id); err != nil {
				syscall.Close(fd)
				return -1, err
			}
		}
	}
	return fd, nil
}

// checkID fails with errRootReplaced unless fd is the file id names.
func checkID(fd int, id fileID) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if uint64(st.Dev) != id.dev || uint64(st.Ino) != id.ino {
		return ErrRootReplaced
	}
	return nil
}

// openDirID opens the directory dir (canonical) without following any
// symlink, and returns it with its identity.
func openDirID(dir string) (*os.File, fileID, error) {
	fd, err := OpenDirNoFollow(dir, false, RootRef{})
	if err != nil {
		return nil, fileID{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fileID{}, err
	}
	return os.NewFile(uintptr(fd), dir), fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

func OpenatDir(fd int, name string) (int, error) {
	for {
		nfd, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return nfd, err
		}
	}
}

// OpenNoFollow opens the regular file at the canonical path p for reading,
// following no symlink on the way (see openDir).
func OpenNoFollow(p string) (*os.File, error) {
	return OpenNoFollowIn(p, RootRef{})
}

// OpenNoFollowIn is openNoFollow where the writable root root (when set)
// must still be the directory the sandbox resolved (see openDir).
func OpenNoFollowIn(p string, root RootRef) (*os.File, error) {
	dfd, err := OpenDirNoFollow(filepath.Dir(p), false, root)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(dfd)
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	fd, err := syscall.Openat(dfd, filepath.Base(p), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, ErrPathChanged
		}
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFDIR:
		syscall.Close(fd)
		return nil, ErrIsDir
	default:
		syscall.Close(fd)
		return nil, ErrNotRegular
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// WriteFileAtomic replaces or creates the file at the canonical path p with
// data. The directory is opened without following symlinks (openDir,
// creating it when mkdirs), the data goes to a temporary file in that
// directory, and the temporary file is renamed over the name — so a reader
// never sees a partial file, a failed write leaves the old file intact, and
// a symlink swapped in anywhere on the path is never followed; root, when
// set, is the writable root holding p, which must still be the directory
// the sandbox resolved. Before the rename the directory is re-verified: if
// the path no longer leads to the directory we hold, nothing is renamed.
// An existing file keeps its permission bits. want, when it checks, is what
// must be at p just before the rename (see prior); otherwise nothing is
// renamed and the error is errChangedMeanwhile.
func WriteFileAtomic(p string, data []byte, mkdirs bool, root RootRef, want Prior) (err error) {
	dir, name := filepath.Dir(p), filepath.Base(p)
	dfd, err := OpenDirNoFollow(dir, mkdirs, root)
	if err != nil {
		return err
	}
	defer syscall.Close(dfd)
	keep := false
	var mode uint32
	// What is there now? (A symlink — ELOOP — was swapped in after the
	// check, or dangles: the rename replaces the link itself.)
	if efd, err := syscall.Openat(dfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
		var st syscall.Stat_t
		err = syscall.Fstat(efd, &st)
		syscall.Close(efd)
		if err == nil {
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFDIR:
				return ErrIsDir
			case syscall.S_IFREG:
				keep, mode = true, st.Mode&0o777
			}
		}
	}
	tmp := tempName(name)
	fd, err := syscall.Openat(dfd, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			syscall.Unlinkat(dfd, tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && keep {
		err = f.Chmod(os.FileMode(mode))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if testhook.BeforeRename != nil {
		testhook.BeforeRename(p)
	}
	var held, now syscall.Stat_t
	if err = syscall.Fstat(dfd, &held); err != nil {
		return err
	}
	if err = syscall.Stat(dir, &now); err != nil || held.Dev != now.Dev || held.Ino != now.Ino {
		err = ErrPathChanged
		return err
	}
	if want.Check {
		if err = checkPrior(dfd, name, want); err != nil {
			return err
		}
		if want.Absent {
			// A hard link fails if the name exists, where a rename would
			// replace what appeared since the check just above.
			switch err = linkat(dfd, tmp, dfd, name); {
			case err == nil:
				syscall.Unlinkat(dfd, tmp)
				return nil
			case errors.Is(err, syscall.EEXIST):
				err = ErrChangedMeanwhile
				return err
			case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS),
				errors.Is(err, syscall.EMLINK), errors.Is(err, syscall.EXDEV):
				// No hard links here: rename, as checked just above.
			default:
				return err
			}
		}
	}
	return syscall.Renameat(dfd, tmp, dfd, name)
}

// checkPrior compares what is at name in the directory dfd with want.
func checkPrior(dfd int, name string, want Prior) error {
	st, err := statAt(dfd, name)
	switch {
	case want.Absent && errors.Is(err, syscall.ENOENT):
		return nil
	case want.Absent && err == nil:
		return ErrChangedMeanwhile
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ELOOP):
		return ErrChangedMeanwhile
	case err != nil:
		return err
	case st != want.Stamp:
		return ErrChangedMeanwhile
	}
	return nil
}

// statAt is the stamp of the entry name of dfd, not following a symlink
// (an O_PATH descriptor: no read permission needed, nothing blocks).
func statAt(dfd int, name string) (FileStamp, error) {
	fd, err := syscall.Openat(dfd, name, OPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return FileStamp{}, err
	}
	defer syscall.Close(fd)
	return stampFD(fd)
}

// stampFD is the stamp of the open file fd.
func stampFD(fd int) (FileStamp, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return FileStamp{}, err
	}
	return stampOf(&st), nil
}

func stampOf(st *syscall.Stat_t) FileStamp {
	return FileStamp{
		id:    fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		mode:  uint32(st.Mode),
		size:  int64(st.Size),
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}
}

// StampFile is the stamp of an open file.
func StampFile(f *os.File) (FileStamp, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return FileStamp{}, err
	}
	return stampOf(&st), nil
}

// linkat makes newname in newdfd a hard link to oldname in olddfd, failing
// with EEXIST when newname exists (package syscall has no Linkat).
func linkat(olddfd int, oldname string, newdfd int, newname string) error {
	o, err := syscall.BytePtrFromString(oldname)
	if err != nil {
		return err
	}
	n, err := syscall.BytePtrFromString(newname)
	if err != nil {
		return err
	}
	_, _, e := syscall.Syscall6(syscall.SYS_LINKAT, uintptr(olddfd), uintptr(unsafe.Pointer(o)), uintptr(newdfd), uintptr(unsafe.Pointer(n)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// RemoveIfUnchanged removes the file at the canonical path p, following no
// symlink on the way, if it is still the file want describes (else
// errChangedMeanwhile).
func RemoveIfUnchanged(p string, want FileStamp) error {
	dfd, err := OpenDirNoFollow(filepath.Dir(p), false, RootRef{})
	if err != nil {
		return err
	}
	defer syscall.Close(dfd)
	name := filepath.Base(p)
	if err := checkPrior(dfd, name, Prior{Check: true, Stamp: want}); err != nil {
		return err
	}
	return syscall.Unlinkat(dfd, name)
}
