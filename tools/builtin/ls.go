package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"
	"syscall"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// LsInput is the input of ls (reference §7.7).
type LsInput struct {
	Label    string   `json:"label" desc:"A short human-readable label for this operation"`
	Limit    *float64 `json:"limit" desc:"Maximum number of entries to return (default: 500)"`
	MaxDepth *float64 `json:"max_depth" desc:"How many directory levels to list (default: 1, max: 10)"`
	Path     string   `json:"path" desc:"Directory to list, absolute or relative to the chat file's directory"`
}

// Ls is the ls built-in: directories first (with a trailing /), then files,
// each sorted case-insensitively, up to a depth and a limit.
func Ls() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:         "ls",
		Capabilities: []string{tools.CapReadsPath},
		Truncates:    true,
		Description: "List a directory: directories first (ending in /), then files, sorted. Hidden entries are included. " +
			"max_depth lists subdirectories too (paths relative to the listed directory); symlinks are not followed.",
		Tags:    []string{"filesystem", "readonly"},
		Enabled: true,
	}, runLs)
}

func runLs(ctx context.Context, call tools.Call, in LsInput) (tools.Output, error) {
	if in.Path == "" {
		return tools.Output{}, tools.Failf("No path provided")
	}
	resolved, root, err := openListed(call, in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	defer root.Close()
	depth, limit := lsBounds(in)
	sb, _ := call.Env.SandboxFor(call)
	l := lister{root: root, sb: sb, depth: depth, limit: limit}
	if err := l.list(ctx, resolved); err != nil {
		return tools.Output{}, err
	}
	if len(l.dirs)+len(l.files) == 0 {
		return tools.Output{Text: "(empty directory)"}, nil
	}
	return tools.Output{Text: lsText(l.dirs, l.files, depth, l.more, call.Env)}, nil
}

// openListed checks that the sandbox lets tools read path and opens the
// directory there: the listed directory and everything below it are
// opened relative to it, never through a symlink (see search_linux.go).
func openListed(call tools.Call, path string) (string, sandbox.DirFD, error) {
	var root sandbox.DirFD
	resolved, err := checkedRead(call, path)
	if err != nil {
		if strings.HasPrefix(err.Error(), "File not found") {
			return "", root, tools.Failf("Directory not found: %s", path)
		}
		return "", root, err
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(resolved)
	}
	root, err = sandbox.OpenRootDir(resolved)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrNotExist) {
			return "", root, tools.Failf("Directory not found: %s", path)
		}
		if errors.Is(walkOpenError(err), errRootChanged) {
			return "", root, tools.Failf("Cannot list %s: %v", path, errRootChanged)
		}
		return "", root, ioError("list", err)
	}
	return resolved, root, nil
}

// lsBounds is how many levels to list (1 to 10, default 1) and how many
// entries (at least 1, default 500).
func lsBounds(in LsInput) (depth, limit int) {
	depth = 1
	if in.MaxDepth != nil {
		depth = int(math.Max(1, math.Floor(*in.MaxDepth)))
	}
	depth = min(depth, 10)
	limit = 500
	if in.Limit != nil {
		limit = int(math.Max(1, math.Floor(*in.Limit)))
	}
	return depth, limit
}

// lsLevel is a directory to list: its path relative to the listed one
// ("" for that one, else ending in "/"), its absolute path, its level.
type lsLevel struct {
	rel, abs string
	depth    int
}

// lister lists a directory breadth first, level by level down to depth,
// until it has limit entries (more: there were more).
type lister struct {
	root         sandbox.DirFD
	sb           *sandbox.Sandbox
	depth, limit int
	dirs, files  []string // relative paths; dirs end in "/"
	more         bool
	buf          []byte
	queue        []lsLevel
}

func (l *lister) list(ctx context.Context, resolved string) error {
	l.queue = []lsLevel{{"", resolved, 1}}
	for len(l.queue) > 0 && !l.more {
		if err := ctx.Err(); err != nil {
			return err
		}
		lv := l.queue[0]
		l.queue = l.queue[1:]
		if err := l.level(lv); err != nil {
			return err
		}
	}
	return nil
}

// level lists the directory lv. A subdirectory that cannot be opened or
// read (replaced by a symlink since it was listed, or unreadable) is
// skipped; the listed directory itself unreadable is an error.
func (l *lister) level(lv lsLevel) error {
	d := l.root
	if lv.rel != "" {
		// Reopened from the root, component by component: only the
		// root stays open however wide the listing.
		if testHookBeforeOpen != nil {
			testHookBeforeOpen(lv.abs)
		}
		var err error
		if d, err = openRel(l.root, lv.rel); err != nil {
			return nil
		}
		defer d.Close()
	}
	var entries []sandbox.DirEntry
	var err error
	entries, l.buf, err = d.Entries(l.buf)
	if err != nil {
		if lv.depth == 1 {
			return ioError("list", err)
		}
		return nil
	}
	for _, e := range entries {
		if len(l.dirs)+len(l.files) == l.limit {
			l.more = true
			break
		}
		l.add(d, lv, e)
	}
	return nil
}

// add lists the entry e of the directory d (lv): a symlink as a directory
// or a file by what it points to, never followed; a directory is queued
// when above depth and not denied by the sandbox.
func (l *lister) add(d sandbox.DirFD, lv lsLevel, e sandbox.DirEntry) {
	rel, abs := lv.rel+e.Name, lv.abs+"/"+e.Name
	if lv.abs == "/" {
		abs = "/" + e.Name
	}
	switch {
	case e.Type == sandbox.EntrySymlink:
		if d.IsDirFollow(e.Name) {
			l.dirs = append(l.dirs, rel+"/")
		} else {
			l.files = append(l.files, rel)
		}
	case e.Type != sandbox.EntryDir:
		l.files = append(l.files, rel)
	default:
		l.dirs = append(l.dirs, rel+"/")
		if lv.depth < l.depth && (l.sb == nil || !l.sb.DeniedEntry(abs, e.Name, true)) {
			l.queue = append(l.queue, lsLevel{rel + "/", abs, lv.depth + 1})
		}
	}
}

// lsText is the listing: directories then files, each sorted
// case-insensitively, truncated to the Env's limits, and a footer that
// counts them and says the depth, the limit reached and the truncation.
func lsText(dirs, files []string, depth int, more bool, env *tools.Env) string {
	sortCaseless(dirs)
	sortCaseless(files)
	lines := make([]string, 0, len(dirs)+len(files))
	for _, s := range append(dirs, files...) {
		lines = append(lines, tools.TruncateLine(s, tools.MaxLineBytes))
	}
	n := len(lines)
	t := tools.TruncateHead(tools.Finish(strings.Join(lines, "\n"), env), env.Limits())
	footer := fmt.Sprintf("%d entries", n)
	if depth > 1 {
		footer += fmt.Sprintf(", depth=%d", depth)
	}
	if more {
		footer += ", limit reached"
	}
	if t.Truncated {
		footer += fmt.Sprintf("; output truncated to %d lines", t.OutputLines)
	}
	return t.Content + "\n\n[" + footer + "]"
}

// sortCaseless sorts s case-insensitively; names that differ only in case
// in byte order.
func sortCaseless(s []string) {
	sort.Slice(s, func(i, j int) bool {
		a, b := strings.ToLower(s[i]), strings.ToLower(s[j])
		if a != b {
			return a < b
		}
		return s[i] < s[j]
	})
}
