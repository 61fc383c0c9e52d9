package sandbox

import "errors"

// EntryType is what a directory entry is, as listed.
type EntryType uint8

type DirEntry struct {
	Name string
	Type EntryType
}

// ErrNotFile: a walk found something else than a regular file where it
// opens one.
var ErrNotFile = errors.New("not a regular file")

// ErrSymlink: a path-based walk (systems without openat) found a symlink
// where it opens a directory or a file.
var ErrSymlink = errors.New("is a symlink")

const (
	EntryOther EntryType = iota // device, FIFO, socket, unknown
	EntryFile
	EntryDir
	EntrySymlink
)
