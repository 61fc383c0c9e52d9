//go:build !linux

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// On systems without the openat family in package syscall the same
// guarantees are approximated: every component of the canonical path is
// checked with Lstat before the open and again before the rename.

func verifyNoSymlinks(p string) error {
	for q := p; ; q = filepath.Dir(q) {
		fi, err := os.Lstat(q)
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return ErrPathChanged
		}
		if filepath.Dir(q) == q {
			return nil
		}
	}
}

func OpenNoFollow(p string) (*os.File, error) {
	return OpenNoFollowIn(p, RootRef{})
}

func OpenNoFollowIn(p string, root RootRef) (*os.File, error) {
	if err := verifyNoSymlinks(p); err != nil {
		return nil, err
	}
	if root.ok {
		if id, ok := statID(root.path); !ok || id != root.id {
			return nil, ErrRootReplaced
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, ErrIsDir
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	return os.Open(p)
}

func WriteFileAtomic(p string, data []byte, mkdirs bool, root RootRef, want Prior) (err error) {
	dir, name := filepath.Dir(p), filepath.Base(p)
	if err := verifyNoSymlinks(dir); err != nil {
		return err
	}
	if root.ok {
		if id, ok := statID(root.path); !ok || id != root.id {
			return ErrRootReplaced
		}
	}
	if mkdirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var keep os.FileMode
	hasMode := false
	if fi, err := os.Lstat(p); err == nil {
		if fi.IsDir() {
			return ErrIsDir
		}
		if fi.Mode().IsRegular() {
			keep, hasMode = fi.Mode().Perm(), true
		}
	}
	f, err := os.CreateTemp(dir, tempName(name))
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && hasMode {
		err = f.Chmod(keep)
	} else if err == nil {
		err = f.Chmod(0o644)
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
	if err = verifyNoSymlinks(dir); err != nil {
		return err
	}
	if root.ok {
		if id, ok := statID(root.path); !ok || id != root.id {
			return ErrRootReplaced
		}
	}
	if want.Check {
		if err = checkPrior(p, want); err != nil {
			return err
		}
		if want.Absent {
			// A hard link fails if the name exists, where a rename would
			// replace what appeared since the check just above.
			if err = os.Link(tmp, p); err == nil {
				os.Remove(tmp)
				return nil
			}
			if errors.Is(err, fs.ErrExist) {
				err = ErrChangedMeanwhile
				return err
			}
		}
	}
	return os.Rename(tmp, p)
}

func checkPrior(p string, want Prior) error {
	fi, err := os.Lstat(p)
	switch {
	case want.Absent && errors.Is(err, fs.ErrNotExist):
		return nil
	case want.Absent && err == nil:
		return ErrChangedMeanwhile
	case errors.Is(err, fs.ErrNotExist):
		return ErrChangedMeanwhile
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink != 0 || stampInfo(p, fi) != want.Stamp:
		return ErrChangedMeanwhile
	}
	return nil
}

// stampInfo is the stamp of the file at p (described by fi). Without
// fstat's change time, an in-place rewrite that keeps the size and sets the
// modification time back goes unnoticed.
func stampInfo(p string, fi os.FileInfo) FileStamp {
	id, _ := statID(p)
	return FileStamp{id: id, mode: uint32(fi.Mode()), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

func StampFile(f *os.File) (FileStamp, error) {
	fi, err := f.Stat()
	if err != nil {
		return FileStamp{}, err
	}
	return stampInfo(f.Name(), fi), nil
}

func RemoveIfUnchanged(p string, want FileStamp) error {
	if err := verifyNoSymlinks(filepath.Dir(p)); err != nil {
		return err
	}
	if err := checkPrior(p, Prior{Check: true, Stamp: want}); err != nil {
		return err
	}
	return os.Remove(p)
}

// openDirID is not used where bubblewrap does not exist.
func openDirID(dir string) (*os.File, fileID, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fileID{}, err
	}
	id, _ := statID(dir)
	return f, id, nil
}
