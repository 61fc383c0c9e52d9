package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// imports returns, per non-test file of a package directory, its direct
// imports. Direct, not `go list -deps`: gopher-lua imports os and os/exec for
// its io/os libraries, which the frontmatter sandbox never opens.
func imports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root(), dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root(), dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out[name] = append(out[name], path)
		}
	}
	return out
}

const module = "github.com/flemma-dev/flemma/"

func TestPurePackages(t *testing.T) {
	forbidden := []string{"os", "os/exec", "net", "net/http", "io/fs", "syscall", "unsafe"}
	pure := map[string][]string{ // package -> modules it may import besides the stdlib
		"buffer":      nil,
		"approval":    {"github.com/google/shlex", "github.com/bmatcuk/doublestar/v4"},
		"frontmatter": {"github.com/yuin/gopher-lua"},
		"preview":     {"github.com/mattn/go-runewidth"},
		"trust":       nil,
	}
	for pkg, allowed := range pure {
		for file, paths := range imports(t, pkg) {
			for _, path := range paths {
				bad := false
				for _, f := range forbidden {
					bad = bad || path == f || strings.HasPrefix(path, f+"/")
				}
				if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
					ok := false
					for _, a := range allowed {
						ok = ok || path == a || strings.HasPrefix(path, a+"/")
					}
					// Pure packages may use each other, nothing else of ours.
					if strings.HasPrefix(path, module) {
						_, ok = pure[strings.TrimPrefix(path, module)]
					}
					bad = bad || !ok
				}
				if bad {
					t.Errorf("%s/%s imports %s: %s must stay pure", pkg, file, path, pkg)
				}
			}
		}
	}
}

func TestOnlyRPCTalksToNeovimOnlyProviderTalksHTTP(t *testing.T) {
	for _, pkg := range []string{"buffer", "approval", "frontmatter", "preview", "trust", "tools", "provider", "rpc", "cmd/flemma-host"} {
		for file, paths := range imports(t, pkg) {
			for _, path := range paths {
				if strings.HasPrefix(path, "github.com/neovim/go-client") && pkg != "rpc" && pkg != "cmd/flemma-host" {
					t.Errorf("%s/%s imports %s: only rpc talks to Neovim", pkg, file, path)
				}
				if path == "net/http" && pkg != "provider" {
					t.Errorf("%s/%s imports net/http: only provider talks HTTP", pkg, file)
				}
			}
		}
	}
}
