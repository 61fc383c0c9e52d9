//go:build !linux

package tools

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Without the openat family in package syscall the walks go by path, with
// an Lstat before each open: a symlink found there is refused, but one
// swapped in between the Lstat and the open is followed (see
// search_linux.go for the race-free form).

type searchFD struct{ f *os.File }

type dirFD struct{ path string }

func openRootDir(p string) (dirFD, error) {
	p = filepath.Clean(p)
	for q := p; ; q = filepath.Dir(q) {
		fi, err := os.Lstat(q)
		if err != nil {
			return dirFD{}, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return dirFD{}, errSymlink
		}
		if filepath.Dir(q) == q {
			break
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return dirFD{}, err
	}
	if !fi.IsDir() {
		return dirFD{}, errNotDir
	}
	return dirFD{p}, nil
}

var errNotDir = &os.PathError{Op: "open", Err: os.ErrInvalid}

func (d dirFD) join(name string) string { return filepath.Join(d.path, name) }

func (d dirFD) openDir(name string) (dirFD, error) {
	fi, err := os.Lstat(d.join(name))
	if err != nil {
		return dirFD{}, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return dirFD{}, errSymlink
	}
	if !fi.IsDir() {
		return dirFD{}, errNotDir
	}
	return dirFD{d.join(name)}, nil
}

func (d dirFD) close() {}

func (d dirFD) openRegular(name string) (searchFD, error) {
	p := d.join(name)
	fi, err := os.Lstat(p)
	if err != nil {
		return searchFD{}, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return searchFD{}, errSymlink
	}
	if !fi.Mode().IsRegular() {
		return searchFD{}, errNotFile
	}
	f, err := os.Open(p)
	if err != nil {
		return searchFD{}, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return searchFD{}, errNotFile
	}
	return searchFD{f}, nil
}

func (d dirFD) readFile(name string, max int) ([]byte, error) {
	f, err := d.openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.close()
	return io.ReadAll(io.LimitReader(f.f, int64(max)))
}

func (d dirFD) isDirFollow(name string) bool {
	fi, err := os.Stat(d.join(name))
	return err == nil && fi.IsDir()
}

func (d dirFD) entries(buf []byte) ([]dirEntry, []byte, error) {
	ents, err := os.ReadDir(d.path)
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		t := e.Type()
		typ := entryOther
		switch {
		case t.IsDir():
			typ = entryDir
		case t.IsRegular():
			typ = entryFile
		case t&os.ModeSymlink != 0:
			typ = entrySymlink
		}
		out = append(out, dirEntry{e.Name(), typ})
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out, buf, err
}

func (f searchFD) read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (f searchFD) close() { f.f.Close() }
