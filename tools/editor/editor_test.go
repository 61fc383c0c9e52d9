package editor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// fakeEditor answers every question with answer and records the questions.
type fakeEditor struct {
	answer Answer
	asked  []Query
	wait   time.Duration // answer after this long (0: at once)
}

func (f *fakeEditor) Ask(ctx context.Context, q Query) (Answer, error) {
	f.asked = append(f.asked, q)
	if f.wait > 0 {
		select {
		case <-time.After(f.wait):
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		}
	}
	return f.answer, nil
}

// project lays out dir/proj (main.go, lib.go) and dir/home/.ssh/key.go.
func project(t *testing.T) (dir, proj, secret string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj = filepath.Join(dir, "proj")
	secret = filepath.Join(dir, "home", ".ssh", "key.go")
	for p, c := range map[string]string{
		filepath.Join(proj, "main.go"): "package main\n\nfunc main() { println(héllo(), Key) }\n",
		filepath.Join(proj, "lib.go"):  "package main\n\nfunc héllo() int { return 1 }\n",
		secret:                         "package main\n\nconst Key = \"hunter2\"\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, proj, secret
}

// call is a call from a chat in proj, with the sandbox as configured
// (enabled or not: deny_read holds either way).
func call(t *testing.T, proj string, enabled bool) tools.Call {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.Enabled = enabled
	sb, err := sandbox.New(cfg, proj, filepath.Join(proj, "x.chat"))
	if err != nil {
		t.Fatal(err)
	}
	return tools.Call{ID: "c1", Cwd: proj, Buffer: filepath.Join(proj, "x.chat"), Env: &tools.Env{Sandbox: sb}}
}

func run(t *testing.T, tool tools.Tool, c tools.Call, input string) (string, error) {
	t.Helper()
	out, err := tool.Run(context.Background(), c, json.RawMessage(input))
	if err != nil {
		return "", err
	}
	return out.Text, nil
}

func opts() Options { return DefaultOptions() }

func TestReferencesDropDenyReadAndGoneFiles(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		dir, proj, secret := project(t)
		ed := &fakeEditor{answer: Answer{Clients: []string{"gopls"}, Locations: []Location{
			{Path: filepath.Join(proj, "lib.go"), Line: 2, Character: 5, Encoding: "utf-16"},
			{Path: filepath.Join(proj, "main.go"), Line: 2, Character: 23, Encoding: "utf-16"},
			{Path: secret, Line: 2, Character: 6, Encoding: "utf-16", Text: `const Key = "hunter2"`},
			{Path: filepath.Join(dir, "gone.go"), Line: 0, Character: 0},
			{Path: "relative/path.go", Line: 0, Character: 0},
		}}}
		got, err := run(t, LSP(ed, opts), call(t, proj, enabled), `{"label":"x","operation":"references","path":"main.go","line":3,"symbol":"héllo","column":null,"query":null}`)
		if err != nil {
			t.Fatalf("sandbox enabled=%v: %v", enabled, err)
		}
		for _, want := range []string{"2 reference(s) of héllo (gopls):", "lib.go:3:6: func héllo() int { return 1 }", "main.go:3:24: func main() { println(héllo(), Key) }", "(3 in files the sandbox does not let tools read, or that no longer exist, were left out)"} {
			if !strings.Contains(got, want) {
				t.Errorf("sandbox enabled=%v: references =\n%s\nwant %q", enabled, got, want)
			}
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, ".ssh") {
			t.Errorf("sandbox enabled=%v: leaked: %s", enabled, got)
		}
		if q := ed.asked[0]; q.Path != filepath.Join(proj, "main.go") || q.Symbol != "héllo" || q.Line != 3 || q.Method != "references" || q.TimeoutMS != 10000 || q.Max != 100 {
			t.Errorf("question = %+v", q)
		}
	}
}

