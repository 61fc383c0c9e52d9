package cycle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// The model catalogue, as the engine uses it: what a send is built for
// (provider.LookupModel with setup's models = {…}), the notes a user gets
// once per model, and what :Flemma status and :Flemma switch say of it.

func toOverrides(in map[string]options.ModelOverride) map[string]provider.ModelOverride {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]provider.ModelOverride, len(in))
	for k, o := range in {
		out[k] = provider.ModelOverride{MaxOutputTokens: o.MaxOutputTokens, ContextWindow: o.ContextWindow, Thinking: o.Thinking,
			InputPrice: o.InputPrice, OutputPrice: o.OutputPrice, CacheReadPrice: o.CacheReadPrice, CacheWritePrice: o.CacheWritePrice}
	}
	return out
}

// modelInfo is what a send to the provider's model is built for: the
// catalogue of the provider's wire (a named provider on the anthropic wire
// reads Anthropic's; on chat_completions, any section), with setup's
// models = {…} on top.
func (h *Engine) modelInfo(name, model string) provider.ModelInfo {
	h.mu.Lock()
	wire, ov := h.cfg.Wire(name), toOverrides(h.cfg.Models)
	h.mu.Unlock()
	return provider.LookupModel(wire, model, ov)
}

// wire is the API the provider speaks.
func (h *Engine) wire(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Wire(name)
}

// modelName is the model a send uses: the configured one, or the default
// of the provider's wire.
func (h *Engine) modelName(name, model string) string {
	if model == "" {
		return provider.DefaultModel(h.wire(name))
	}
	return model
}

// noteModel tells the user, once per model (and once per max_tokens that
// is cut), what flemma does with a model it does not know and with a
// max_tokens above a model's limit.
func (h *Engine) noteModel(name string, p provider.Params, info provider.ModelInfo) {
	model, wire := h.modelName(name, p.Model), h.wire(name)
	var key, msg string
	switch {
	case !info.Known && wire == "chat_completions":
		// flemma sends such a server only what the user set: there is
		// no default of ours to explain.
		return
	case !info.Known:
		key = "unknown " + name + " " + model
		sent := provider.MaxTokens(wire, p, info)
		msg = fmt.Sprintf("flemma does not know the model %s (%s): it sends max_tokens %s and no thinking parameter; models = { [%q] = { max_output_tokens = …, thinking = … } } in setup() describes it.",
			model, name, thousands(sent), model)
	case info.Family && wire != "chat_completions":
		// A later model of a known family: said once, so that a request
		// the model refuses is not a mystery.
		key = "family " + name + " " + model
		msg = fmt.Sprintf("flemma does not list %s (%s) and takes it for the family %s: thinking %s%s; models = { [%q] = {…} } in setup() corrects this.",
			model, name, info.Name, info.Thinking, map[bool]string{true: ", no temperature", false: ""}[info.NoSampling], model)
	case info.MaxOutputTokens > 0 && p.MaxTokens > info.MaxOutputTokens:
		key = fmt.Sprintf("limit %s %s %d", name, model, p.MaxTokens)
		msg = fmt.Sprintf("max_tokens %s is above the output limit of %s (%s): %s is sent.",
			thousands(p.MaxTokens), model, thousands(info.MaxOutputTokens), thousands(info.MaxOutputTokens))
	default:
		return
	}
	h.mu.Lock()
	if h.noted == nil {
		h.noted = map[string]bool{}
	}
	seen := h.noted[key]
	h.noted[key] = true
	h.mu.Unlock()
	if !seen {
		h.notify(msg, levelInfo)
	}
}

