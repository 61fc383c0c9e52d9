package layering

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// ours returns the directory of a package of this module ("." for the root
// package flemma), or false for any other import path.
func ours(path string) (string, bool) {
	if path == strings.TrimSuffix(module, "/") {
		return ".", true
	}
	return strings.CutPrefix(path, module)
}

func TestPurePackages(t *testing.T) {
	forbidden := []string{"os", "os/exec", "net", "net/http", "io/fs", "syscall", "unsafe"}
	pure := map[string][]string{ // package -> modules it may import besides the stdlib
		"buffer":            nil,
		"approval":          {"github.com/google/shlex", "github.com/bmatcuk/doublestar/v4"},
		"approval/shell":    nil,
		"frontmatter":       {"github.com/yuin/gopher-lua"},
		"preview":           {"github.com/mattn/go-runewidth", "github.com/pmezard/go-difflib"}, // difflib: bufio, bytes, fmt, io, strings only
		"trust":             nil,
		"options":           nil,
		"internal/size":     nil,
		"internal/editdist": nil,
		"internal/secrets":  nil,
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
					if dep, isOurs := ours(path); isOurs {
						_, ok = pure[dep]
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

// layers is the map of the module: for every package, the packages of ours
// it may import. Dependencies point one way — from the Neovim boundary
// (rpc) through the engine (cycle) to the I/O packages (tools, journal,
// provider) and the pure ones (buffer, trust, approval, frontmatter,
// preview) — and a new package must be placed here before it can be built
// into the host.
var layers = map[string][]string{
	".":                       {}, // package flemma: the version (lua/flemma/VERSION)
	"buffer":                  {},
	"trust":                   {"buffer"},
	"approval":                {"approval/shell"},
	"approval/shell":          {},
	"frontmatter":             {"internal/editdist"},
	"internal/editdist":       {},
	"internal/ssetest":        {},
	"preview":                 {"internal/size"},
	"internal/size":           {},
	"internal/secrets":        {},
	"journal":                 {},
	"options":                 {"frontmatter"},
	"provider":                {"buffer", "internal/editdist", "internal/secrets"},
	"tools/internal/procsup":  {},
	"tools/internal/testhook": {},
	"tools/sandbox":           {"tools/internal/procsup", "tools/internal/testhook"},
	"tools":                   {"buffer", "internal/secrets", "internal/size", "tools/sandbox"},
	"tools/builtin":           {"internal/size", "tools", "tools/sandbox", "tools/internal/testhook"},
	"tools/editor":            {"tools", "tools/sandbox"},
	"mcp":                     {"tools", "tools/sandbox"},
	"cycle":                   {"approval", "buffer", "frontmatter", "internal/editdist", "internal/secrets", "journal", "mcp", "options", "preview", "provider", "tools", "tools/editor", "tools/sandbox", "trust"}, // never tools/builtin: the built-ins come in through Deps (Registry, Proposer)
	"rpc":                     {"cycle", "tools/editor", "tools/sandbox"},
	"headless":                {"buffer", "cycle", "options", "preview", "trust"},
	"cmd/flemma-host":         {".", "approval", "cycle", "headless", "internal/secrets", "journal", "mcp", "provider", "rpc", "tools", "tools/builtin", "tools/sandbox"},
	"cmd/flemma-demo":         {"internal/nvimtest"},
	"internal/nvimtest":       {},
	"internal/chatgen":        {},
	"internal/luaref":         {}, // the Lua Flemma parser run in Neovim, for the parser benchmark (reference data outside the repo)
	"internal/layering":       {},
	"internal/benchcheck":     {}, // make bench-check: runs go test, reads docs/budgets.txt
	"e2e":                     {".", "internal/chatgen", "internal/nvimtest"},
}

// TestEveryPackageHasItsPlace: each package imports only what the table
// allows, and every package of the module is in the table.
func TestEveryPackageHasItsPlace(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(root(), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root() && (strings.HasPrefix(name, ".") || name == "testdata" || name == "lua" || name == "docs") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(root(), filepath.Dir(path))
			if len(dirs) == 0 || dirs[len(dirs)-1] != rel {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		allowed, ok := layers[dir]
		if !ok {
			t.Errorf("package %s is not in the layering table (internal/layering/layering_test.go)", dir)
			continue
		}
		for file, paths := range imports(t, dir) {
			for _, path := range paths {
				dep, isOurs := ours(path)
				if isOurs && !slices.Contains(allowed, dep) {
					t.Errorf("%s/%s imports %s, which the layering table does not allow", dir, file, dep)
				}
			}
		}
	}
}

func TestOnlyRPCTalksToNeovimOnlyProviderTalksHTTP(t *testing.T) {
	for pkg := range layers {
		for file, paths := range imports(t, pkg) {
			for _, path := range paths {
				if strings.HasPrefix(path, "github.com/neovim/go-client") && pkg != "rpc" && pkg != "cmd/flemma-host" && pkg != "internal/nvimtest" && pkg != "e2e" && pkg != "cmd/flemma-demo" {
					t.Errorf("%s/%s imports %s: only rpc talks to Neovim", pkg, file, path)
				}
				// mcp speaks MCP's streamable HTTP transport through the
				// official SDK's client, which takes an *http.Client: mcp
				// imports net/http only to add setup's headers to it. The
				// fetch built-in (tools/builtin/fetch.go) is an HTTP GET
				// from the host, with its own address checks.
				if path == "net/http" && pkg != "provider" && pkg != "e2e" && pkg != "mcp" && pkg != "tools/builtin" {
					t.Errorf("%s/%s imports net/http: only provider talks HTTP", pkg, file)
				}
			}
		}
	}
}
