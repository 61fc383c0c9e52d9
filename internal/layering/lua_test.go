package layering

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// loadRequires returns the modules a Lua chunk requires while it loads:
// require calls outside function bodies (those inside run later, when every
// module is loaded).
func loadRequires(stmts []ast.Stmt) []string {
	var out []string
	var expr func(e ast.Expr)
	exprs := func(es []ast.Expr) {
		for _, e := range es {
			expr(e)
		}
	}
	var block func(ss []ast.Stmt)
	expr = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.FuncCallExpr:
			if id, ok := x.Func.(*ast.IdentExpr); ok && id.Value == "require" && len(x.Args) > 0 {
				if s, ok := x.Args[0].(*ast.StringExpr); ok {
					out = append(out, s.Value)
				}
			}
			if x.Func != nil {
				expr(x.Func)
			}
			if x.Receiver != nil {
				expr(x.Receiver)
			}
			exprs(x.Args)
		case *ast.AttrGetExpr:
			expr(x.Object)
			expr(x.Key)
		case *ast.TableExpr:
			for _, f := range x.Fields {
				if f.Key != nil {
					expr(f.Key)
				}
				expr(f.Value)
			}
		case *ast.LogicalOpExpr:
			expr(x.Lhs)
			expr(x.Rhs)
		case *ast.RelationalOpExpr:
			expr(x.Lhs)
			expr(x.Rhs)
		case *ast.StringConcatOpExpr:
			expr(x.Lhs)
			expr(x.Rhs)
		case *ast.ArithmeticOpExpr:
			expr(x.Lhs)
			expr(x.Rhs)
		case *ast.UnaryMinusOpExpr:
			expr(x.Expr)
		case *ast.UnaryNotOpExpr:
			expr(x.Expr)
		case *ast.UnaryLenOpExpr:
			expr(x.Expr)
		case *ast.FunctionExpr: // runs later
		}
	}
	block = func(ss []ast.Stmt) {
		for _, s := range ss {
			switch x := s.(type) {
			case *ast.LocalAssignStmt:
				exprs(x.Exprs)
			case *ast.AssignStmt:
				exprs(x.Lhs)
				exprs(x.Rhs)
			case *ast.FuncCallStmt:
				expr(x.Expr)
			case *ast.ReturnStmt:
				exprs(x.Exprs)
			case *ast.DoBlockStmt:
				block(x.Stmts)
			case *ast.WhileStmt:
				expr(x.Condition)
				block(x.Stmts)
			case *ast.RepeatStmt:
				expr(x.Condition)
				block(x.Stmts)
			case *ast.IfStmt:
				expr(x.Condition)
				block(x.Then)
				block(x.Else)
			case *ast.NumberForStmt:
				block(x.Stmts)
			case *ast.GenericForStmt:
				exprs(x.Exprs)
				block(x.Stmts)
			case *ast.FuncDefStmt: // runs later
			}
		}
	}
	block(stmts)
	return out
}

// TestLuaModulesLoadWithoutCycles: no module of the plugin requires, while
// it loads, a module that requires it back (a cycle returns a half-built
// module, or loops). Requires inside functions run once everything is
// loaded and may point anywhere.
func TestLuaModulesLoadWithoutCycles(t *testing.T) {
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
			graph[mod] = loadRequires(stmts)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := graph["flemma"]; !ok {
		t.Fatalf("lua/flemma/init.lua not found; modules: %v", graph)
	}
	state := map[string]int{} // 1 visiting, 2 done
	var path []string
	var visit func(m string)
	visit = func(m string) {
		switch state[m] {
		case 1:
			t.Errorf("require cycle while loading: %s -> %s", strings.Join(path, " -> "), m)
			return
		case 2:
			return
		}
		state[m] = 1
		path = append(path, m)
		for _, r := range graph[m] {
			if strings.HasPrefix(r, "flemma") {
				visit(r)
			}
		}
		path = path[:len(path)-1]
		state[m] = 2
	}
	for m := range graph {
		visit(m)
	}
}
