package provider

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// A Wire is one API flemma speaks to models. Each wire's file registers
// its own (registerWire in an init), so a new wire is that file: New,
// Wires, Names, the extra_body protection and the parameter section all
// read this table.
type Wire struct {
	// Name is what providers.<name>.wire says, and the name of the
	// built-in provider that speaks it when Builtin.
	Name string
	// Aliases name the same wire ("responses" for openai).
	Aliases []string
	// Selectable: a configured provider may name it as its wire (copilot
	// and replay are providers, not wires one may point elsewhere).
	Selectable bool
	// Builtin: a provider of this name exists without configuration.
	Builtin bool
	// Params is the parameters.<section> its requests take their extra
	// parameters from ("": none).
	Params string
	// Protected are the body keys flemma builds itself: extra_body may not
	// replace them.
	Protected []string
	// Key is the credential source of the built-in provider of this name.
	Key KeySource
	// Signs: the wire's thinking signatures mean the same at every
	// endpoint, so the buffer records them under the wire's name (Signer).
	Signs bool
	// WebSearch and WebFetch: the wire has the provider's own web tools
	// (tools.web_search, tools.web_fetch).
	WebSearch, WebFetch bool
	// List asks the wire's server for the ids of its models (nil: it has
	// no listing), with the credential flemma holds ("" for none) unless
	// ListSignsIn (it signs in by itself: copilot).
	List        func(ctx context.Context, client *http.Client, name string, cfg Config, key string) ([]string, error)
	ListSignsIn bool
	// New makes the wire's client for the configured provider name (cfg
	// is complete: HTTP client, credential holder).
	New func(name string, cfg Config) Provider
}

var wires = map[string]Wire{}

// registerWire adds a wire; a second wire of the same name or alias is a
// programmer error.
func registerWire(w Wire) {
	for _, n := range append([]string{w.Name}, w.Aliases...) {
		if _, dup := wires[n]; dup {
			panic(fmt.Sprintf("provider: wire %q registered twice", n))
		}
		wires[n] = w
	}
}

// wireOf returns the registered wire called name (or one of its aliases).
func wireOf(name string) (Wire, bool) {
	w, ok := wires[name]
	return w, ok
}

// Wires lists the wire formats a named provider may speak (aliases not
// included), sorted.
func Wires() []string {
	var out []string
	for n, w := range wires {
		if w.Selectable && n == w.Name {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Names lists the built-in providers, sorted.
func Names() []string {
	var out []string
	for n, w := range wires {
		if w.Builtin && n == w.Name {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// WireWeb says which of the provider's own web tools a wire (or alias)
// has.
func WireWeb(wire string) (search, fetch bool) {
	w, _ := wireOf(wire)
	return w.WebSearch, w.WebFetch
}

func protectedKeys(wire string) []string {
	w, _ := wireOf(wire)
	return slices.Clone(w.Protected)
}
