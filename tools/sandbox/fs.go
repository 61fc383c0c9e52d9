package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"syscall"
)

// ErrPathChanged: between the sandbox check and the open, a component of the
// checked path became a symlink (or stopped being a directory). Nothing is
// read or written through it.
var ErrPathChanged = errors.New("the path changed while it was being used (a directory was replaced by a symlink); nothing was done")

// ErrIsDir: the target of a write is a directory.
var ErrIsDir = errors.New("is a directory")

// ErrRootReplaced: the writable root holding the path is no longer the
// directory the sandbox resolved (it was replaced by another one).
var ErrRootReplaced = errors.New("the writable root was replaced by another directory since the sandbox checked it; nothing was done")

// ErrChangedMeanwhile: the file changed on disk between the moment a tool
// read it and the moment it would have replaced it.
var ErrChangedMeanwhile = errors.New("the file changed on disk while it was being written (another program changed it); nothing was written: read it again")

// FileStamp identifies one state of a file cheaply: which file (device and
// inode), its type and permissions, size, and modification and change
// times. Any write to the file or replacement of it changes the stamp (the
// change time cannot be set back by a program).
type FileStamp struct {
	id           fileID
	mode         uint32
	size         int64
	mtime, ctime int64
}

// Prior is what writeFileAtomic expects at the path just before it renames
// the new content into place: nothing (absent), or the file a tool read
// (stamp). The zero value checks nothing.
type Prior struct {
	Check  bool
	Absent bool
	Stamp  FileStamp
}

// RootRef names the writable root a write must go through, with the
// identity it had when the sandbox resolved it (ok false: no check).
type RootRef struct {
	path string
	id   fileID
	ok   bool
}

// FSReason turns a filesystem error into words for the model — the kind of
// failure, never a path or Go's wording — or "" when the error is
// unexpected (the caller then reports it as Internal).
func FSReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, ErrPathChanged), errors.Is(err, ErrIsDir), errors.Is(err, ErrRootReplaced),
		errors.Is(err, ErrChangedMeanwhile), errors.Is(err, ErrNotRegular):
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

// ErrNotRegular: the path is a FIFO, device or socket; reading it could
// block forever.
var ErrNotRegular = errors.New("not a regular file")
