package frontmatter

import (
	"strings"
	"testing"
)

func TestTemplateVariables(t *testing.T) {
	tests := []struct {
		code string
		want map[string]any
	}{
		// format.md §11 case 77: locals and returns are not variables
		{"x = 1\nlocal y = 2\nreturn { z = 9 }", map[string]any{"x": 1}},
		// 78: assigning a sandbox name changes it locally, but is no variable
		{"string = {1}\ntable = 3\nflemma = 4\nnewvar = 5", map[string]any{"newvar": 5}},
		{`name = "Alice"; age = 30; ratio = 0.5; ok = true; nothing = nil`, map[string]any{"name": "Alice", "age": 30, "ratio": 0.5, "ok": true}},
		{`list = {"a", "b", 3}; map = { k = "v", n = { deep = true } }`, map[string]any{"list": []any{"a", "b", 3}, "map": map[string]any{"k": "v", "n": map[string]any{"deep": true}}}},
		{`mixed = { "a", key = "b" }; empty = {}`, map[string]any{"mixed": map[string]any{"1": "a", "key": "b"}, "empty": map[string]any{}}},
		// functions and other types are skipped without error
		{`greet = function(n) return "hi " .. n end; t = { f = print, s = "x" }; p = flemma.opt`, map[string]any{"t": map[string]any{"s": "x"}}},
		// cycles are cut, shared tables are fine
		{`c = {}; c.self = c; c.v = 1; s = {1}; pair = { a = s, b = s }`, map[string]any{"c": map[string]any{"v": 1}, "s": []any{1}, "pair": map[string]any{"a": []any{1}, "b": []any{1}}}},
		{`local function make() return "built" end; built = make() .. "!"`, map[string]any{"built": "built!"}},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantClean(t, tt.code, r)
			wantEqual(t, "Vars", r.Vars, tt.want)
		})
	}
}

func TestUndefinedVariables(t *testing.T) {
	// format.md §11 cases 79 and 80
	for _, name := range []string{"undefined_thing", "io", "require", "setmetatable", "next", "os", "load", "_G"} {
		code := "x = " + name
		r := evalLua(t, code)
		wantDiag(t, code, r, SeverityError, 2, "Undefined variable '"+name+"'")
		if len(r.Vars) != 0 {
			t.Fatalf("Evaluate(%q).Vars = %v, want none after an error", code, r.Vars)
		}
	}
}

func TestEmptySource(t *testing.T) {
	e := NewEvaluator(quiet)
	r := e.Evaluate(Source{}, testSetup)
	if len(r.Diagnostics) != 0 || len(r.Vars) != 0 || r.Blocking() {
		t.Fatalf("Evaluate(empty) = %+v, want an empty result", r)
	}
	r = e.Evaluate(Source{Language: "lua", Code: "", StartLine: 1}, testSetup)
	wantClean(t, "", r)
	r = e.Evaluate(Source{Language: "lua", Code: "-- only a comment", StartLine: 1}, testSetup)
	wantClean(t, "comment", r)
	if e.evaluations.Load() != 2 {
		t.Fatalf("evaluations = %d, want 2 (the empty source runs nothing)", e.evaluations.Load())
	}
}

func TestCaching(t *testing.T) {
	e := NewEvaluator(quiet)
	src := Source{Language: "lua", Code: "flemma.opt.tools:remove('bash')\nx = 1", StartLine: 1}
	r1 := e.Evaluate(src, testSetup)
	r2 := e.Evaluate(src, testSetup)
	if r1 != r2 {
		t.Fatalf("second Evaluate returned a new result, want the cached one")
	}
	if n := e.evaluations.Load(); n != 1 {
		t.Fatalf("evaluations = %d after two identical calls, want 1", n)
	}
	// Anything the result depends on is part of the key.
	setup := testSetup
	setup.Tools = []string{"bash", "read"}
	if r3 := e.Evaluate(src, setup); r3 == r1 || !equalStrings(r3.Opts.Tools, []string{"read"}) {
		t.Fatalf("Evaluate with another setup = %v, want a fresh result with tools [read]", r3.Opts.Tools)
	}
	setup = testSetup
	setup.AutoApprove = []string{} // an empty list is not "no list"
	e.Evaluate(src, setup)
	e.Evaluate(Source{Language: "lua", Code: src.Code, StartLine: 5}, testSetup)
	e.Evaluate(Source{Language: "lua", Code: src.Code + " ", StartLine: 1}, testSetup)
	if n := e.evaluations.Load(); n != 5 {
		t.Fatalf("evaluations = %d, want 5", n)
	}
	// Compiled chunks are shared across setups.
	if n := e.protos.len(); n != 2 {
		t.Fatalf("compiled chunks = %d, want 2", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	e := NewEvaluator(quiet)
	for i := 0; i < 3*cacheSize; i++ {
		e.Evaluate(Source{Language: "lua", Code: "x = " + strings.Repeat("1", i+1), StartLine: 1}, testSetup)
	}
	if e.results.len() != cacheSize || e.protos.len() != cacheSize {
		t.Fatalf("cache sizes = %d/%d, want %d", e.results.len(), e.protos.len(), cacheSize)
	}
	// The most recent entries survive.
	before := e.evaluations.Load()
	e.Evaluate(Source{Language: "lua", Code: "x = " + strings.Repeat("1", 3*cacheSize), StartLine: 1}, testSetup)
	if e.evaluations.Load() != before {
		t.Fatalf("the most recent entry was evicted")
	}
}

func TestLRU(t *testing.T) {
	c := newLRU[int](2)
	c.put("a", 1)
	c.put("b", 2)
	c.get("a") // a is now the most recent
	c.put("c", 3)
	if _, ok := c.get("b"); ok {
		t.Fatalf("b survived, want it evicted")
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatalf("get(a) = %v, %v; want 1, true", v, ok)
	}
	c.put("a", 4)
	if v, _ := c.get("a"); v != 4 || c.len() != 2 {
		t.Fatalf("update failed: a = %v, len %d", v, c.len())
	}
}

func TestBlocking(t *testing.T) {
	r := &Result{Diagnostics: []Diagnostic{{Line: 1, Severity: SeverityWarning, Message: "w"}}}
	if r.Blocking() {
		t.Fatalf("a warning blocks")
	}
	r.Diagnostics = append(r.Diagnostics, Diagnostic{Line: 2, Severity: SeverityError, Message: "e"})
	if !r.Blocking() {
		t.Fatalf("an error does not block")
	}
	if s := r.Diagnostics[1].String(); s != "line 2: error: e" {
		t.Fatalf("String() = %q", s)
	}
}

func TestTooLarge(t *testing.T) {
	code := "x = 1\n" + strings.Repeat("-- padding\n", MaxCodeBytes/10)
	wantDiag(t, "large", evalLua(t, code), SeverityError, 1, "frontmatter is too large")
}

func TestTooManyDiagnostics(t *testing.T) {
	code := "for i = 1, 1000 do flemma.opt.bogus = i end"
	r := evalLua(t, code)
	if len(r.Diagnostics) != maxDiagnostics+1 {
		t.Fatalf("got %d diagnostics, want %d", len(r.Diagnostics), maxDiagnostics+1)
	}
	wantDiag(t, code, r, SeverityError, 0, "too many problems")
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
