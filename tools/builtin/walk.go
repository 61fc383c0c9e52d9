package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// walker visits the files under a root the way ripgrep and fd do by
// default: depth first with the entries of each directory sorted by name
// (ripgrep's --sort path order), .gitignore/.ignore/.git/info/exclude
// honoured, hidden entries and the configured excludes skipped, symlinks
// neither followed nor reported, and everything the sandbox's deny rules
// name skipped. The root itself is never filtered.
//
// Every directory is opened relative to its parent's open descriptor, never
// through a symlink, and grep opens each file relative to its directory's
// descriptor the same way (search_linux.go): a directory swapped for a
// symlink while the walk runs is skipped, not followed, and the paths the
// deny rules judge are the paths of what is opened.
type walker struct {
	ctx     context.Context
	sb      *sandbox.Sandbox
	exclude []excludeRule
	// fileGlobs filter files (not directories): a file must match one
	// positive glob, if any, and no negative one. Globs with a slash are
	// matched against the path relative to the root.
	fileGlobs []fileGlob
	root      string
	frames    []ignoreFrame
	// visit is called for each file, named name in dir (whose path is
	// abs); false stops the walk. It may keep dir (retain) to open the
	// file later.
	visit   func(dir *walkDir, name, abs string) bool
	rootErr error  // the root could not be opened
	buf     []byte // getdents scratch space
}

type excludeRule struct {
	kind sandbox.GlobKind
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
		k, lit := sandbox.ClassifyGlob(n)
		out = append(out, excludeRule{k, lit, n})
	}
	return out
}

func (w *walker) excluded(name string) bool {
	for _, e := range w.exclude {
		if sandbox.MatchGlob(e.kind, e.lit, e.pat, name) {
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

// walkDir is a directory of a walk, held open while anything still needs
// to open an entry of it: the walker while it lists and descends, and grep's
// workers until they have opened its files (one reference each).
type walkDir struct {
	fd   sandbox.DirFD
	abs  string
	refs atomic.Int32
}

func newWalkDir(fd sandbox.DirFD, abs string) *walkDir {
	d := &walkDir{fd: fd, abs: abs}
	d.refs.Store(1)
	return d
}

func (d *walkDir) retain() { d.refs.Add(1) }

func (d *walkDir) release() {
	if d.refs.Add(-1) == 0 {
		d.fd.Close()
	}
}

// testHookBeforeOpen, when set, is called with the path of every directory
// a walk (grep, find, ls) is about to open and every file grep is about to
// open, after the listing that found it: tests swap things in there.
var testHookBeforeOpen func(abs string)

// errRootChanged: the search root could not be opened without following a
// symlink — it changed after it was checked.
var errRootChanged = errors.New("the path changed during the search (a directory was replaced by a symlink)")

// walk visits root (a directory) and returns false when stopped. A root
// that cannot be opened sets rootErr.
func (w *walker) walk() bool {
	w.frames = ancestorFrames(w.root)
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(w.root)
	}
	fd, err := sandbox.OpenRootDir(w.root)
	if err != nil {
		w.rootErr = walkOpenError(err)
		return true
	}
	return w.dir(newWalkDir(fd, w.root))
}

func walkOpenError(err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, sandbox.ErrSymlink) {
		return errRootChanged
	}
	return err
}

// dir walks d, then releases it. Subdirectories are opened relative to d,
// never through a symlink: one swapped in after the listing is skipped.
func (w *walker) dir(d *walkDir) bool {
	defer d.release()
	if w.ctx.Err() != nil {
		return false
	}
	entries, buf, err := d.fd.Entries(w.buf)
	w.buf = buf
	if err != nil {
		return true // unreadable directories are skipped, as ripgrep does
	}
	hasGit, hasIgn := false, false
	for _, e := range entries {
		switch e.Name {
		case ".gitignore":
			hasGit = true
		case ".ignore":
			hasIgn = true
		}
	}
	pushed := false
	if hasGit || hasIgn {
		if fr, ok := loadIgnoreFrame(d.fd, d.abs, hasGit, hasIgn, nil); ok {
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
		name := e.Name
		if name[0] == '.' || w.excluded(name) {
			continue
		}
		isDir := e.Type == sandbox.EntryDir
		if !isDir && e.Type != sandbox.EntryFile {
			continue // symlinks are not followed; devices, FIFOs, sockets are not files
		}
		abs := d.abs + "/" + name
		if d.abs == "/" {
			abs = "/" + name
		}
		if len(w.frames) > 0 && ignored(w.frames, abs, name, isDir) {
			continue
		}
		if w.sb != nil && w.sb.DeniedEntry(abs, name, isDir) {
			continue
		}
		if !w.globOK(abs, name, isDir) {
			continue
		}
		if isDir {
			if testHookBeforeOpen != nil {
				testHookBeforeOpen(abs)
			}
			sub, err := d.fd.OpenDir(name)
			if err != nil {
				continue // replaced by a symlink or a file since the listing, or unreadable
			}
			if !w.dir(newWalkDir(sub, abs)) {
				return false
			}
			continue
		}
		if !w.visit(d, name, abs) {
			return false
		}
	}
	return true
}

// openRel opens the directory rel (slash-separated, below d) one component
// at a time, never through a symlink.
func openRel(d sandbox.DirFD, rel string) (sandbox.DirFD, error) {
	cur := d
	for _, c := range strings.Split(strings.Trim(rel, "/"), "/") {
		next, err := cur.OpenDir(c)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return next, err
		}
		cur = next
	}
	return cur, nil
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
func searchRoot(call tools.Call, path *string) (input, resolved string, isDir bool, err error) {
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

// displayPath shows an absolute path relative to dir when it lies under it,
// else as is.
func displayPath(abs, dir string) string {
	if abs == dir {
		return "."
	}
	if rel, ok := strings.CutPrefix(abs, dir); ok && (strings.HasPrefix(rel, "/") || dir == "/") {
		return strings.TrimPrefix(rel, "/")
	}
	return abs
}
