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
	maxTrackHashed  = 200   // created and changed files hashed to be undoable

	maxTrackHashBytes = 256 << 20 // bytes hashed after the command
)

// fileMeta is what tracking compares: a file whose modification or change
// time, size, inode or mode differs after the command was changed by it (or
// meanwhile). The change time cannot be set back by a program, so a
// command that restores the modification time is still seen.
type fileMeta struct {
	mtime int64
	ctime int64
	size  int64
	ino   uint64
	mode  fs.FileMode
}

func metaOf(info fs.FileInfo) fileMeta {
	return fileMeta{mtime: info.ModTime().UnixNano(), ctime: ctimeOf(info), size: info.Size(), ino: inodeOf(info), mode: info.Mode()}
}

// rootSnapshot is the metadata of the regular files and symbolic links
// under the tracked roots; cut is set when the bound was reached. denied
// are the files a deny_read rule matches (themselves or a folder above
// them): their content is never copied (see preserveFiles).
type rootSnapshot struct {
	files  map[string]fileMeta
	denied map[string]bool
	links  map[string]linkBefore // symbolic link → its target, when read (see readLinks)
	cut    bool
}

// linkBefore is a symbolic link as it was before the command: its target
// and the identity of its folder.
type linkBefore struct {
	target string
	dir    dirID
}

// dirID is a folder's identity: its device and inode.
type dirID struct{ dev, ino uint64 }

// readLinks reads the target of every symbolic link of s, and its
// folder's identity, so that one a command replaced or removed can be put
// back, in that same folder only (see guardProtected).
func (s *rootSnapshot) readLinks() {
	var ps []string
	for p, m := range s.files {
		if m.isSymlink() {
			ps = append(ps, p)
		}
	}
	s.links = readLinksIn(ps)
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
// state and output, which the host writes meanwhile) are left out. denied,
// when set, tells the entries a deny_read rule matches (see
// sandbox.DeniedEntry): the files under such a folder are marked denied
// too.
func snapshotRoots(roots, skip []string, denied func(abs, name string, isDir bool) bool) rootSnapshot {
	s := rootSnapshot{files: map[string]fileMeta{}, denied: map[string]bool{}}
	n := 0
	deniedDir := "" // the denied folder the walk is in, if any
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: not tracked
			}
			if n++; n > maxTrackEntries {
				s.cut = true
				return filepath.SkipAll
			}
			if deniedDir != "" && !strings.HasPrefix(p, deniedDir+"/") {
				deniedDir = ""
			}
			if d.IsDir() {
				for _, k := range skip {
					if p == k {
						return filepath.SkipDir
					}
				}
				if deniedDir == "" && denied != nil && denied(p, d.Name(), true) {
					deniedDir = p
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
			s.files[p] = metaOf(info)
			if deniedDir != "" || denied != nil && denied(p, d.Name(), false) {
				s.denied[p] = true
			}
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
	why                       map[string]string // path → why it is not undoable (see undoable)
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
			if w := c.why[p]; w != "" {
				names[i] += " (not undoable: " + w + ")"
			}
		}
		fmt.Fprintf(&b, "\n  %s: %s", k.name, strings.Join(names, ", "))
		if more := len(k.paths) - len(shown); more > 0 {
			fmt.Fprintf(&b, " (and %d more)", more)
		}
	}
	if hidden := c.hiddenNotUndoable(); hidden > 0 {
		fmt.Fprintf(&b, "\n  (%d of the files not named are not undoable)", hidden)
	}
	if c.cut {
		fmt.Fprintf(&b, "\n  (only the first %d entries of the writable roots were compared)", maxTrackEntries)
	}
	return b.String()
}

// hiddenNotUndoable counts the files past the names listed that are not
// undoable.
func (c fileChanges) hiddenNotUndoable() int {
	n := 0
	for _, paths := range [][]string{c.created, c.changed, c.deleted} {
		if len(paths) > maxTrackListed {
			for _, p := range paths[maxTrackListed:] {
				if c.why[p] != "" {
					n++
				}
			}
		}
	}
	return n
}

// undoable are the Changes :Flemma tool:undo takes back (see Undo): the
// files the command created (removed while they hold what it wrote), and
// the regular files it changed or deleted whose previous content pre holds
// (put back while they hold what it wrote, or while nothing is at the path
// again). It records in c.why why each other file is not undoable.
func (c *fileChanges) undoable(before, after rootSnapshot, pre preimages, cfg backupConfig) []tools.Change {
	c.why = map[string]string{}
	var out []tools.Change
	hashed, hashedBytes := 0, int64(0)
	hash := func(p string) (string, string) {
		m := after.files[p]
		if hashed >= maxTrackHashed || hashedBytes+m.size > maxTrackHashBytes {
			return "", "too many files to hash after the command"
		}
		hashed++
		hashedBytes += m.size
		f, err := sandbox.OpenNoFollow(p)
		if err != nil {
			return "", "could not be read after the command"
		}
		defer f.Close()
		h := sha256.New()
		buf := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(h, onlyReader{f}, *buf)
		copyBufs.Put(buf)
		if err != nil {
			return "", "could not be read after the command"
		}
		return hex.EncodeToString(h.Sum(nil)), ""
	}
	for _, p := range c.created {
		if after.files[p].isSymlink() {
			c.why[p] = "a symbolic link"
			continue
		}
		sum, why := hash(p)
		if why != "" {
			c.why[p] = why
			continue
		}
		out = append(out, tools.Change{Path: p, Before: tools.BackupAbsent, After: sum})
	}
	// Changed and deleted files: the blobs of their previous content must
	// still be in the store; they are marked as recent.
	var dir *backupDir
	if len(c.changed)+len(c.deleted) > 0 && len(pre.blob) > 0 {
		if d, err := openBackupDir(cfg.dir); err == nil {
			dir = d
			defer dir.close()
		}
	}
	kept := func(p string) (string, bool) {
		b := before.files[p]
		switch {
		case b.isSymlink():
			c.why[p] = "a symbolic link"
			return "", false
		case pre.blob[p] == "":
			c.why[p] = pre.reason(p)
			return "", false
		case dir == nil || dir.touch(pre.blob[p]) != nil:
			c.why[p] = "its backup is no longer kept"
			return "", false
		}
		return pre.blob[p], true
	}
	for _, p := range c.changed {
		if after.files[p].isSymlink() {
			c.why[p] = "now a symbolic link"
			continue
		}
		blob, ok := kept(p)
		if !ok {
			continue
		}
		sum, why := hash(p)
		if why != "" {
			c.why[p] = why
			continue
		}
		out = append(out, tools.Change{Path: p, Before: blob, After: sum})
	}
	for _, p := range c.deleted {
		blob, ok := kept(p)
		if !ok {
			continue
		}
		out = append(out, tools.Change{Path: p, Before: blob, After: tools.BackupAbsent, Mode: uint32(before.files[p].mode.Perm())})
	}
	return out
}
