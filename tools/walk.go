package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// walker visits the files under a root the way ripgrep and fd do by
// default: depth first with the entries of each directory sorted by name
// (ripgrep's --sort path order), .gitignore/.ignore/.git/info/exclude
// honoured, hidden entries and the configured excludes skipped, symlinks
// neither followed nor reported, and everything the sandbox's deny rules
// name skipped. The root itself is never filtered.
type walker struct {
	ctx     context.Context
	sb      *Sandbox
	exclude []excludeRule
	// fileGlobs filter files (not directories): a file must match one
	// positive glob, if any, and no negative one. Globs with a slash are
	// matched against the path relative to the root.
	fileGlobs []fileGlob
	root      string
	frames    []ignoreFrame
	visit     func(abs string) bool // false stops the walk
}

type excludeRule struct {
	kind globKind
	lit  string
	pat  string
}

type fileGlob struct {
	pat    string
	negate bool
	path   bool // matched against the relative path
}

func newExcludes(names []string) []excludeRule {
	var out []excludeRule
	for _, n := range names {
		n = strings.Trim(n, "/")
		if n == "" || !doublestar.ValidatePattern(n) {
			continue
		}
		k, lit := classifyGlob(n)
		out = append(out, excludeRule{k, lit, n})
	}
	return out
}

func (w *walker) excluded(name string) bool {
	for _, e := range w.exclude {
		if matchGlob(e.kind, e.lit, e.pat, name) {
			return true
		}
	}
	return false
}

func (w *walker) globOK(abs, name string, isDir bool) bool {
	if len(w.fileGlobs) == 0 {
		return true
	}
	rel := ""
	positive, matched := false, false
	for _, g := range w.fileGlobs {
		s := name
		if g.path {
			if rel == "" {
				rel = strings.TrimPrefix(abs[len(w.root):], "/")
			}
			s = rel
		}
		ok, _ := doublestar.Match(g.pat, s)
		if g.negate {
			if ok {
				return false
			}
			continue
		}
		positive = true
		matched = matched || ok
	}
	return isDir || !positive || matched
}

// walk visits root (a directory) and returns false when stopped.
func (w *walker) walk() bool {
	w.frames = ancestorFrames(w.root)
	return w.dir(w.root)
}

func (w *walker) dir(dir string) bool {
	if w.ctx.Err() != nil {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true // unreadable directories are skipped, as ripgrep does
	}
	hasGit, hasIgn := false, false
	for _, e := range entries {
		switch e.Name() {
		case ".gitignore":
			hasGit = true
		case ".ignore":
			hasIgn = true
		}
	}
	pushed := false
	if hasGit || hasIgn {
		if fr, ok := loadIgnoreFrame(dir, hasGit, hasIgn, ""); ok {
			w.frames = append(w.frames, fr)
			pushed = true
		}
	}
	defer func() {
		if pushed {
			w.frames = w.frames[:len(w.frames)-1]
		}
	}()
	for _, e := range entries {
		name := e.Name()
		if name[0] == '.' || w.excluded(name) {
			continue
		}
		t := e.Type()
		isDir := t.IsDir()
		if !isDir && !t.IsRegular() {
			continue // symlinks are not followed; devices, FIFOs, sockets are not files
		}
		abs := dir + "/" + name
		if dir == "/" {
			abs = "/" + name
		}
		if len(w.frames) > 0 && ignored(w.frames, abs, name, isDir) {
			continue
		}
		if w.sb != nil && w.sb.deniedEntry(abs, name, isDir) {
			continue
		}
		if !w.globOK(abs, name, isDir) {
			continue
		}
		if isDir {
			if !w.dir(abs) {
				return false
			}
			continue
		}
		if !w.visit(abs) {
			return false
		}
	}
	return true
}

// newFileGlobs parses grep's glob input: `!` negates; a glob with a slash is
// matched against the path relative to the search root, else against the
// base name.
func newFileGlobs(globs ...string) ([]fileGlob, string) {
	var out []fileGlob
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		neg := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(strings.TrimPrefix(g, "!"), "./")
		if !doublestar.ValidatePattern(g) {
			return nil, g
		}
		out = append(out, fileGlob{pat: g, negate: neg, path: strings.Contains(g, "/")})
	}
	return out, ""
}

// searchRoot resolves grep's and find's path input against the work dir.
func searchRoot(call Call, path *string) (input, resolved string, isDir bool, err error) {
	input = "."
	if path != nil && *path != "" {
		input = *path
	}
	resolved, err = checkedRead(call, input)
	if err != nil {
		if strings.HasPrefix(err.Error(), "File not found") {
			err = pathNotFound(input)
		}
		return input, "", false, err
	}
	fi, serr := os.Stat(resolved)
	if serr != nil {
		return input, "", false, pathNotFound(input)
	}
	return input, filepath.Clean(resolved), fi.IsDir(), nil
}

type notFoundError string

func (e notFoundError) Error() string { return "Path not found: " + string(e) }

func pathNotFound(p string) error { return notFoundError(p) }