func TestHoverRefusedWhenDefinedInDenyRead(t *testing.T) {
	_, proj, secret := project(t)
	ed := &fakeEditor{answer: Answer{Clients: []string{"gopls"}, Hover: "const Key = \"hunter2\"",
		Definitions: []Location{{Path: secret, Line: 2, Character: 6}}}}
	_, err := run(t, LSP(ed, opts), call(t, proj, true), `{"label":"x","operation":"hover","path":"main.go","line":3,"symbol":"Key","column":null,"query":null}`)
	if err == nil || !strings.Contains(err.Error(), "hover denied") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("hover = %v, want a refusal without the text", err)
	}
	// A definition the server does not give (a keyword, a built-in) does
	// not stop the hover.
	ed.answer.Definitions = nil
	ed.answer.Hover = "func println(args ...Type)"
	got, err := run(t, LSP(ed, opts), call(t, proj, true), `{"label":"x","operation":"hover","path":"main.go","line":3,"symbol":"println","column":null,"query":null}`)
	if err != nil || got != "func println(args ...Type)" {
		t.Errorf("hover = %q, %v", got, err)
	}
}

// The path the model names is checked before the editor is asked.
func TestDenyReadPathNeverAsked(t *testing.T) {
	_, proj, secret := project(t)
	ed := &fakeEditor{}
	for _, tc := range []struct {
		tool  tools.Tool
		input string
	}{
		{LSP(ed, opts), `{"label":"x","operation":"document_symbols","path":"` + secret + `","line":null,"symbol":null,"column":null,"query":null}`},
		{LSP(ed, opts), `{"label":"x","operation":"definition","path":"../home/.ssh/key.go","line":3,"symbol":"Key","column":null,"query":null}`},
		{Diagnostics(ed, opts), `{"label":"x","path":"` + secret + `","severity":null}`},
	} {
		for _, enabled := range []bool{true, false} {
			_, err := run(t, tc.tool, call(t, proj, enabled), tc.input)
			if err == nil || !strings.Contains(err.Error(), "deny_read") {
				t.Errorf("%s (sandbox enabled=%v) = %v, want a deny_read refusal", tc.input, enabled, err)
			}
		}
	}
	if len(ed.asked) != 0 {
		t.Errorf("the editor was asked %+v", ed.asked)
	}
}

