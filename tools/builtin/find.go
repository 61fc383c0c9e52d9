package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// FindInput is the input of find (reference §7.6).
type FindInput struct {
	Label   string   `json:"label" desc:"A short human-readable label for this operation"`
	Limit   *float64 `json:"limit" desc:"Maximum number of results (default: 500)"`
	Path    *string  `json:"path" desc:"Directory to search in (default: the chat file's directory)"`
	Pattern string   `json:"pattern" desc:"Glob for file names, e.g. *.lua; a glob with a slash matches the path below the search directory, e.g. src/**/*.tsx"`
}

// Find is the find built-in, implemented in Go with fd's defaults
// (gitignore-aware, hidden files skipped, symlinks not followed); the
// output is sorted.
func Find() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:         "find",
		Capabilities: []string{tools.CapReadsPath},
		Truncates:    true,
		Description: "Find files by glob, like fd: .gitignore/.ignore are respected and hidden files skipped. " +
			"A pattern without a slash matches file names (*.go), one with a slash the path below the search directory (src/**/*.ts). " +
			"Paths are relative to the chat file's directory, sorted; at most limit results (default 500).",
		Tags:    []string{"filesystem", "readonly", "search"},
		Async:   true,
		Enabled: true,
	}, runFind)
}

func runFind(ctx context.Context, call tools.Call, in FindInput) (tools.Output, error) {
	started := time.Now()
	pattern := strings.TrimPrefix(strings.TrimSpace(in.Pattern), "./")
	if pattern == "" {
		return tools.Output{}, tools.Failf("No pattern provided")
	}
	if !doublestar.ValidatePattern(pattern) {
		return tools.Output{}, tools.Failf("Invalid pattern: %s is not a valid glob (check its brackets and braces)", in.Pattern)
	}
	limit := 500
	if in.Limit != nil {
		limit = int(math.Max(1, math.Floor(*in.Limit)))
	}
	input, root, isDir, err := searchRoot(call, in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	if !isDir {
		return tools.Output{}, tools.Failf("Not a directory: %s (find searches directories; use read for a file)", *in.Path)
	}
	sb, _ := call.Env.SandboxFor(call)
	byPath := strings.Contains(pattern, "/")
	kind, lit := sandbox.ClassifyGlob(pattern)
	var found []string
	limited := false
	w := &walker{ctx: ctx, sb: sb, exclude: newExcludes(call.Env.ExcludeOrDefault()), root: root}
	w.visit = func(_ *walkDir, _, abs string) bool {
		var ok bool
		if byPath {
			ok, _ = doublestar.Match(pattern, strings.TrimPrefix(abs[len(root):], "/"))
		} else {
			ok = sandbox.MatchGlob(kind, lit, pattern, path.Base(abs))
		}
		if ok {
			if len(found) == limit {
				limited = true
				return false
			}
			found = append(found, abs)
		}
		return true
	}
	w.walk()
	if w.rootErr != nil {
		return tools.Output{}, searchError(input, w.rootErr)
	}
	work := sandbox.CanonicalOr(call.Env.WorkDir(call))
	for i, f := range found {
		found[i] = tools.TruncateLine(displayPath(f, work), tools.MaxLineBytes)
	}
	sort.Strings(found)
	text := tools.Finish(strings.Join(found, "\n"), call.Env)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tools.Output{}, timedOut("Find", text, started, ctx)
		}
		return tools.Output{}, ctx.Err()
	}
	if len(found) == 0 {
		return tools.Output{Text: "No files found matching pattern."}, nil
	}
	t := tools.TruncateHead(text, call.Env.Limits())
	switch {
	case limited:
		return tools.Output{Text: t.Content + fmt.Sprintf("\n\n[Results limited to %d entries. Narrow your pattern for more specific results.]", limit)}, nil
	case t.Truncated:
		return tools.Output{Text: t.Content + fmt.Sprintf("\n\n[Showing %d of %d results (truncated). Narrow your pattern for more specific results.]", t.OutputLines, len(found))}, nil
	}
	return tools.Output{Text: t.Content}, nil
}
