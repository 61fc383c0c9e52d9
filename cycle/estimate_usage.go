package cycle

import (
	"fmt"

	"github.com/flemma-dev/flemma/provider"
)

// The usage line after a response says the cache hit rate and the
// session's cost (issue 27, "usage and context"), and a send that would
// not fit the model's window says by how much and what to do.

// cacheHit is " (67% hit)": the share of the prompt read from the cache
// (input, cache reads and cache writes are disjoint: provider.Usage).
func cacheHit(u *provider.Usage) string {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if prompt <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d%% hit)", (u.CacheReadTokens*100+prompt/2)/prompt)
}

// sessionCost is " · session $0.1234": what this host's responses cost so
// far, when all of them were priced and there was more than one.
func (h *Engine) sessionCost() string {
	h.mu.Lock()
	u := h.usage
	h.mu.Unlock()
	if u.Priced < 2 {
		return ""
	}
	s := " · session " + dollars(u.Cost)
	if u.Unpriced > 0 {
		s += fmt.Sprintf(" (%d unpriced)", u.Unpriced)
	}
	return s
}

// overWindow is the message of a send held because it would not fit the
// model's context window.
func overWindow(tokens int, model string, window int) string {
	return fmt.Sprintf("This send is about %s tokens (an estimate), about %s more than %s's %s-token window: the provider will likely refuse it, so it was not sent. :Flemma compact summarizes the conversation first, or delete turns you no longer need, or :Flemma switch to a model with a larger window; <C-]> again sends it as it is.",
		thousands(tokens), thousands(tokens-window), model, thousands(window))
}
