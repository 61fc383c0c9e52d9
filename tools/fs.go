package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"syscall"
)

// errPathChanged: between the sandbox check and the open, a component of the
// checked path became a symlink (or stopped being a directory). Nothing is
// read or written through it.
var errPathChanged = errors.New("the path changed while it was being used (a directory was replaced by a symlink); nothing was done")

// errIsDir: the target of a write is a directory.
var errIsDir = errors.New("is a directory")

// errRootReplaced: the writable root holding the path is no longer the
// directory the sandbox resolved (it was replaced by another one).
var errRootReplaced = errors.New("the writable root was replaced by another directory since the sandbox checked it; nothing was done")

// errChangedMeanwhile: the file changed on disk between the moment a tool
// read it and the moment it would have replaced it.
var errChangedMeanwhile = errors.New("the file changed on disk while it was being written (another program changed it); nothing was written: read it again")

// fileStamp identifies one state of a file cheaply: which file (device and
// inode), its type and permissions, size, and modification and change
// times. Any write to the file or replacement of it changes the stamp (the
// change time cannot be set back by a program).
type fileStamp struct {
	id           fileID
	mode         uint32
	size         int64
	mtime, ctime int64
}

// prior is what writeFileAtomic expects at the path just before it renames
// the new content into place: nothing (absent), or the file a tool read
// (stamp). The zero value checks nothing.
type prior struct {
	check  bool
	absent bool
	stamp  fileStamp
}

// rootRef names the writable root a write must go through, with the
// identity it had when the sandbox resolved it (ok false: no check).
type rootRef struct {
	path string
	id   fileID
	ok   bool
}

// Test hooks: called between the sandbox check and the write, and between
// writing the temporary file and renaming it into place.
var (
	testHookAfterCheck   func(resolved string)
	testHookBeforeRename func(resolved string)
)

// fsReason turns a filesystem error into words for the model — the kind of
// failure, never a path or Go's wording — or "" when the error is
// unexpected (the caller then reports it as Internal).
func fsReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, errPathChanged), errors.Is(err, errIsDir), errors.Is(err, errRootReplaced),
		errors.Is(err, errChangedMeanwhile), errors.Is(err, errNotRegular):
		return err.Error()
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return ""
}

// tempName is the name of the temporary file that becomes name on rename.
func tempName(name string) string {
	var r [6]byte
	rand.Read(r[:])
	if len(name) > 200 {
		name = name[:200]
	}
	return "." + name + ".flemma-" + hex.EncodeToString(r[:]) + ".tmp"
}
