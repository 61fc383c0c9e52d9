package cycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/tools"
)

// lua/flemma/protocol.lua and the M* constants of protocol.go name the
// same methods, and Methods serves every one of them (but flemma.async,
// which rpc serves).
func TestProtocolFilesAgree(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	L := lua.NewState()
	defer L.Close()
	if err := L.DoFile(filepath.Join(dir, "..", "lua", "flemma", "protocol.lua")); err != nil {
		t.Fatal(err)
	}
	var fromLua []string
	L.Get(-1).(*lua.LTable).ForEach(func(k, v lua.LValue) {
		if want := "flemma." + k.String(); v.String() != want {
			t.Errorf("protocol.lua: %s = %q, want %q", k, v, want)
		}
		fromLua = append(fromLua, v.String())
	})
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "protocol.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fromGo []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					name, _ := strconv.Unquote(lit.Value)
					fromGo = append(fromGo, name)
				}
			}
		}
	}
	sort.Strings(fromLua)
	sort.Strings(fromGo)
	if strings.Join(fromLua, " ") != strings.Join(fromGo, " ") {
		t.Errorf("protocol.lua names %q\nprotocol.go names  %q", fromLua, fromGo)
	}
	served := map[string]bool{MAsync: true}
	for _, m := range (&Engine{}).Methods() {
		if served[m.Name] {
			t.Errorf("%s served twice", m.Name)
		}
		served[m.Name] = true
	}
	for _, n := range fromGo {
		if !served[n] {
			t.Errorf("%s is declared but not served", n)
		}
	}
}

// tools and approval name the sandbox capability alike (neither imports the
// other: tools declares it on bash, approval's sandbox resolver reads it).
func TestCapabilityNamesAgree(t *testing.T) {
	if tools.CapSandboxed != approval.CapSandboxed {
		t.Errorf("tools.CapSandboxed = %q, approval.CapSandboxed = %q", tools.CapSandboxed, approval.CapSandboxed)
	}
}
