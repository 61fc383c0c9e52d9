package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Bounds of the file tracking of a sandboxed bash.
const (
	maxTrackEntries = 20000 // entries walked in the writable roots, before and after
	maxTrackListed  = 50    // files named per kind (created, changed, deleted) in the result
	maxTrackHashed  = 200   // created files hashed to be undoable
)

// fileMeta is what tracking compares: a file whose modification time,
// size or inode differs after the command was changed by it (or meanwhile).
type fileMeta struct {
	mtime int64
	size  int64
	ino   uint64
	mode  fs.FileMode
}

// rootSnapshot is the metadata of the regular files and symbolic links
// under the tracked roots; cut is set when the bound was reached.
type rootSnapshot struct {
	files map[string]fileMeta
	cut   bool
}

// trackedRoots are the folders a bash's file changes are tracked in: the
// writable roots but the temporary folder (other programs write there all
// the time), plus the chat's and the command's folders when they lie in a
// root (in the temporary folder, say), none inside another.
func trackedRoots(roots []string, dirs ...string) []string {
	tmp := sandbox.CanonicalOr(os.TempDir())
	within := func(p, root string) bool {
		return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
	}
	var cands []string
	for _, r := range roots {
		if r != tmp && r != "/" {
			cands = append(cands, r)
		}
	}
	for _, d := range dirs {
		if d == "" || d == "/" || d == tmp {
			continue
		}
		for _, r := range roots {
			if within(d, r) {
				cands = append(cands, d)
				break
			}
		}
	}
	sort.Strings(cands)
	var out []string
	for _, r := range cands {
		if len(out) == 0 || !within(r, out[len(out)-1]) {
			out = append(out, r)
		}
	}
	return out
}

// snapshotRoots walks the roots without following symbolic links,
// recording at most maxTrackEntries files; folders in skip (flemma's own
// state and output, which the host writes meanwhile) are left out.
func snapshotRoots(roots, skip []string) rootSnapshot {
	s := rootSnapshot{files: map[string]fileMeta{}}
	n := 0
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: not tracked
			}
			if n++; n > maxTrackEntries {
				s.cut = true
				return filepath.SkipAll
			}
			if d.IsDir() {
				for _, k := range skip {
					if p == k {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if t := d.Type(); !t.IsRegular() && t&fs.ModeSymlink == 0 {
				return nil // FIFOs, sockets, devices: not files a command makes
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			s.files[p] = fileMeta{mtime: info.ModTime().UnixNano(), size: info.Size(), ino: inodeOf(info), mode: info.Mode().Type()}
			return nil
		})
		if s.cut {
			break
		}
	}
	return s
}

// fileChanges is what a command did to the tracked files.
type fileChanges struct {
	created, changed, deleted []string
	cut                       bool
}

func compareSnapshots(before, after rootSnapshot) fileChanges {
	var c fileChanges
	c.cut = before.cut || after.cut
	for p, a := range after.files {
		b, ok := before.files[p]
		switch {
		case !ok:
			c.created = append(c.created, p)
		case a != b:
			c.changed = append(c.changed, p)
		}
	}
	for p := range before.files {
		if _, ok := after.files[p]; !ok {
			c.deleted = append(c.deleted, p)
		}
	}
	sort.Strings(c.created)
	sort.Strings(c.changed)
	sort.Strings(c.deleted)
	return c
}

func (c fileChanges) empty() bool {
	return len(c.created)+len(c.changed)+len(c.deleted) == 0
}

// text lists the changes for the result, paths relative to dir when
// inside it, at most maxTrackListed per kind.
func (c fileChanges) text(dir string) string {
	if c.empty() && !c.cut {
		return ""
	}
	var b strings.Builder
	b.WriteString("Files in the writable roots the command changed:")
	if c.empty() {
		b.WriteString(" none seen")
	}
	for _, k := range []struct {
		name  string
		paths []string
	}{{"created", c.created}, {"changed", c.changed}, {"deleted", c.deleted}} {
		if len(k.paths) == 0 {
			continue
		}
		shown := k.paths
		if len(shown) > maxTrackListed {
			shown = shown[:maxTrackListed]
		}
		names := make([]string, len(shown))
		for i, p := range shown {
			names[i] = p
			if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
				names[i] = rel
			}
		}
		fmt.Fprintf(&b, "\n  %s: %s", k.name, strings.Join(names, ", "))
		if more := len(k.paths) - len(shown); more > 0 {
			fmt.Fprintf(&b, " (and %d more)", more)
		}
	}
	if c.cut {
		fmt.Fprintf(&b, "\n  (only the first %d entries of the writable roots were compared)", maxTrackEntries)
	}
	return b.String()
}

// undoable are the Changes of the files the command created (regular
// files, hashed now): :Flemma tool:undo removes them while they still
// hold that content. Changed and deleted files have no backup.
func (c fileChanges) undoable() []tools.Change {
	var out []tools.Change
	for _, p := range c.created {
		if len(out) >= maxTrackHashed {
			break
		}
		f, err := sandbox.OpenNoFollow(p)
		if err != nil {
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, onlyReader{f})
		f.Close()
		if err != nil {
			continue
		}
		out = append(out, tools.Change{Path: p, Before: tools.BackupAbsent, After: hex.EncodeToString(h.Sum(nil))})
	}
	return out
}
