//go:build !linux

package tools

import (
	"io"
	"os"
)

type searchFD struct{ f *os.File }

func openSearch(p string) (searchFD, error) {
	f, err := os.Open(p)
	return searchFD{f}, err
}

func (f searchFD) read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (f searchFD) close() { f.f.Close() }
