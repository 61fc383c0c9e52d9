package cycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
)

// luaResolve calls a resolver that lives in Neovim. kind is "lua" (registered
// with flemma.tools.approval), "config" (a setup function) or "module".
func (h *Engine) luaResolve(kind, name string) func(ctx context.Context, c approval.Call) (approval.Decision, string, error) {
	return func(ctx context.Context, c approval.Call) (approval.Decision, string, error) {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		if buffer.ValueDepth(input, buffer.MaxInputDepth) > buffer.MaxInputDepth {
			// A tool chain's step built from a tool's output: never handed
			// to Neovim (it could close the RPC channel); it asks.
			return approval.RequireApproval, "its input is nested deeper than 64 levels", nil
		}
		res, err := h.lua.Resolve(kind, name, c.Tool, input, ResolveContext{Bufnr: c.Bufnr, ToolID: c.ID})
		if err != nil {
			return approval.Pass, "", fmt.Errorf("call %s resolver %s: %w", kind, name, err)
		}
		if res.Error != "" {
			return approval.Pass, "", errors.New(res.Error)
		}
		if res.Decision == nil {
			return approval.Pass, "", nil
		}
		d, err := approval.ParseDecision(*res.Decision)
		if err != nil {
			return approval.Pass, "", err
		}
		rule := "function"
		if kind == "module" {
			rule = name
		}
		return d, rule, nil
	}
}

type ResolverInfo struct {
	Name        string  `msgpack:"name"`
	Priority    float64 `msgpack:"priority"`
	Description string  `msgpack:"description"`
}

func (h *Engine) onApprovalRegister(r ResolverInfo) error {
	if err := approval.ValidateLuaName(r.Name); err != nil {
		return err
	}
	h.chain.Register(&approval.FuncResolver{N: r.Name, P: int(r.Priority), Desc: r.Description, Fn: h.luaResolve("lua", r.Name)})
	h.logf("registered Lua approval resolver %s (priority %d)", r.Name, int(r.Priority))
	return nil
}

func (h *Engine) onApprovalUnregister(name string) (UnregisterReply, error) {
	return UnregisterReply{Removed: h.chain.Unregister(name)}, nil
}

func (h *Engine) onApprovalList() ([]ResolverInfo, error) {
	out := []ResolverInfo{}
	for _, r := range h.chain.All() {
		w := ResolverInfo{Name: r.Name(), Priority: float64(r.Priority())}
		if d, ok := r.(approval.Describer); ok {
			w.Description = d.Description()
		}
		out = append(out, w)
	}
	return out, nil
}
