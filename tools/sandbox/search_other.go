//go:build !linux

package sandbox

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

type SearchFD struct{ f *os.File }

type DirFD struct{ path string }

func OpenRootDir(p string) (DirFD, error) {
	p = filepath.Clean(p)
	for q := p; ; q = filepath.Dir(q) {
		fi, err := os.Lstat(q)
		if err != nil {
			return DirFD{}, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return DirFD{}, ErrSymlink
		}
		if filepath.Dir(q) == q {
			break
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return DirFD{}, err
	}
	if !fi.IsDir() {
		return DirFD{}, errNotDir
	}
	return DirFD{p}, nil
}

var errNotDir = &os.PathError{Op: "open", Err: os.ErrInvalid}

func (d DirFD) join(name string) string { return filepath.Join(d.path, name) }

func (d DirFD) OpenDir(name string) (DirFD, error) {
	fi, err := os.Lstat(d.join(name))
	if err != nil {
		return DirFD{}, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return DirFD{}, ErrSymlink
	}
	if !fi.IsDir() {
		return DirFD{}, errNotDir
	}
	return DirFD{d.join(name)}, nil
}

func (d DirFD) Close() {}

func (d DirFD) OpenRegular(name string) (SearchFD, error) {
	p := d.join(name)
	fi, err := os.Lstat(p)
	if err != nil {
		return SearchFD{}, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return SearchFD{}, ErrSymlink
	}
	if !fi.Mode().IsRegular() {
		return SearchFD{}, ErrNotFile
	}
	f, err := os.Open(p)
	if err != nil {
		return SearchFD{}, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return SearchFD{}, ErrNotFile
	}
	return SearchFD{f}, nil
}

func (d DirFD) ReadFile(name string, max int) ([]byte, error) {
	f, err := d.OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f.f, int64(max)))
}

func (d DirFD) IsDirFollow(name string) bool {
	fi, err := os.Stat(d.join(name))
	return err == nil && fi.IsDir()
}

func (d DirFD) Entries(buf []byte) ([]DirEntry, []byte, error) {
	ents, err := os.ReadDir(d.path)
	out := make([]DirEntry, 0, len(ents))
	for _, e := range ents {
		t := e.Type()
		typ := EntryOther
		switch {
		case t.IsDir():
			typ = EntryDir
		case t.IsRegular():
			typ = EntryFile
		case t&os.ModeSymlink != 0:
			typ = EntrySymlink
		}
		out = append(out, DirEntry{e.Name(), typ})
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, buf, err
}

func (f SearchFD) Read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (f SearchFD) Close() { f.f.Close() }
