package headless

import "github.com/flemma-dev/flemma/cycle"

// noLuaHere is what a headless run answers where the plugin would call
// into Neovim's Lua.
const noLuaHere = "no Lua in a headless run (flemma-host run)"

// NoLua is the cycle.Lua of a process without Neovim: there are no Lua
// tools (none is ever registered), no Lua resolvers (an error, which the
// approval chain logs and skips: the call asks) and no custom previews or
// diffs.
// Run refuses a configuration that needs Lua before the engine starts.
type NoLua struct{}

func (NoLua) Resolve(kind, name, tool string, input map[string]any, ctx cycle.ResolveContext) (cycle.ResolveAnswer, error) {
	return cycle.ResolveAnswer{Error: noLuaHere}, nil
}

func (NoLua) ExecuteTool(name, token string, input any, info cycle.ToolInfo) (cycle.LuaResponse, error) {
	return cycle.LuaResponse{Status: "internal", Error: noLuaHere}, nil
}

func (NoLua) CancelTool(token string) error { return nil }

func (NoLua) Preview(name string, input map[string]any, maxLen int) (*string, error) {
	return nil, nil
}

var _ cycle.Lua = NoLua{}

func (NoLua) Diff(name string, input map[string]any, info cycle.ToolInfo) (*cycle.LuaDiff, error) {
	return nil, nil
}

func (NoLua) ReviewInput(name string, input map[string]any, content string) (cycle.LuaReview, error) {
	return cycle.LuaReview{Error: noLuaHere}, nil
}
