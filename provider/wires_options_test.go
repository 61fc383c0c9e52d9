package provider

import (
	"reflect"
	"slices"
	"testing"

	"github.com/flemma-dev/flemma/options"
)

// The wire registry (each wire's file registers its own) and the option
// schema agree: the wires providers.<name>.wire accepts, the built-in
// providers, and the parameters.<section> each wire's requests take. A new
// wire registered without its option side fails here.
func TestWiresAgreeWithOptions(t *testing.T) {
	var enum, want []string
	for _, o := range options.Entries["providers"] {
		if o.Path == "wire" {
			enum = slices.Clone(o.Enum)
		}
	}
	for n, w := range wires {
		if w.Selectable {
			want = append(want, n) // aliases too: "responses"
		}
	}
	slices.Sort(enum)
	slices.Sort(want)
	if !reflect.DeepEqual(enum, want) {
		t.Errorf("providers.<name>.wire accepts %v; the registered wires are %v", enum, want)
	}
	if !reflect.DeepEqual(options.BuiltinProviders, Names()) {
		t.Errorf("options.BuiltinProviders = %v; Names() = %v", options.BuiltinProviders, Names())
	}
	for _, n := range want {
		var cfg options.Config
		cfg.Parameters.Anthropic = map[string]any{"section": "anthropic"}
		cfg.Parameters.OpenAI = map[string]any{"section": "openai"}
		cfg.Parameters.Vertex = map[string]any{"section": "vertex"}
		cfg.Providers = map[string]options.ProviderConfig{"mine": {Wire: n}}
		e := options.Resolve(cfg, options.Runtime{Provider: "mine"}, options.Buffer{})
		got, _ := e.Extra["section"].(string)
		if got != wires[n].Params {
			t.Errorf("a provider of wire %s takes parameters.%s; its registration says %q", n, got, wires[n].Params)
		}
	}
}
