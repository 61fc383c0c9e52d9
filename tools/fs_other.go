//go:build !linux

package tools

import (
	"os"
	"path/filepath"
)

// On systems without the openat family in package syscall the same
// guarantees are approximated: every component of the canonical path is
// checked with Lstat before the open and again before the rename.

func verifyNoSymlinks(p string) error {
	for q := p; ; q = filepath.Dir(q) {
		fi, err := os.Lstat(q)
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return errPathChanged
		}
		if filepath.Dir(q) == q {
			return nil
		}
	}
}

func openNoFollow(p string) (*os.File, error) {
	if err := verifyNoSymlinks(p); err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errIsDir
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return os.Open(p)
}

func writeFileAtomic(p string, data []byte, mkdirs bool, root rootRef) (err error) {
	dir, name := filepath.Dir(p), filepath.Base(p)
	if err := verifyNoSymlinks(dir); err != nil {
		return err
	}
	if root.ok {
		if id, ok := statID(root.path); !ok || id != root.id {
			return errRootReplaced
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
			return errIsDir
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
	if testHookBeforeRename != nil {
		testHookBeforeRename(p)
	}
	if err = verifyNoSymlinks(dir); err != nil {
		return err
	}
	if root.ok {
		if id, ok := statID(root.path); !ok || id != root.id {
			return errRootReplaced
		}
	}
	return os.Rename(tmp, p)
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
