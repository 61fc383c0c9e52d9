package luaref

import (
	"context"
	"fmt"
	"strings"

	"github.com/neovim/go-client/nvim"
)

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
