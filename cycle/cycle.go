package cycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
)

func parse(lines []string) *buffer.Document { return buffer.Parse(lines) }

// errBlocked stops a step whose buffer must not be acted on; the
// diagnostics explaining why have been published already.
var errBlocked = errors.New("blocked")

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// Cycle runs the next phase of the cycle that applies (<C-]>): the
// user's press, which resets the autopilot counter.
func (h *Engine) Cycle(bufnr int) (Reply, error) {
	return h.session(bufnr).cycle(false)
}

func (sess *session) cycle(auto bool) (Reply, error) {
	// The request this press may send, and the calls it categorizes, need
	// every tool source ready: the MCP servers' tools (the first press
	// starts them) and the async Lua sources (the step waits for them).
	if r, ok := sess.sourcesGate(waitCycle, auto); !ok {
		return r, nil
	}
	if !auto {
		// A press while a step is being planned and written (a moment)
		// runs when that step ends: one queued press per buffer, repeats
		// coalesce. Presses while tools run or a response streams are
		// answered at once.
		st := sess
		st.mu.Lock()
		if st.phase == phaseStepping && len(st.running) == 0 {
			st.queued = true
			st.mu.Unlock()
			return reply("queued", "", 0), nil
		}
		st.mu.Unlock()
	}
	return sess.withStep(true, func() (Reply, error) {
		if !auto {
			// Only a press that is going to act resets autopilot.
			st := sess
			st.mu.Lock()
			st.turns, st.disarmed = 0, false
			st.mu.Unlock()
		}
		s, err := sess.snapshot()
		if err != nil {
			return Reply{}, err
		}
		doc := sess.parse(s)
		sess.prune(s.Tick, doc)
		if got := sess.recoverResults(s, doc); len(got) > 0 {
			// Results recorded by the journal but lost from the buffer: written
			// back, not run again. This press stops here, so the user sees them.
			return reply("recovered", fmt.Sprintf("Recovered the result(s) of %s from the crash-recovery journal (they were not run again). Press <C-]> to go on.", strings.Join(got, ", ")), levelInfo), nil
		}
		if len(doc.Unresolved()) > 0 {
			return sess.categorize(s, doc, auto)
		}
		return sess.executeFrom("", s, doc, auto, false)
	})
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// mode is tools.mode: "enabled", "parse_only" or "disabled".
func (h *Engine) mode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.Tools.Mode == "" {
		return "enabled"
	}
	return h.cfg.Tools.Mode
}
