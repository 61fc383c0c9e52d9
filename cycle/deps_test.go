package cycle

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/provider"
)

// scripted is a provider written in Go: it answers every request with the
// same events.
type scripted struct {
	events []provider.Event

	mu   sync.Mutex
	reqs []provider.Request
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Stream(ctx context.Context, req provider.Request, emit func(provider.Event)) error {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	for _, e := range p.events {
		emit(e)
	}
	return nil
}

// factory is an injected Deps.Providers that hands out one provider (or an
// error) and remembers what it was asked for.
type factory struct {
	prov provider.Provider
	err  error

	mu    sync.Mutex
	asked []string // "name file"
}

func (f *factory) New(name string, cfg provider.Config) (provider.Provider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, name+" "+cfg.ReplayFile)
	return f.prov, f.err
}

// replayAt selects the replay provider (which needs no credential) with a
// script path the injected factory sees.
var replayAt = map[string]any{"provider": "replay", "providers": map[string]any{"replay": map[string]any{"file": "/scripts/one.sse"}}}

// The engine sends through the provider its Deps give it, configured from
// the buffer's options.
func TestInjectedProvider(t *testing.T) {
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventText, Text: "Hello from Go."},
		{Kind: provider.EventUsage, Usage: &provider.Usage{InputTokens: 3, OutputTokens: 4}},
		{Kind: provider.EventDone, StopReason: "end_turn"},
	}}
	f := &factory{prov: prov}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: f.New})
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "Hello from Go.")
	env.ed.waitIdle(t, env.h, 1)
	f.mu.Lock()
	asked := strings.Join(f.asked, "; ")
	f.mu.Unlock()
	if asked != "replay /scripts/one.sse" {
		t.Errorf("the factory was asked for %q", asked)
	}
	prov.mu.Lock()
	if len(prov.reqs) != 1 || len(prov.reqs[0].Messages) != 1 {
		t.Errorf("requests %+v", prov.reqs)
	}
	prov.mu.Unlock()
	env.ed.wait(t, 1, "the usage is told", func(*fakeBuf) bool {
		return strings.Contains(strings.Join(env.ed.notes, "\n"), "scripted: 3 input · 4 output tokens")
	})
}

// A provider the factory cannot make is the user's message, before
// anything is written.
func TestInjectedProviderFails(t *testing.T) {
	f := &factory{err: errors.New("no such provider here")}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: f.New})
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	before := env.ed.String(1)
	phase, msg := env.press(1)
	if phase != "send" || msg != "no such provider here" {
		t.Errorf("press: %s %q", phase, msg)
	}
	if env.ed.String(1) != before {
		t.Errorf("the buffer changed:\n%s", env.ed.String(1))
	}
}

// The built-in approval resolvers come from Deps, once per setup.
func TestInjectedResolvers(t *testing.T) {
	var mu sync.Mutex
	var setups []approval.Setup
	resolvers := func(s approval.Setup) []approval.Resolver {
		mu.Lock()
		setups = append(setups, s)
		mu.Unlock()
		return []approval.Resolver{approval.NewCatchAll()}
	}
	env := newEnvWith(t, noSandbox(), Deps{Resolvers: resolvers})
	mu.Lock()
	n := len(setups)
	mu.Unlock()
	if n != 2 { // the defaults, then setup()
		t.Errorf("%d setups", n)
	}
	list, _ := env.h.onApprovalList()
	if len(list) != 1 || list[0].Name != approval.NewCatchAll().Name() {
		t.Errorf("resolvers %+v", list)
	}
}

// A missing dependency is a wiring mistake, found at start.
func TestNewEngineNeedsItsDeps(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	NewEngine("test", nil, Deps{})
}
