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
	case errors.Is(err, errPathChanged), errors.Is(err, errIsDir), errors.Is(err, errRootReplaced):
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