// describeModel is :Flemma status's line on the model.
func describeModel(wire string, p provider.Params, info provider.ModelInfo) string {
	switch {
	case !info.Known && wire == "chat_completions":
		return "model info: not in flemma's catalogue: the server's limits and defaults apply (models = {…} in setup() describes it)"
	case !info.Known:
		return fmt.Sprintf("model info: not in flemma's catalogue: max_tokens %s, no thinking parameter (models = {…} in setup() describes it)",
			thousands(provider.MaxTokens(wire, p, info)))
	}
	var parts []string
	if info.ContextWindow > 0 {
		parts = append(parts, "context "+thousands(info.ContextWindow))
	}
	if info.MaxOutputTokens > 0 {
		parts = append(parts, "output limit "+thousands(info.MaxOutputTokens))
	}
	th := "thinking " + info.Thinking
	if len(info.Efforts) > 0 {
		th += " (" + strings.Join(info.Efforts, ", ") + ")"
	}
	parts = append(parts, th)
	if pr := info.Prices; pr.Input > 0 || pr.Output > 0 {
		s := fmt.Sprintf("$%s in · $%s out", price(pr.Input), price(pr.Output))
		if pr.CacheRead > 0 {
			s += " · $" + price(pr.CacheRead) + " cache read"
		}
		if pr.CacheWrite > 0 {
			s += " · $" + price(pr.CacheWrite) + " cache write"
		}
		parts = append(parts, s+" per million tokens")
	}
	if info.Family {
		parts = append(parts, "not listed: taken for the family "+info.Name+" (models = {…} in setup() corrects this)")
	}
	if info.NoSampling {
		parts = append(parts, "no temperature")
	}
	return "model info: " + strings.Join(parts, " · ")
}

func price(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// modelLabel names the model a send uses: the configured one, or the
// default of the provider's wire, marked so.
func modelLabel(cfg options.Config, name, model string) string {
	if model != "" {
		return model
	}
	if d := provider.DefaultModel(cfg.Wire(name)); d != "" {
		return d + " (default)"
	}
	return "none (set providers." + name + ".model)"
}

// onModels is what :Flemma switch completes: the providers, and per provider
// the catalogue's model ids of its wire, its configured model, the models
// setup describes, and the ones its server listed (Discover).
func (h *Engine) onModels() (ModelsReply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.modelsLocked(), nil
}

func (h *Engine) modelsLocked() ModelsReply {
	cfg := h.cfg
	r := ModelsReply{Providers: cfg.ProviderNames(), Models: map[string][]string{}, Listed: map[string]bool{}, Defaults: map[string]string{}}
	for _, p := range r.Providers {
		r.Defaults[p] = cfg.Providers[p].Model
		if r.Defaults[p] == "" {
			r.Defaults[p] = provider.DefaultModel(cfg.Wire(p))
		}
		names := provider.ModelNames(cfg.Wire(p))
		if m := cfg.Providers[p].Model; m != "" {
			names = append(names, m)
		}
		for k := range cfg.Models {
			names = append(names, k)
		}
		if d := h.discovered[p]; d != nil && d.done {
			names = append(names, d.ids...)
			r.Listed[p] = d.err == ""
		}
		sort.Strings(names)
		r.Models[p] = dedup(names)
	}
	return r
}

// discovery is a model list asked of a provider's server.
type discovery struct {
	done bool
	ids  []string
	err  string
}

// onDiscover asks a provider's server for its models, once per host, in the
// background (the plugin asks when :Flemma switch completes or picks that
// provider's models): the answer comes at once, the list later, with the
// FlemmaModels event carrying the whole catalogue again. A server that
// does not answer leaves the catalogue as it was; the log says why.
func (h *Engine) onDiscover(name string) (Reply, error) {
	h.mu.Lock()
	known := false
	for _, n := range h.cfg.ProviderNames() {
		known = known || n == name
	}
	if !known || h.discovered[name] != nil || h.closing {
		h.mu.Unlock()
		return reply("none", "", 0), nil
	}
	if h.discovered == nil {
		h.discovered = map[string]*discovery{}
	}
	d := &discovery{}
	h.discovered[name] = d
	e := options.Resolve(h.cfg, options.Runtime{Provider: name}, options.Buffer{})
	h.mu.Unlock()
	_, _, pc := h.request(e)
	go func() {
		ids, err := h.listModels(context.Background(), name, pc)
		h.mu.Lock()
		d.done, d.ids = true, ids
		if err != nil {
			d.err = err.Error()
		}
		models := h.modelsLocked()
		h.mu.Unlock()
		if err != nil {
			h.logf("models of %s: %v", name, err)
		} else {
			h.logf("models of %s: %d listed by its server", name, len(ids))
		}
		h.event("FlemmaModels", models) // the picker waits for it either way
	}()
	return reply("none", "", 0), nil
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
