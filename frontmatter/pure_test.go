package frontmatter

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPureImports keeps the package pure: the standard library minus I/O,
// processes and networking, plus gopher-lua. (gopher-lua itself imports os
// and os/exec for its io and os libraries, which the sandbox never opens;
// that is why this checks direct imports, not go list -deps.)
func TestPureImports(t *testing.T) {
	forbidden := []string{"os", "os/exec", "net", "net/http", "io/fs", "syscall", "unsafe", "github.com/neovim/go-client"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
			if strings.Contains(path, ".") && !strings.HasPrefix(path, "github.com/yuin/gopher-lua") {
				t.Errorf("%s imports non-allowed module %s", name, path)
			}
		}
	}
}