func TestDiagnosticsAndBuffersFiltered(t *testing.T) {
	_, proj, secret := project(t)
	ed := &fakeEditor{answer: Answer{Diagnostics: []Diagnostic{
		{Path: filepath.Join(proj, "main.go"), Lnum: 3, Col: 24, Severity: "error", Message: "undefined:\n  héllo", Source: "compiler", Code: "UndeclaredName"},
		{Path: secret, Lnum: 3, Col: 1, Severity: "warning", Message: "hunter2 is weak"},
		{Path: filepath.Join(proj, "lib.go"), Lnum: 1, Col: 1, Severity: "warning", Message: "package comment"},
	}}}
	got, err := run(t, Diagnostics(ed, opts), call(t, proj, true), `{"label":"x","path":null,"severity":"WARNING"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "main.go:3:24: error: undefined: héllo [compiler UndeclaredName]\nlib.go:1:1: warning: package comment\n1 error, 1 warning in 2 file(s).\n(1 in files the sandbox does not let tools read were left out)"
	if got != want {
		t.Errorf("diagnostics =\n%s\nwant\n%s", got, want)
	}
	if q := ed.asked[0]; q.Under != proj || q.Severity != "warning" || q.Path != "" {
		t.Errorf("question = %+v", q)
	}
	if _, err := run(t, Diagnostics(ed, opts), call(t, proj, true), `{"label":"x","path":null,"severity":"fatal"}`); err == nil || !strings.Contains(err.Error(), "Unknown severity") {
		t.Errorf("bad severity: %v", err)
	}

	ed.answer = Answer{Buffers: []Buffer{
		{Path: filepath.Join(proj, "main.go"), Bufnr: 3, Modified: true, Loaded: true, Lines: 3, Filetype: "go", Clients: []string{"gopls"}, Current: true},
		{Path: secret, Bufnr: 4, Loaded: true},
		{Path: filepath.Join(proj, "lib.go"), Bufnr: 2},
	}}
	got, err = run(t, Buffers(ed, opts), call(t, proj, true), `{"label":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	want = "lib.go  [not loaded]\nmain.go  [MODIFIED (unsaved changes), current]  go  3 lines  lsp: gopls\n2 file(s) open, 1 with unsaved changes: the editor's text of those differs from the file on disk.\n(1 open file(s) the sandbox does not let tools read are not listed)"
	if got != want {
		t.Errorf("buffers =\n%s\nwant\n%s", got, want)
	}
}

func TestLSPInputErrors(t *testing.T) {
	_, proj, _ := project(t)
	ed := &fakeEditor{}
	for input, want := range map[string]string{
		`{"label":"x","operation":"rename","path":"main.go","line":1,"symbol":"a","column":null,"query":null}`:          "Unknown operation",
		`{"label":"x","operation":"definition","path":null,"line":1,"symbol":"a","column":null,"query":null}`:           "needs a path",
		`{"label":"x","operation":"definition","path":"main.go","line":null,"symbol":"a","column":null,"query":null}`:   "needs a line",
		`{"label":"x","operation":"hover","path":"main.go","line":2,"symbol":null,"column":null,"query":null}`:          "needs the symbol",
		`{"label":"x","operation":"workspace_symbols","path":null,"line":null,"symbol":null,"column":null,"query":" "}`: "needs a query",
		`{"label":"x","operation":"definition","path":"nope.go","line":1,"symbol":"a","column":null,"query":null}`:      "File not found",
	} {
		if _, err := run(t, LSP(ed, opts), call(t, proj, true), input); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", input, err, want)
		}
	}
	if len(ed.asked) != 0 {
		t.Errorf("asked %+v", ed.asked)
	}
	ed.answer = Answer{Unavailable: "no_client"}
	if _, err := run(t, LSP(ed, opts), call(t, proj, true), `{"label":"x","operation":"definition","path":"main.go","line":3,"symbol":"main","column":null,"query":null}`); err == nil || !strings.Contains(err.Error(), "No running language server serves main.go") {
		t.Errorf("no client: %v", err)
	}
	ed.answer = Answer{Error: "no answer within 10.0 s", TimedOut: true}
	if _, err := run(t, LSP(ed, opts), call(t, proj, true), `{"label":"x","operation":"definition","path":"main.go","line":3,"symbol":"main","column":null,"query":null}`); err == nil || !strings.Contains(err.Error(), "no answer in time") {
		t.Errorf("timed out: %v", err)
	}
}

// TestLSPQuery: the question each valid lsp input asks, and the file as
// the result names it.
func TestLSPQuery(t *testing.T) {
	_, proj, _ := project(t)
	r, err := newReach(call(t, proj, true))
	if err != nil {
		t.Fatal(err)
	}
	o := opts()
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	main := filepath.Join(proj, "main.go")
	for _, tt := range []struct {
		op    string
		in    LSPInput
		want  Query
		shown string
	}{
		{"workspace_symbols", LSPInput{Query: str("  héllo "), Path: str("main.go"), Line: num(3)}, Query{Query: "héllo"}, ""},
		{"document_symbols", LSPInput{Path: str("main.go"), Line: num(3), Symbol: str("main")}, Query{Path: main}, "main.go"},
		{"definition", LSPInput{Path: str("main.go"), Line: num(3), Symbol: str(" héllo "), Column: num(4)}, Query{Path: main, Line: 3, Symbol: "héllo"}, "main.go"},
		{"hover", LSPInput{Path: str("main.go"), Line: num(3), Symbol: str(" "), Column: num(4)}, Query{Path: main, Line: 3, Column: 4}, "main.go"},
		{"references", LSPInput{Path: str(main), Line: num(1), Column: num(1)}, Query{Path: main, Line: 1, Column: 1}, main},
	} {
		q, shown, err := lspQuery(r, o, tt.op, tt.in)
		tt.want.Op, tt.want.Method, tt.want.Under, tt.want.MaxBytes = "lsp", tt.op, proj, o.MaxBytes
		if err != nil || q != tt.want || shown != tt.shown {
			t.Errorf("%s: %+v %q %v\nwant %+v %q", tt.op, q, shown, err, tt.want, tt.shown)
		}
	}
	// A line below 1, a column below 1: refused.
	for _, in := range []LSPInput{{Path: str("main.go"), Line: num(0), Symbol: str("main")}, {Path: str("main.go"), Line: num(3), Column: num(0)}} {
		if _, _, err := lspQuery(r, o, "definition", in); err == nil {
			t.Errorf("%+v: no error", in)
		}
	}
}

// The question is bounded even when the editor never answers.
func TestQuestionBounded(t *testing.T) {
	_, proj, _ := project(t)
	ed := &fakeEditor{wait: time.Hour}
	o := func() Options { return Options{Timeout: 10 * time.Millisecond} }
	start := time.Now()
	_, err := run(t, Buffers(ed, o), call(t, proj, true), `{"label":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "no answer in time") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("waited %s", d)
	}
}

func TestAfterEdit(t *testing.T) {
	_, proj, secret := project(t)
	c := call(t, proj, true)
	main := filepath.Join(proj, "main.go")
	ed := &fakeEditor{answer: Answer{Clients: []string{"gopls"}, Diagnostics: []Diagnostic{
		{Path: main, Lnum: 3, Col: 24, Severity: "error", Message: "undefined: foo", Source: "compiler"},
		{Path: main, Lnum: 3, Col: 1, Severity: "error", Message: "second"},
	}}}
	got := AfterEdit(context.Background(), ed, DefaultOptions(), c, main)
	if want := "LSP diagnostics after the edit (gopls): 2 errors\nmain.go:3:24: error: undefined: foo [compiler]\nmain.go:3:1: error: second"; got != want {
		t.Errorf("AfterEdit =\n%s\nwant\n%s", got, want)
	}
	if q := ed.asked[0]; q.Op != "after_edit" || q.Severity != "warning" || q.TimeoutMS != 3000 {
		t.Errorf("question = %+v", q)
	}
	ed.answer = Answer{Clients: []string{"gopls"}}
	if got := AfterEdit(context.Background(), ed, DefaultOptions(), c, main); got != "LSP diagnostics after the edit (gopls): no errors or warnings." {
		t.Errorf("clean: %q", got)
	}
	ed.answer = Answer{Unavailable: "modified"}
	if got := AfterEdit(context.Background(), ed, DefaultOptions(), c, main); !strings.Contains(got, "unsaved changes") {
		t.Errorf("modified: %q", got)
	}
	ed.answer = Answer{Unavailable: "noautoread"}
	if got := AfterEdit(context.Background(), ed, DefaultOptions(), c, main); !strings.Contains(got, "'autoread' is off") {
		t.Errorf("noautoread: %q", got)
	}
	n := len(ed.asked)
	for name, o := range map[string]Options{"off": {AfterEdit: false}} {
		if got := AfterEdit(context.Background(), ed, o, c, main); got != "" {
			t.Errorf("%s: %q", name, got)
		}
	}
	if got := AfterEdit(context.Background(), ed, DefaultOptions(), c, secret); got != "" {
		t.Errorf("deny_read file: %q", got)
	}
	ed.answer = Answer{Unavailable: "no_client"}
	if got := AfterEdit(context.Background(), ed, DefaultOptions(), c, main); got != "" {
		t.Errorf("no client: %q", got)
	}
	if len(ed.asked) != n+1 {
		t.Errorf("asked %d times, want only for the no-client case", len(ed.asked)-n)
	}
}

func TestByteCol(t *testing.T) {
	for _, tc := range []struct {
		line string
		ch   int
		enc  string
		want int
	}{
		{"abc", 1, "utf-16", 1},
		{"héllo x", 6, "utf-16", 7}, // é is 2 bytes, 1 unit
		{"héllo x", 6, "utf-8", 6},
		{"😀 x", 3, "utf-16", 5}, // 😀: 4 bytes, 2 units
		{"😀 x", 2, "utf-32", 5},
		{"abc", 10, "utf-16", 3},
		{"abc", -1, "utf-16", 0},
	} {
		if got := byteCol(tc.line, tc.ch, tc.enc); got != tc.want {
			t.Errorf("byteCol(%q, %d, %s) = %d, want %d", tc.line, tc.ch, tc.enc, got, tc.want)
		}
	}
}

func TestSchemas(t *testing.T) {
	reg := tools.NewRegistry()
	for _, tool := range All(&fakeEditor{}, opts) {
		reg.MustAdd(tool)
		if !tool.Spec().Strict || tool.Spec().Enabled != true {
			t.Errorf("%s: strict %v enabled %v", tool.Spec().Name, tool.Spec().Strict, tool.Spec().Enabled)
		}
	}
	lsp, _ := reg.Get("lsp")
	if got := lsp.Spec().Requires; len(got) != 1 || got[0] != Requirement {
		t.Errorf("lsp requires %v", got)
	}
}
