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
	resolved, err := checkedRead(call, in.Path)
	if err != nil {
		if strings.HasPrefix(err.Error(), "File not found") {
			return tools.Output{}, tools.Failf("Directory not found: %s", in.Path)
		}
		return tools.Output{}, err
	}
	// The listed directory and everything below it are opened relative to
	// it, never through a symlink (see search_linux.go).
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(resolved)
	}
	root, err := sandbox.OpenRootDir(resolved)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrNotExist) {
			return tools.Output{}, tools.Failf("Directory not found: %s", in.Path)
		}
		if errors.Is(walkOpenError(err), errRootChanged) {
			return tools.Output{}, tools.Failf("Cannot list %s: %v", in.Path, errRootChanged)
		}
		return tools.Output{}, ioError("list", err)
	}
	defer root.Close()
	depth := 1
	if in.MaxDepth != nil {
		depth = int(math.Max(1, math.Floor(*in.MaxDepth)))
	}
	depth = min(depth, 10)
	limit := 500
	if in.Limit != nil {
		limit = int(math.Max(1, math.Floor(*in.Limit)))
	}
	sb, _ := call.Env.SandboxFor(call)

	type level struct {
		rel, abs string
		depth    int
	}
	var dirs, files []string
	more := false
	var buf []byte
	queue := []level{{"", resolved, 1}}
	for len(queue) > 0 && !more {
		if err := ctx.Err(); err != nil {
			return tools.Output{}, err
		}
		lv := queue[0]
		queue = queue[1:]
		d := root
		if lv.rel != "" {
			// Reopened from the root, component by component: only the
			// root stays open however wide the listing.
			if testHookBeforeOpen != nil {
				testHookBeforeOpen(lv.abs)
			}
			if d, err = openRel(root, lv.rel); err != nil {
				continue // replaced by a symlink since the listing, or unreadable
			}
		}
		var entries []sandbox.DirEntry
		entries, buf, err = d.Entries(buf)
		if err != nil {
			if d != root {
				d.Close()
			}
			if lv.depth == 1 {
				return tools.Output{}, ioError("list", err)
			}
			continue // an unreadable subdirectory is skipped
		}
		for _, e := range entries {
			if len(dirs)+len(files) == limit {
				more = true
				break
			}
			rel, abs := lv.rel+e.Name, lv.abs+"/"+e.Name
			if lv.abs == "/" {
				abs = "/" + e.Name
			}
			if e.Type == sandbox.EntrySymlink {
				if d.IsDirFollow(e.Name) {
					dirs = append(dirs, rel+"/")
				} else {
					files = append(files, rel)
				}
				continue // never followed
			}
			if e.Type != sandbox.EntryDir {
				files = append(files, rel)
				continue
			}
			dirs = append(dirs, rel+"/")
			if lv.depth < depth && (sb == nil || !sb.DeniedEntry(abs, e.Name, true)) {
				queue = append(queue, level{rel + "/", abs, lv.depth + 1})
			}
		}
		if d != root {
			d.Close()
		}
	}
	if len(dirs)+len(files) == 0 {
		return tools.Output{Text: "(empty directory)"}, nil
	}
	caseless := func(s []string) {
		sort.Slice(s, func(i, j int) bool {
			a, b := strings.ToLower(s[i]), strings.ToLower(s[j])
			if a != b {
				return a < b
			}
			return s[i] < s[j]
		})
	}
	caseless(dirs)
	caseless(files)
	lines := make([]string, 0, len(dirs)+len(files))
	for _, s := range append(dirs, files...) {
		lines = append(lines, tools.TruncateLine(s, tools.MaxLineBytes))
	}
	n := len(lines)
	t := tools.TruncateHead(tools.Finish(strings.Join(lines, "\n"), call.Env), call.Env.Limits())
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
	return tools.Output{Text: t.Content + "\n\n[" + footer + "]"}, nil
}
