package cycle

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flemma-dev/flemma/provider"
)

// usageTotal sums the token accounting of responses, and their cost where
// the model's prices are known.
type usageTotal struct {
	Requests int
	provider.Usage
	Cost     float64 // US dollars, of the responses whose prices are known
	Priced   int     // responses with usage and known prices
	Unpriced int     // responses with usage but no known prices
}

func (u *usageTotal) add(x *provider.Usage, cost float64, known bool) {
	u.Requests++
	if x == nil {
		return
	}
	if known {
		u.Cost += cost
		u.Priced++
	} else {
		u.Unpriced++
	}
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.CacheReadTokens += x.CacheReadTokens
	u.CacheWriteTokens += x.CacheWriteTokens
	u.ThinkingTokens += x.ThinkingTokens
	u.WebSearches += x.WebSearches
}

func (u usageTotal) String() string {
	s := fmt.Sprintf("%d responses · %s input · %s output tokens", u.Requests, thousands(u.InputTokens), thousands(u.OutputTokens))
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(" · cache %s read, %s written", thousands(u.CacheReadTokens), thousands(u.CacheWriteTokens))
	}
	if u.ThinkingTokens > 0 {
		s += fmt.Sprintf(" · %s reasoning", thousands(u.ThinkingTokens))
	}
	if u.WebSearches > 0 {
		s += fmt.Sprintf(" · %s web searches", thousands(u.WebSearches))
	}
	switch {
	case u.Priced > 0 && u.Unpriced == 0:
		s += " · " + dollars(u.Cost)
	case u.Priced > 0:
		s += fmt.Sprintf(" · %s (%d responses without known prices)", dollars(u.Cost), u.Unpriced)
	}
	return s
}

// dollars writes a cost: cents under a dollar keep four decimals ($0.0123).
func dollars(c float64) string {
	if c < 1 {
		return fmt.Sprintf("$%.4f", c)
	}
	return fmt.Sprintf("$%.2f", c)
}

// thousands writes n with a comma every three digits (1,204).
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func usageEvent(u *provider.Usage) *UsageEvent {
	if u == nil {
		return nil
	}
	return &UsageEvent{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ThinkingTokens, WebSearches: u.WebSearches}
}

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

// responseCost is what a response cost, when the model's prices are known.
func responseCost(u *provider.Usage, info *provider.ModelInfo) (float64, bool) {
	if u == nil || info == nil {
		return 0, false
	}
	return info.Prices.Cost(*u)
}

// usageLine is the note after a response: its tokens, the cache's share,
// web searches and what it cost.
func (h *Engine) usageLine(name string, u *provider.Usage, cost float64, costKnown bool) string {
	msg := fmt.Sprintf("%s: %d input · %d output tokens", name, u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		// The statusline's "in" counts the cache reads too: say them.
		msg += fmt.Sprintf(" · cache %d read, %d written", u.CacheReadTokens, u.CacheWriteTokens) + cacheHit(u)
	}
	if u.WebSearches > 0 {
		msg += fmt.Sprintf(" · %d web searches", u.WebSearches)
	}
	if costKnown {
		msg += " · " + dollars(cost) + h.sessionCost()
	}
	return msg
}
