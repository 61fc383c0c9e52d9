package sandbox

import (
	"os"
	"path/filepath"
)

// ExpandRoots expands configured roots as New expands sandbox.writable
// (urn:flemma:cwd, urn:flemma:buffer:path, `~`, $VAR, ${VAR:-default}) and
// resolves each (symlinks too), for roots that are read, not written
// (sandbox.readable, issue 28 item 6): "/" and the home directory are
// allowed here — naming them is how a user reads everywhere by policy. A
// root that names an unknown URN is returned in bad; one that does not
// resolve is left out.
func ExpandRoots(list []string, cwd, bufferPath string) (roots, bad []string) {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	cwd = filepath.Clean(cwd)
	home, _ := os.UserHomeDir()
	bufDir := ""
	if bufferPath != "" {
		bufDir = filepath.Dir(ResolvePath(bufferPath, cwd))
	}
	for _, w := range list {
		p, ok, err := expandRoot(w, cwd, bufDir, home)
		if err != nil {
			bad = append(bad, w)
			continue
		}
		if !ok {
			continue
		}
		if c, err := canonical(p); err == nil {
			roots = append(roots, c)
		}
	}
	return roots, bad
}

// Within reports whether the canonical path p is root or lies under it.
func Within(p, root string) bool { return within(p, root) }
