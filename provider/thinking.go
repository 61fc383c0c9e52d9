package provider

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// thinking is a resolved thinking setting (send.md §4.4).
type thinking struct {
	on       bool
	explicit bool   // turned off on purpose ("off", "0", budget 0), not just unset
	level    string // minimal, low, medium, high, max ("" when off)
	budget   int    // tokens, for budget providers
	override string // the provider's own effort/reasoning word, when set
}

// fallback budgets per level, used when a model has no table of its own.
var levelBudget = map[string]int{"minimal": 128, "low": 2048, "medium": 8192, "high": 16384, "max": 32768}

// levelOf derives a level from a token budget.
func levelOf(budget int) string {
	switch {
	case budget <= 256:
		return "minimal"
	case budget <= 4096:
		return "low"
	case budget <= 12288:
		return "medium"
	case budget <= 24576:
		return "high"
	}
	return "max"
}

// resolveThinking reads Params.Thinking and the provider's budgetKey (e.g.
// "thinking_budget", which wins when set) or effortKey (e.g. "reasoning",
// which wins when it is a non-empty string). "" means the default level,
// "high".
func resolveThinking(p Params, budgetKey, effortKey string) (thinking, error) {
	if budgetKey != "" {
		if v, ok := p.Extra[budgetKey]; ok && v != nil {
			n, ok := number(v)
			if !ok || n <= 0 {
				return thinking{explicit: true}, nil
			}
			b := int(math.Floor(n))
			return thinking{on: true, level: levelOf(b), budget: b}, nil
		}
	}
	if effortKey != "" {
		if s, ok := p.Extra[effortKey].(string); ok && strings.TrimSpace(s) != "" {
			s = strings.ToLower(strings.TrimSpace(s))
			if s == "none" || s == "off" {
				return thinking{explicit: true}, nil
			}
			return thinking{on: true, level: s, budget: levelBudget[s], override: s}, nil
		}
	}
	s := strings.ToLower(strings.TrimSpace(p.Thinking))
	switch s {
	case "":
		s = "high"
	case "off", "false", "none", "disabled":
		return thinking{explicit: true}, nil
	}
	if b, ok := levelBudget[s]; ok {
		return thinking{on: true, level: s, budget: b}, nil
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return thinking{}, fmt.Errorf("unknown thinking level %q (want off, minimal, low, medium, high, max or a token budget)", p.Thinking)
	}
	if n == 0 {
		return thinking{explicit: true}, nil
	}
	b := int(math.Floor(n))
	return thinking{on: true, level: levelOf(b), budget: b}, nil
}

// number reads a JSON-ish number (float64 from JSON, any Go integer, or a
// decimal string).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// extraString returns Params.Extra[key] when it is a non-empty string.
func extraString(p Params, key string) string {
	s, _ := p.Extra[key].(string)
	return strings.TrimSpace(s)
}

// extraBool returns Params.Extra[key] as a bool, def when unset.
func extraBool(p Params, key string, def bool) bool {
	if b, ok := p.Extra[key].(bool); ok {
		return b
	}
	return def
}

// cacheRetention normalizes Params.CacheRetention to short, long or none.
func cacheRetention(p Params) (string, error) {
	switch r := strings.ToLower(strings.TrimSpace(p.CacheRetention)); r {
	case "", "short":
		return "short", nil
	case "long", "none":
		return r, nil
	}
	return "", fmt.Errorf("unknown cache_retention %q (want short, long or none)", p.CacheRetention)
}
