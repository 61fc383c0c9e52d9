package cycle

import (
	"sort"

	"github.com/flemma-dev/flemma/frontmatter"
)

// The effective options of a buffer: setup, then :Flemma switch/autopilot,
// then the buffer's frontmatter. A frontmatter is the file's, and the file
// may come from anyone: unless the user trusts the buffer, it can only
// narrow what setup allows — select fewer tools, lower limits, turn
// autopilot off — never enable a tool the setup leaves disabled, raise a
// limit or turn autopilot on (issue 11, class 5; SPEC §5a).

// bufferTools returns the tools a buffer may use: every usable tool enabled
// by default, or the frontmatter's flemma.opt.tools selection. An untrusted
// selection is limited to the tools enabled by default; a trusted one may
// opt in tools that are disabled by default (seed 004).
func (h *Engine) bufferTools(bufnr int, fm *frontmatter.Result) map[string]bool {
	def := map[string]bool{}
	for _, t := range h.Registry.All() {
		if t.Spec().Enabled && len(h.Registry.Missing(t)) == 0 {
			def[t.Spec().Name] = true
		}
	}
	if fm == nil || fm.Opts.Tools == nil {
		return def
	}
	h.mu.Lock()
	trusted := h.trustOf(bufnr).trusted
	h.mu.Unlock()
	out := map[string]bool{}
	for _, n := range fm.Opts.Tools {
		switch {
		case def[n], trusted:
			out[n] = true
		default:
			h.logf("buffer %d: flemma.opt.tools selects %s, which setup leaves disabled; an untrusted file cannot enable it", bufnr, n)
		}
	}
	return out
}

// toolNames returns the buffer's tools sorted.
func toolNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// maxConcurrentFor is tools.max_concurrent of a buffer (0 = unlimited).
// Call with h.mu held.
func (h *Engine) maxConcurrentFor(bufnr int) int {
	limit := h.cfg.maxConcurrent()
	fm := h.bufFM[bufnr]
	if fm == nil || fm.Opts.MaxConcurrent == nil {
		return limit
	}
	f := *fm.Opts.MaxConcurrent
	if h.trustOf(bufnr).trusted {
		return f
	}
	return narrowLimit(limit, f)
}

// maxTurnsFor is tools.autopilot.max_turns of a buffer. Call with h.mu held.
func (h *Engine) maxTurnsFor(bufnr int) int {
	max := h.cfg.Tools.Autopilot.MaxTurns
	if max <= 0 {
		max = 100
	}
	fm := h.bufFM[bufnr]
	if fm == nil || fm.Opts.MaxTurns == nil || *fm.Opts.MaxTurns <= 0 {
		return max
	}
	if h.trustOf(bufnr).trusted {
		return *fm.Opts.MaxTurns
	}
	return narrowLimit(max, *fm.Opts.MaxTurns)
}

// narrowLimit is the stricter of two limits where 0 means unlimited.
func narrowLimit(setup, file int) int {
	switch {
	case setup <= 0:
		return file
	case file <= 0:
		return setup
	}
	return min(setup, file)
}

// autopilotFor: :Flemma autopilot:disable, then the buffer's frontmatter
// (which, untrusted, can only turn it off), then :Flemma autopilot:enable,
// then setup. Call with h.mu held.
func (h *Engine) autopilotFor(bufnr int) bool {
	// :Flemma autopilot:disable is the user's word: a file cannot undo it.
	if h.autopilotOverride != nil && !*h.autopilotOverride {
		return false
	}
	if fm := h.bufFM[bufnr]; fm != nil && fm.Opts.Autopilot != nil {
		if !*fm.Opts.Autopilot || h.trustOf(bufnr).trusted {
			return *fm.Opts.Autopilot
		}
	}
	if h.autopilotOverride != nil {
		return *h.autopilotOverride
	}
	return h.cfg.autopilot()
}
