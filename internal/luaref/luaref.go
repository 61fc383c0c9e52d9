// Package luaref runs the Lua Flemma parser in a real Neovim under LuaJIT,
// for the benchmark that compares flemma's Go parser with it.
//
// The Lua parser is reference data, not code of this repository: its files
// (lua/flemma/parser/init.lua and the modules parse_lines requires, with
// their paths) live in a folder outside the checkout named by the
// environment variable FLEMMA_LUA_REF. Without it, Dir says why and the
// benchmark skips. docs/benchmarks.md says how to lay the folder out.
package luaref

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Env names the folder that holds the Lua Flemma's lua/ tree.
const Env = "FLEMMA_LUA_REF"

// Dir returns the reference folder, or an error saying why it cannot be
// used (unset, or the parser is not in it).
func Dir() (string, error) {
	dir := os.Getenv(Env)
	if dir == "" {
		return "", errors.New("$" + Env + " is not set: it must name a folder holding the Lua Flemma's lua/flemma/parser/init.lua and the modules it requires (reference data, kept outside the repository; see docs/benchmarks.md)")
	}
	if _, err := os.Stat(filepath.Join(dir, "lua", "flemma", "parser", "init.lua")); err != nil {
		return "", fmt.Errorf("$%s=%s has no lua/flemma/parser/init.lua: %w", Env, dir, err)
	}
	return dir, nil
}

// script loads the parser into a Neovim (see bench.lua); the benchmark
// runs it (nvim_test.go: only rpc and the test helpers talk to Neovim).
//
//go:embed bench.lua
var script string

// Reading is what the Lua parser found in the text, to check that it read
// it as flemma does, and the Lua it runs under.
type Reading struct {
	Messages    int    `msgpack:"messages"`
	ToolUses    int    `msgpack:"tool_uses"`
	ToolResults int    `msgpack:"tool_results"`
	Errors      int    `msgpack:"errors"`
	JIT         string `msgpack:"jit"` // jit.version and whether the compiler is on
}
