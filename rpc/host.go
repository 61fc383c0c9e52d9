package rpc

import (
	"fmt"
	"log"
	"sync"

	"github.com/neovim/go-client/nvim"

	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Host serves one Neovim: the cycle's engine, connected to Neovim through
// the adapters in nvim.go and exposed as msgpack-RPC handlers.
type Host struct {
	*cycle.Engine
	nv    *nvim.Nvim
	async map[string]cycle.Method // the methods flemma.async may call: all of them

	// Started, when set, is called once after the first flemma.setup has
	// been answered: the host's start is over (cmd/flemma-host lets go of
	// the executable's pages the start touched there).
	Started   func()
	startOnce sync.Once
}

// NewHost returns a host with default configuration, whose engine is built
// from deps (the tools, the providers, the built-in approval resolvers).
func NewHost(version string, logger *log.Logger, deps cycle.Deps) *Host {
	return &Host{Engine: cycle.NewEngine(version, logger, deps)}
}

// Attach connects the engine to a Neovim and registers its methods
// (cycle.Methods): each synchronously, and every one also through the
// flemma.async notification, which is how the plugin calls them.
func (h *Host) Attach(v *nvim.Nvim) error {
	h.nv = v
	h.Connect(editor{v}, luaCalls{v})
	h.async = map[string]cycle.Method{}
	for _, m := range h.Methods() {
		if setup, ok := m.Fn.(func(string) error); ok && m.Name == cycle.MSetup {
			m.Fn = func(cfg string) error {
				err := setup(cfg)
				if h.Started != nil {
					h.startOnce.Do(func() { go h.Started() })
				}
				return err
			}
		}
		m.Fn = withOp(m.Name, m.Fn)
		if err := v.RegisterHandler(m.Name, m.Fn); err != nil {
			return fmt.Errorf("register %s: %w", m.Name, err)
		}
		h.async[m.Name] = m
	}
	if err := v.RegisterHandler(cycle.MAsync, h.hAsync); err != nil {
		return fmt.Errorf("register %s: %w", cycle.MAsync, err)
	}
	return nil
}

// Shutdown stops the engine's work and kills every command tree the host
// process started, before it exits.
func (h *Host) Shutdown() {
	h.Engine.Shutdown()
	sandbox.KillAll()
}
