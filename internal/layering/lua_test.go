package layering

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// requires returns the modules a Lua chunk names in require("…") or
// pcall(require, "…"), wherever the call is: at load time or inside a
// function. The walk goes through every node by reflection, so no kind of
// statement or expression is skipped.
func requires(stmts []ast.Stmt) []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			if call, ok := v.Interface().(*ast.FuncCallExpr); ok && v.Kind() == reflect.Pointer {
				out = append(out, required(call)...)
			}
			walk(v.Elem())
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(stmts))
	return out
}

// required returns the module a call requires, if it is require("m") or
// pcall(require, "m").
func required(call *ast.FuncCallExpr) []string {
	id, ok := call.Func.(*ast.IdentExpr)
	if !ok || call.Receiver != nil {
		return nil
	}
	args := call.Args
	if id.Value == "pcall" && len(args) > 1 {
		if fn, ok := args[0].(*ast.IdentExpr); ok && fn.Value == "require" {
			id, args = fn, args[1:]
		}
	}
	if id.Value != "require" || len(args) == 0 {
		return nil
	}
	if s, ok := args[0].(*ast.StringExpr); ok {
		return []string{s.Value}
	}
	return nil
}

// luaGraph returns, for every Lua file of the plugin, the modules of the
// plugin ("flemma" and "flemma.…") it requires. Modules are named as
// require names them; the files under plugin/ as "plugin/<file>".
func luaGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for _, dir := range []string{"lua", "plugin"} {
		err := filepath.WalkDir(filepath.Join(root(), dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".lua") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			stmts, err := parse.Parse(f, path)
			if err != nil {
				t.Errorf("parse %s: %v", path, err)
				return nil
			}
			rel, _ := filepath.Rel(filepath.Join(root(), "lua"), path)
			mod := strings.ReplaceAll(strings.TrimSuffix(strings.TrimSuffix(rel, ".lua"), "/init"), "/", ".")
			if dir == "plugin" {
				mod = "plugin/" + filepath.Base(path)
			}
			deps := []string{}
			for _, r := range requires(stmts) {
				if (r == "flemma" || strings.HasPrefix(r, "flemma.")) && !slices.Contains(deps, r) {
					deps = append(deps, r)
				}
			}
			graph[mod] = deps
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return graph
}

// graphProblems says what is wrong with a require graph: a module of the
// plugin that requires "flemma" (only the entry points under plugin/ may:
// the modules share state through flemma.state), a require of a module
// that does not exist, and every cycle — requires inside functions count,
// a cycle that only closes later is still a tangle.
func graphProblems(graph map[string][]string) []string {
	var problems []string
	mods := make([]string, 0, len(graph))
	for m := range graph {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		for _, r := range graph[m] {
			if r == "flemma" && !strings.HasPrefix(m, "plugin/") {
				problems = append(problems, fmt.Sprintf("%s requires \"flemma\": only plugin/ and users may; read shared state from flemma.state", m))
			}
			if _, ok := graph[r]; !ok {
				problems = append(problems, fmt.Sprintf("%s requires %s, which is not a module of the plugin", m, r))
			}
		}
	}
	color := map[string]int{} // 1 on the path, 2 done
	var path []string
	var visit func(m string)
	visit = func(m string) {
		switch color[m] {
		case 1:
			i := slices.Index(path, m)
			problems = append(problems, "require cycle: "+strings.Join(append(slices.Clone(path[i:]), m), " -> "))
			return
		case 2:
			return
		}
		color[m] = 1
		path = append(path, m)
		for _, r := range graph[m] {
			if _, ok := graph[r]; ok {
				visit(r)
			}
		}
		path = path[:len(path)-1]
		color[m] = 2
	}
	for _, m := range mods {
		visit(m)
	}
	return problems
}

// TestLuaModulesLoadWithoutCycles: the plugin's modules require each other
// one way, whether at load time or inside functions: no cycle, and none
// requires "flemma" (init.lua) back — only plugin/flemma.lua does.
func TestLuaModulesLoadWithoutCycles(t *testing.T) {
	graph := luaGraph(t)
	if _, ok := graph["flemma"]; !ok {
		t.Fatalf("lua/flemma/init.lua not found; modules: %v", graph)
	}
	// The walk finds requires inside functions too.
	if !slices.Contains(graph["plugin/flemma.lua"], "flemma.commands") {
		t.Errorf("plugin/flemma.lua's require of flemma.commands (inside a callback) was not found: %v", graph["plugin/flemma.lua"])
	}
	for _, p := range graphProblems(graph) {
		t.Error(p)
	}
}

// TestGraphProblems: the check above fails on a cycle (also one closed
// inside a function), a back-require of "flemma", and a missing module.
func TestGraphProblems(t *testing.T) {
	stmts, err := parse.Parse(strings.NewReader(`
		local a = require("flemma.a")
		local M = {}
		function M.f() return require("flemma.b") end
		local ok = pcall(require, "flemma.c")
		return M`), "x.lua")
	if err != nil {
		t.Fatal(err)
	}
	if got := requires(stmts); strings.Join(got, ",") != "flemma.a,flemma.b,flemma.c" {
		t.Errorf("requires = %v, want flemma.a, flemma.b, flemma.c", got)
	}
	for _, c := range []struct {
		graph map[string][]string
		want  string
	}{
		{map[string][]string{"flemma": {"flemma.a"}, "flemma.a": {"flemma.b"}, "flemma.b": {"flemma.a"}}, "require cycle: flemma.a -> flemma.b -> flemma.a"},
		{map[string][]string{"flemma": {"flemma.a"}, "flemma.a": {"flemma"}}, `flemma.a requires "flemma"`},
		{map[string][]string{"flemma": {"flemma.x"}}, "flemma requires flemma.x, which is not a module"},
		{map[string][]string{"flemma": {"flemma.a"}, "flemma.a": {}, "plugin/flemma.lua": {"flemma"}}, ""},
	} {
		got := strings.Join(graphProblems(c.graph), "\n")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("graphProblems(%v) = %q, want %q", c.graph, got, c.want)
		}
	}
}
