package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// fixture is a buffer living in a temporary project directory, with a
// sandbox whose only writable root is that directory.
type fixture struct {
	t       *testing.T
	dir     string // the project (and buffer) directory, canonical
	outside string // a directory outside every writable root
	env     *tools.Env
	call    tools.Call
	exec    *tools.Executor
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := sandbox.CanonicalOr(t.TempDir())
	outside := sandbox.CanonicalOr(t.TempDir())
	f := &fixture{t: t, dir: dir, outside: outside}
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}, Network: true})
	r := tools.NewRegistry()
	for _, tool := range All() {
		r.MustAdd(tool)
	}
	f.exec = &tools.Executor{Registry: r}
	return f
}

func (f *fixture) setSandbox(cfg sandbox.Config) {
	f.t.Helper()
	buffer := filepath.Join(f.dir, "chat.chat")
	sb, err := sandbox.New(cfg, f.dir, buffer)
	if err != nil {
		f.t.Fatalf("sandbox.New: %v", err)
	}
	if f.env == nil {
		f.env = &tools.Env{Reads: tools.NewReadLog(), OutputDir: f.t.TempDir(), BackupDir: filepath.Join(f.t.TempDir(), "backups"),
			Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}}
	}
	f.env.Sandbox = sb
	f.call = tools.Call{ID: "toolu_01", Bufnr: 1, Cwd: f.dir, Buffer: buffer, Env: f.env}
}

// run executes tool through the executor with input; absent schema
// properties are sent as null, as a strict-mode model would.
func (f *fixture) run(tool string, input map[string]any) tools.Result {
	f.t.Helper()
	return f.runCtx(context.Background(), tool, input)
}

func (f *fixture) runCtx(ctx context.Context, tool string, input map[string]any) tools.Result {
	f.t.Helper()
	t, ok := f.exec.Registry.Lookup(tool)
	if !ok {
		f.t.Fatalf("no tool %s", tool)
	}
	full := map[string]any{}
	for k := range t.Spec().InputSchema["properties"].(map[string]any) {
		full[k] = nil
	}
	full["label"] = "test"
	for k, v := range input {
		full[k] = v
	}
	raw, _ := json.Marshal(full)
	call := f.call
	call.Tool = tool
	return f.exec.Run(ctx, call, raw)
}

// write creates a file under the fixture directory (or at an absolute
// path), with its parents.
func (f *fixture) write(name, content string) string {
	f.t.Helper()
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.dir, name)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// undoTo undoes c and checks that name then holds want.
func (f *fixture) undoTo(c tools.Change, name, want string) {
	f.t.Helper()
	if err := Undo(c, f.env.BackupDir); err != nil {
		f.t.Fatalf("undo of %s: %v", name, err)
	}
	if got := f.read(name); got != want {
		f.t.Errorf("%s after undo = %q, want %q", name, got, want)
	}
}

func (f *fixture) read(name string) string {
	f.t.Helper()
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.dir, name)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// want checks a result: ok says whether it must succeed; every fragment
// must appear in its content.
func want(t *testing.T, name string, res tools.Result, ok bool, fragments ...string) {
	t.Helper()
	if res.IsError == ok {
		t.Errorf("%s: IsError = %v, want %v; content:\n%s", name, res.IsError, !ok, res.Content)
		return
	}
	for _, fr := range fragments {
		if !strings.Contains(res.Content, fr) {
			t.Errorf("%s: content does not contain %q:\n%s", name, fr, res.Content)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// tempFiles lists leftover temporary files of atomic writes under dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".flemma-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// lines joins f(1) … f(n) with newlines.
func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		b.WriteString(f(i))
	}
	return b.String()
}
