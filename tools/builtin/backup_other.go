//go:build !linux

package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Without the openat family in package syscall the backup directory is
// used by path, with an Lstat before each use: a symlink found there is
// refused or removed, but one swapped in between the check and the use is
// followed (see backup_linux.go for the race-free form).

type backupDir struct{ dir string }

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
	dir = filepath.Join(cp, base)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, backupError(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, backupError(err)
	}
	if !fi.IsDir() {
		return nil, backupError(fmt.Errorf("the backup directory %s is a symbolic link or not a folder: refusing to use it", dir))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, backupError(err)
		}
	}
	return &backupDir{dir: dir}, nil
}

func (d *backupDir) path() string         { return d.dir }
func (d *backupDir) close()               {}
func (d *backupDir) join(n string) string { return filepath.Join(d.dir, n) }

func (d *backupDir) createTemp() (*os.File, string, error) {
	var r [8]byte
	rand.Read(r[:])
	name := backupTempPrefix + hex.EncodeToString(r[:])
	f, err := os.OpenFile(d.join(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return f, name, err
}

func (d *backupDir) remove(name string) error     { return os.Remove(d.join(name)) }
func (d *backupDir) rename(from, to string) error { return os.Rename(d.join(from), d.join(to)) }

func (d *backupDir) sync() error {
	f, err := os.Open(d.dir)
	if err != nil {
		return err
	}
	defer f.Close()
	f.Sync() // not every system syncs a directory
	return nil
}

type backupStat struct {
	regular, symlink bool
	size             int64
	mtime            time.Time
}

func (d *backupDir) stat(name string) (backupStat, error) {
	fi, err := os.Lstat(d.join(name))
	if err != nil {
		return backupStat{}, err
	}
	return backupStat{regular: fi.Mode().IsRegular(), symlink: fi.Mode()&os.ModeSymlink != 0, size: fi.Size(), mtime: fi.ModTime()}, nil
}

func (d *backupDir) touch(name string) error {
	if st, err := d.stat(name); err != nil || !st.regular {
		return sandbox.ErrNotRegular
	}
	now := time.Now()
	return os.Chtimes(d.join(name), now, now)
}

func (d *backupDir) names() ([]string, error) {
	f, err := os.Open(d.dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func (d *backupDir) open(name string) (*os.File, error) {
	if st, err := d.stat(name); err != nil {
		return nil, err
	} else if !st.regular {
		return nil, sandbox.ErrNotRegular
	}
	return os.Open(d.join(name))
}

// syncAll flushes the temporary files of the directory, one by one (no
// syncfs here).
func (d *backupDir) syncAll() error {
	names, err := d.names()
	if err != nil {
		return err
	}
	for _, n := range names {
		if !strings.HasPrefix(n, backupTempPrefix) {
			continue
		}
		f, err := os.OpenFile(d.join(n), os.O_WRONLY, 0)
		if err != nil {
			continue // another process's, gone meanwhile
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
