package cycle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/editdist"
	"github.com/flemma-dev/flemma/options"
)

// Calls that cannot run whatever anyone decides (issue 28 item 5, seed
// 000's UnknownTool): the tool is not registered, is hidden (a requirement
// is missing), is not enabled in the buffer, or is a tool chain one of
// whose steps calls such a tool. Categorize gives them their error result
// at once — no approval is asked, since approving would change nothing —
// and autopilot goes on. The check runs after the tool sources are ready
// (Engine.sourcesReady), so a tool still loading is never called unknown.

// cannotRun says why a call of tu cannot run in a buffer whose options are
// eff, in words for the model (with a did-you-mean); "" when it can.
func (h *Engine) cannotRun(tu *buffer.ToolUse, eff options.Effective) string {
	if msg := h.toolUnusable(tu.Name, eff); msg != "" {
		return msg
	}
	if ct, ok := h.chainOf(tu.Name); ok {
		for i, st := range ct.chain.Spec.Steps {
			if _, nested := h.chainOf(st.Tool); nested {
				continue // refused when it runs, with its own words
			}
			if msg := h.toolUnusable(st.Tool, eff); msg != "" {
				return fmt.Sprintf("Tool chain '%s' cannot run: step %d '%s': %s Nothing was run.", tu.Name, i+1, st.Name, msg)
			}
		}
	}
	return ""
}

// toolUnusable is cannotRun for one tool name.
func (h *Engine) toolUnusable(name string, eff options.Effective) string {
	t, ok := h.Registry.Get(name)
	switch {
	case !ok:
		return fmt.Sprintf("Unknown tool: %s.%s", name, h.didYouMean(name, eff))
	case len(h.Registry.Missing(t)) > 0:
		return fmt.Sprintf("Tool '%s' is not available here: it requires %s, which is missing.", name, strings.Join(h.Registry.Missing(t), ", "))
	case eff.Mode != "disabled" && !eff.HasTool(name):
		return fmt.Sprintf("Tool '%s' is not enabled in this buffer (see flemma.opt.tools).%s", name, h.didYouMean(name, eff))
	}
	return ""
}

// didYouMean names the buffer's tool closest to name (two edits at most,
// or one whose name contains it), and lists the buffer's tools.
func (h *Engine) didYouMean(name string, eff options.Effective) string {
	best, bestD := "", 3
	for _, n := range eff.Tools {
		if n == name {
			continue
		}
		d := editdist.Distance(name, n, bestD)
		if d >= bestD && (strings.Contains(n, name) || strings.Contains(name, n)) && len(name) >= 3 && len(n) >= 3 {
			d = bestD - 1 // "read_file" for "read", "grep" for "rgrep": close enough to name
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	out := ""
	if best != "" {
		out = fmt.Sprintf(" Did you mean %s?", best)
	}
	tools := slices.Clone(eff.Tools)
	const most = 40
	if len(tools) > most {
		tools = append(tools[:most], fmt.Sprintf("… %d more", len(eff.Tools)-most))
	}
	if len(tools) > 0 {
		out += " Available tools: " + strings.Join(tools, ", ") + "."
	} else {
		out += " No tools are available in this buffer."
	}
	return out
}

// overCap gives, for the calls of a response past the first max (its tool
// uses in order; max 0: no cap), the error result that says why they did
// not run (tools.max_calls_per_response, issue 28 item 11; seed 001's
// batch limit). The first max calls are decided as usual; the others
// never ask, and autopilot sends their results on, so the model can make
// them again in its next response.
func overCap(doc *buffer.Document, max int) map[string]string {
	if max <= 0 {
		return nil
	}
	var out map[string]string
	for _, m := range doc.Messages {
		var uses []*buffer.ToolUse
		for _, seg := range m.Segments {
			if tu, ok := seg.(*buffer.ToolUse); ok && doc.Use(tu.ID) == tu {
				uses = append(uses, tu)
			}
		}
		if len(uses) <= max {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		for _, tu := range uses[max:] {
			out[tu.ID] = fmt.Sprintf("Not run: this response made %d tool calls, and at most %d of one response run (tools.max_calls_per_response). Make the calls that are still needed in your next response.", len(uses), max)
		}
	}
	return out
}
