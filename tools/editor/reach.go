package editor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// reach is what one call may read: the buffer's sandbox with deny_read in
// force even when the sandbox is disabled (the language server reaches any
// file; what it says of one is that file's content).
type reach struct {
	sb      *sandbox.Sandbox
	work    string // relative inputs resolve here (the chat file's folder)
	cwd     string // Neovim's cwd: the project
	checked map[string]checkedPath
	lines   map[string][]string // resolved path -> its lines (read for locations)
}

type checkedPath struct {
	resolved string
	ok       bool
}

func newReach(call tools.Call) (*reach, error) {
	sb, err := call.Env.SandboxFor(call)
	if err != nil {
		return nil, tools.Failf("Sandbox error: %v", err)
	}
	if !sb.Enabled() {
		cfg := sb.Config()
		cfg.Enabled = true
		if sb, err = sandbox.New(cfg, call.Cwd, call.Buffer); err != nil {
			return nil, tools.Failf("Sandbox error: %v", err)
		}
	}
	r := &reach{sb: sb, work: call.Env.WorkDir(call), cwd: call.Cwd, checked: map[string]checkedPath{}, lines: map[string][]string{}}
	if r.cwd == "" {
		r.cwd = r.work
	}
	if c, err := filepath.EvalSymlinks(r.cwd); err == nil {
		r.cwd = c
	}
	return r, nil
}

// project is the folder "every open file" and workspace symbols are
// bounded by: Neovim's cwd.
func (r *reach) project() string { return r.cwd }

// checkInput resolves a path the model gave and refuses what read refuses;
// the error is model-facing.
func (r *reach) checkInput(p string) (string, error) {
	abs := sandbox.ResolvePath(p, r.work)
	resolved, err := r.sb.CheckRead(abs)
	if err != nil {
		var de *sandbox.DenyError
		switch {
		case errors.As(err, &de):
			return "", tools.Failf("Sandbox: read denied – %s: %s", de.Rule, p)
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return "", tools.Failf("File not found: %s", p)
		case sandbox.FSReason(err) != "":
			return "", tools.Failf("Cannot resolve path %s: %s", p, sandbox.FSReason(err))
		}
		return "", &tools.Internal{Err: err}
	}
	if st, err := os.Stat(resolved); err != nil || st.IsDir() {
		return "", tools.Failf("File not found: %s", p)
	}
	r.checked[resolved] = checkedPath{resolved, true}
	return resolved, nil
}

// check says whether a path from the editor's answer may reach the model,
// and gives it resolved: it must be absolute, exist, and pass the read
// check.
func (r *reach) check(p string) (string, bool) {
	if c, ok := r.checked[p]; ok {
		return c.resolved, c.ok
	}
	if !filepath.IsAbs(p) {
		r.checked[p] = checkedPath{}
		return "", false
	}
	resolved, err := r.sb.CheckRead(p)
	if err == nil {
		_, err = os.Stat(resolved) // a file that no longer exists says nothing
	}
	c := checkedPath{resolved, err == nil}
	r.checked[p] = c
	return c.resolved, c.ok
}

// show is a path as the model reads it: relative to the chat's folder or
// the project when inside, else absolute.
func (r *reach) show(p string) string {
	for _, base := range []string{r.work, r.cwd} {
		if base == "" {
			continue
		}
		if rel, err := filepath.Rel(base, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return p
}

// inProject: the path lies under Neovim's cwd.
func (r *reach) inProject(p string) bool {
	rel, err := filepath.Rel(r.cwd, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func (r *reach) filterDiagnostics(ds []Diagnostic) (kept []Diagnostic, hidden int) {
	for _, d := range ds {
		resolved, ok := r.check(d.Path)
		if !ok {
			hidden++
			continue
		}
		d.Path = resolved
		kept = append(kept, d)
	}
	return kept, hidden
}

// locations keeps the locations the model may see, resolved, each with its
// line's text and byte column (read from the file when the editor did not
// have it loaded).
func (r *reach) locations(ls []Location) []Location {
	var out []Location
	for _, l := range ls {
		resolved, ok := r.check(l.Path)
		if !ok {
			continue
		}
		l.Path = resolved
		if l.Col == nil {
			text, ok := r.line(resolved, l.Line)
			if ok {
				l.Text = text
			}
			c := byteCol(l.Text, l.Character, l.Encoding)
			l.Col = &c
		}
		out = append(out, l)
	}
	return out
}

// place is path:line:col, 1-based.
func (r *reach) place(l Location) string {
	col := 0
	if l.Col != nil {
		col = *l.Col
	}
	return fmt.Sprintf("%s:%d:%d", r.show(l.Path), l.Line+1, col+1)
}

// maxReadBytes bounds what is read of one file to find a location's line.
const maxReadBytes = 8 << 20

// line is line n (0-based) of a file that passed check, opened without
// following links.
func (r *reach) line(resolved string, n int) (string, bool) {
	lines, ok := r.lines[resolved]
	if !ok {
		lines = r.read(resolved)
		r.lines[resolved] = lines
	}
	if n < 0 || n >= len(lines) {
		return "", false
	}
	return lines[n], true
}

func (r *reach) read(resolved string) []string {
	f, err := sandbox.OpenNoFollow(resolved)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, maxReadBytes))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// byteCol converts a language server's character offset on line (in its
// position encoding: UTF-16 code units unless it said utf-8 or utf-32)
// into a byte column.
func byteCol(line string, character int, enc string) int {
	if character <= 0 {
		return 0
	}
	if enc == "utf-8" {
		return min(character, len(line))
	}
	units := 0
	for i, c := range line {
		if units >= character {
			return i
		}
		if enc != "utf-32" && c >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return len(line)
}
