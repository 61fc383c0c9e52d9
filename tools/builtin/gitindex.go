package builtin

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// gitTracked tells whether a file is tracked by the git repository that
// holds it, by reading the repository's index (format 2, 3 or 4, SHA-1 or
// SHA-256 object names) — never by running git, whose configuration could
// run code. Indexes are read once per repository.
type gitTracked struct {
	repos map[string]map[string]bool // repository top → tracked paths relative to it
}

func newGitTracked() *gitTracked { return &gitTracked{repos: map[string]map[string]bool{}} }

// has reports whether the absolute path p is in the index of its
// repository (false outside any, or when the index cannot be read).
func (g *gitTracked) has(p string) bool {
	top, gitDir := repoOf(p)
	if top == "" {
		return false
	}
	set, ok := g.repos[top]
	if !ok {
		set = readGitIndex(filepath.Join(gitDir, "index"), hashSize(gitDir))
		g.repos[top] = set
	}
	rel, err := filepath.Rel(top, p)
	return err == nil && set[filepath.ToSlash(rel)]
}

// repoOf is the nearest folder above p with a .git entry, and its git
// directory (a .git file's gitdir followed).
func repoOf(p string) (top, gitDir string) {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		g := filepath.Join(dir, ".git")
		if fi, err := os.Lstat(g); err == nil {
			if fi.IsDir() {
				return dir, g
			}
			b, err := os.ReadFile(g)
			if err != nil || len(b) > 4096 {
				return "", ""
			}
			t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return "", ""
			}
			t = strings.TrimSpace(t)
			if !filepath.IsAbs(t) {
				t = filepath.Join(dir, t)
			}
			return dir, filepath.Clean(t)
		}
		if filepath.Dir(dir) == dir {
			return "", ""
		}
	}
}

// hashSize is 32 when the repository's objects are named by SHA-256
// (extensions.objectformat), else 20.
func hashSize(gitDir string) int {
	config := filepath.Join(gitDir, "config")
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		config = filepath.Join(common, "config")
	}
	if b, err := os.ReadFile(config); err == nil && len(b) < 1<<20 {
		for _, line := range strings.Split(strings.ToLower(string(b)), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) == "sha256" {
				return 32
			}
		}
	}
	return 20
}

// readGitIndex lists the paths of an index file (nil when it cannot be
// read or parsed). Entries: ctime, mtime (8 each), dev, ino, mode, uid,
// gid, size (4 each), the object name, 16-bit flags, in version 3 and 4 a
// second 16-bit field when flags has the extended bit, then the path: NUL
// terminated and padded to a multiple of 8 bytes (versions 2, 3), or, in
// version 4, a varint of bytes to drop from the previous path and the rest
// NUL terminated.
func readGitIndex(path string, hash int) map[string]bool {
	f, err := sandbox.OpenNoFollow(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > 256<<20 {
		return nil
	}
	b, err := readAllFrom(f)
	if err != nil || len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version := binary.BigEndian.Uint32(b[4:])
	n := binary.BigEndian.Uint32(b[8:])
	if version < 2 || version > 4 {
		return nil
	}
	out := make(map[string]bool, n)
	off, prev := 12, ""
	fixed := 40 + hash + 2
	for i := uint32(0); i < n; i++ {
		start := off
		if off+fixed > len(b) {
			return nil
		}
		flags := binary.BigEndian.Uint16(b[off+40+hash:])
		off += fixed
		if version >= 3 && flags&0x4000 != 0 {
			off += 2
		}
		if off > len(b) {
			return nil
		}
		var name string
		if version == 4 {
			drop, k := gitVarint(b[off:])
			if k <= 0 || drop > uint64(len(prev)) {
				return nil
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil
			}
			name = prev[:len(prev)-int(drop)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil
			}
			name = string(b[off : off+end])
			// The entry is padded with 1 to 8 NULs to a multiple of 8.
			entry := off + end - start
			off = start + (entry+8)&^7
		}
		out[name] = true
		prev = name
	}
	return out
}

func readAllFrom(f *os.File) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(f)
	return buf.Bytes(), err
}

// gitVarint decodes git's offset varint (varint.c): big-endian groups of
// seven bits, each continuation adding one; k is the bytes read, 0 on
// error.
func gitVarint(b []byte) (v uint64, k int) {
	for i, c := range b {
		if i == 0 {
			v = uint64(c & 127)
		} else {
			v = (v+1)<<7 | uint64(c&127)
		}
		if c&128 == 0 {
			return v, i + 1
		}
		if i > 9 {
			return 0, 0
		}
	}
	return 0, 0
}
