package rpc

import (
	"fmt"
	"log"

	"github.com/neovim/go-client/nvim"

	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/tools"
)

// Host serves one Neovim: the cycle's engine, connected to Neovim through
// the adapters in nvim.go and exposed as msgpack-RPC handlers.
type Host struct {
	*cycle.Engine
	nv *nvim.Nvim
}

// NewHost returns a host with default configuration and the given tools.
func NewHost(version string, logger *log.Logger, reg *tools.Registry) *Host {
	return &Host{Engine: cycle.NewEngine(version, logger, reg)}
}

func (h *Host) logf(format string, args ...any) {
	if h.Log != nil {
		h.Log.Printf(format, args...)
	}
}

// Attach connects the engine to a Neovim and registers the handlers.
func (h *Host) Attach(v *nvim.Nvim) error {
	h.nv = v
	h.Connect(editor{v}, luaCalls{v})
	e := h.Engine
	handlers := map[string]any{
		"flemma.version":             e.VersionInfo,
		"flemma.ping":                func() (string, error) { return "pong", nil },
		"flemma.setup":               e.Setup,
		"flemma.health":              e.Health,
		"flemma.sandbox_writable":    e.SandboxWritable,
		"flemma.sandbox_wrap":        e.SandboxWrap,
		"flemma.truncate":            e.Truncate,
		"flemma.format_size":         e.FormatSize,
		"flemma.forget":              e.Forget,
		"flemma.bench_run":           e.BenchRun,
		"flemma.refresh":             e.Refresh,
		"flemma.define_tools":        e.DefineTools,
		"flemma.approval_register":   e.ApprovalRegister,
		"flemma.approval_unregister": e.ApprovalUnregister,
		"flemma.approval_list":       e.ApprovalList,
		"flemma.tool_done":           e.ToolDone,
		"flemma.async":               h.hAsync,
	}
	// The user's commands are also served synchronously (tests and
	// scripts call them with rpcrequest).
	for name, fn := range h.asyncMethods() {
		handlers[name] = fn
	}
	for name, fn := range handlers {
		if err := v.RegisterHandler(name, fn); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// Shutdown stops the engine's work and kills every command tree the host
// process started, before it exits.
func (h *Host) Shutdown() {
	h.Engine.Shutdown()
	tools.KillAll()
}
