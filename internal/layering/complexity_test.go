package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxComplexity is the ceiling of issue 25: no function of the module's
// production code over cyclomatic complexity 30. Generated files (the
// standard "Code generated … DO NOT EDIT." line) are outside the rule: their
// size follows their source table, which has its own tests.
const maxComplexity = 30

// complexity counts as gocyclo does, so the figure this test prints is the one
// docs/benchmarks.md quotes: 1, plus one per if, for, range, non-default case
// or select clause, and && or ||. Function literals count toward the function
// that holds them: they are read as part of it.
func complexity(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// funcName is Recv.Name or Name, as gocyclo prints it.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestComplexity walks every non-test Go file of the module (not .cache, not
// testdata) and fails on any function over maxComplexity.
func TestComplexity(t *testing.T) {
	fset := token.NewFileSet()
	var over []string
	files := 0
	err := filepath.WalkDir(root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root() && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if cg.Pos() >= f.Package {
				break
			}
			if generated.MatchString(cg.Text()) || slices.ContainsFunc(cg.List, func(c *ast.Comment) bool { return generated.MatchString(c.Text) }) {
				return nil
			}
		}
		files++
		rel, _ := filepath.Rel(root(), path)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if c := complexity(fd); c > maxComplexity {
				over = append(over, fmt.Sprintf("%d %s %s:%d", c, funcName(fd), rel, fset.Position(fd.Pos()).Line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked only %d Go files from %s: the walk is broken", files, root())
	}
	if len(over) > 0 {
		slices.Sort(over)
		t.Errorf("functions over cyclomatic complexity %d (split them into named steps; docs/design.md, \"Complexity\"):\n%s",
			maxComplexity, strings.Join(over, "\n"))
	}
}

func TestComplexityCounts(t *testing.T) {
	cases := []struct {
		src  string
		want int
	}{
		{"func f() {}", 1},
		{"func f(a, b bool) { if a && b || a {} }", 4},
		{"func f(x int) { switch x { case 1, 2: case 3: default: } }", 3},
		{"func f(c chan int) { select { case <-c: default: } }", 2},
		{"func f(s []int) { for range s {}; for i := 0; i < 1; i++ {} }", 3},
		{"func f() { g := func(a bool) { if a {} }; g(true) }", 2},
	}
	for _, c := range cases {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := complexity(f.Decls[0]); got != c.want {
			t.Errorf("%s: complexity %d, want %d", c.src, got, c.want)
		}
	}
}
