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
