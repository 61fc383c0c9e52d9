package cycle

import (
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/tools"
)

// Time limits of calls by class (tools.timeouts, issue 28 item 2): the
// executor enforces the call's limit, a self-timed tool (bash) takes it as
// its default and as the cap of the timeout the model asks for. Previews
// and :Flemma tools show the limit of a call.

// toolTimeouts are a buffer's classes of time limits.
func toolTimeouts(e options.Effective) tools.Timeouts {
	return tools.Timeouts{Default: e.DefaultTimeout, Classes: e.ToolTimeouts}
}

// limitCall sets a call's time limit from its tool's class; a self-timed
// tool gets the same as its default and its cap (tools.Env).
func (h *Engine) limitCall(call *tools.Call, to tools.Timeouts) {
	t, ok := h.Registry.Get(call.Tool)
	if !ok {
		call.Timeout = to.Default
		return
	}
	call.Timeout, _ = to.For(t.Spec())
	if t.Spec().SelfTimed && call.Env != nil {
		call.Env.DefaultTimeout, call.Env.MaxTimeout = call.Timeout, call.Timeout
	}
}

// timeoutNote is what a preview says of a call's time limit: nothing for
// the default class (most calls) nor for a tool's own bound (calculator's
// few seconds: noise in every preview), else "timeout 300s" — with what
// the model asked of a self-timed tool, and whether the class capped it.
func (h *Engine) timeoutNote(tu *buffer.ToolUse, e options.Effective) string {
	t, ok := h.Registry.Get(tu.Name)
	if !ok || isChainTool(t) {
		return ""
	}
	s := t.Spec()
	limit, from := toolTimeouts(e).For(s)
	if !s.SelfTimed {
		if from == "tools.timeouts.default" || !strings.HasPrefix(from, "tools.timeouts.") {
			return ""
		}
		return "timeout " + tools.FormatTimeout(limit)
	}
	asked, _ := tu.Input()["timeout"].(float64)
	got := tools.Asked(limit, asked)
	switch {
	case asked > 0 && got < limit:
		return fmt.Sprintf("timeout %s, as asked", tools.FormatTimeout(got))
	case asked > 0:
		return fmt.Sprintf("timeout %s: %gs asked, capped", tools.FormatTimeout(limit), asked)
	}
	return "timeout " + tools.FormatTimeout(limit)
}
