package cycle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/shlex"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// autopilotContinue chains the next cycle after a response with tool calls.
func (sess *session) autopilotContinue() {
	h, bufnr := sess.h, sess.bufnr
	eff := sess.effective(nil)
	on, max := eff.Autopilot, eff.MaxTurns
	st := sess
	st.mu.Lock()
	if !on || st.disarmed {
		st.mu.Unlock()
		return
	}
	if st.turns >= max {
		st.mu.Unlock()
		h.notify(fmt.Sprintf("Autopilot stopped after %d consecutive turns (tools.autopilot.max_turns = %d). Press <C-]> to go on.", st.turns, max), levelWarn)
		return
	}
	st.turns++
	st.mu.Unlock()
	h.autoCycle(bufnr)
}

// autoCycle runs the next phase on autopilot's behalf and shows its message.
func (h *Engine) autoCycle(bufnr int) { h.session(bufnr).autoCycleAs(true) }

// autoCycleAs runs the next phase in the background (autopilot's, or a
// queued press of the user's) and shows its message.
func (sess *session) autoCycleAs(auto bool) {
	h := sess.h
	if h.closingNow() {
		return // a host that is stopping starts nothing new
	}
	res, err := sess.cycle(auto)
	if err != nil {
		h.notify(err.Error(), levelError)
		return
	}
	if res.Message != "" {
		h.notify(res.Message, res.Level)
	}
}

func (h *Engine) Autopilot(action string) (Reply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch action {
	case "enable", "disable":
		on := action == "enable"
		h.rt.Autopilot = &on
	case "status":
	default:
		return reply("none", "usage: :Flemma autopilot:enable|disable|status", levelWarn), nil
	}
	e := options.Resolve(h.cfg, h.rt, options.Buffer{})
	state := map[bool]string{true: "enabled", false: "disabled"}[e.Autopilot]
	return reply("autopilot", fmt.Sprintf("Autopilot %s (max_turns %d; a buffer's flemma.opt.tools.autopilot overrides this).", state, e.MaxTurns), levelInfo), nil
}

// onSwitch is :Flemma switch <provider> [model] [key=value…].
func (h *Engine) onSwitch(args string) (Reply, error) {
	words, err := shlex.Split(args)
	if err != nil {
		return reply("none", "switch: "+err.Error(), levelError), nil
	}
	if len(words) == 0 {
		h.mu.Lock()
		names := h.cfg.ProviderNames()
		h.mu.Unlock()
		return reply("none", "usage: :Flemma switch <provider> [model] [key=value…] (providers: "+strings.Join(names, ", ")+")", levelWarn), nil
	}
	name := words[0]
	h.mu.Lock()
	defer h.mu.Unlock()
	names := h.cfg.ProviderNames()
	known := false
	for _, n := range names {
		known = known || n == name
	}
	if !known {
		return reply("none", fmt.Sprintf("unknown provider %q (known: %s)", name, strings.Join(names, ", ")), levelError), nil
	}
	model := ""
	rest := words[1:]
	if len(rest) > 0 && !strings.Contains(rest[0], "=") {
		model = rest[0]
		rest = rest[1:]
	}
	if s := provider.SuggestModel(h.cfg.Wire(name), model, toOverrides(h.cfg.Models), h.cfg.Providers[name].Model); s != "" {
		return reply("none", fmt.Sprintf("switch: unknown model %q for %s — did you mean %s? (Nothing was changed. A model flemma does not know is taken when its name is not this close to a known one; models = { [%q] = {…} } in setup() declares it.)", model, name, s, model), levelError), nil
	}
	rt := h.rt
	rt.Provider = name
	rt.Model = &model
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return reply("none", fmt.Sprintf("switch: %q is not key=value", kv), levelError), nil
		}
		switch k {
		case "max_tokens":
			n, err := strconv.Atoi(v)
			if err != nil {
				return reply("none", "switch: max_tokens must be a number", levelError), nil
			}
			rt.MaxTokens = &n
		case "temperature":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return reply("none", "switch: temperature must be a number", levelError), nil
			}
			rt.Temperature = &f
		case "thinking":
			rt.Thinking = &v
		case "cache_retention":
			rt.CacheRetention = &v
		default:
			return reply("none", fmt.Sprintf("switch: unknown parameter %q (max_tokens, temperature, thinking, cache_retention)", k), levelError), nil
		}
	}
	h.rt = rt
	return reply("switch", fmt.Sprintf("Provider %s, model %s.", name, modelLabel(h.cfg, name, model)), levelInfo), nil
}
