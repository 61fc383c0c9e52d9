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
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/neovim/go-client/nvim"
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

// Parser is the Lua Flemma's parser loaded in a running Neovim with the
// lines of one .chat file.
type Parser struct {
	nv     *nvim.Nvim
	cancel context.CancelFunc
}

// Start runs bin (a Neovim) embedded and headless with --clean (no user
// config, no plugin), loads the Lua parser from dir and the lines of chat
// (read with readfile(), as a buffer would hold them), parses them once and
// warms the parser up.
func Start(bin, dir, chat string) (*Parser, Reading, error) {
	var r Reading
	ctx, cancel := context.WithCancel(context.Background())
	nv, err := nvim.NewChildProcess(
		nvim.ChildProcessCommand(bin),
		nvim.ChildProcessArgs("--clean", "-n", "--embed", "--headless"),
		nvim.ChildProcessContext(ctx),
		nvim.ChildProcessServe(true),
	)
	if err != nil {
		cancel()
		return nil, r, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Parser{nv: nv, cancel: cancel}
	if err := nv.ExecLua(script, &r, dir, chat); err != nil {
		p.Close()
		return nil, r, fmt.Errorf("load the Lua parser from %s: %w", dir, err)
	}
	if !strings.HasPrefix(r.JIT, "LuaJIT") || !strings.HasSuffix(r.JIT, " on") {
		p.Close()
		return nil, r, fmt.Errorf("%s does not run Lua under LuaJIT with the compiler on (%q)", bin, r.JIT)
	}
	return p, r, nil
}

// Time runs parse_lines n times in a row and returns the mean time of one,
// in nanoseconds, measured inside Lua with vim.loop.hrtime.
func (p *Parser) Time(n int) (float64, error) {
	var ns float64
	err := p.nv.ExecLua(`return _G.flemma_luaref_time(...)`, &ns, n)
	return ns, err
}

// Close stops Neovim.
func (p *Parser) Close() {
	_ = p.nv.Close()
	p.cancel()
}
