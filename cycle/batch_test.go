package cycle

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/trust"
)

// :Flemma tool:approve-all on the message of a response approves every
// call that waits, each as the user's own decision (they then run, also in
// a file whose calls would otherwise ask); a call already decided is left
// alone. reject-all rejects them with the reason given (issue 28 item 7).
func TestBatchDecisions(t *testing.T) {
	env := newEnv(t, noSandbox())
	a := counter(env, "toolu_a")
	b := counter(env, "toolu_b")
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\ngo\n\n@Assistant:\n"+
		useBlock(a.id, "bash", compactJSON(a.input))+useBlock(b.id, "bash", compactJSON(b.input))+useBlock("toolu_l", "ls", `{"path": ".", "label": null}`))
	env.ed.trust(1)
	if phase, _ := env.press(1); phase != "categorize" {
		t.Fatalf("phase %s", phase)
	}
	env.ed.waitIdle(t, env.h, 1)
	text := env.ed.String(1)
	if strings.Count(text, "status=pending") != 2 {
		t.Fatalf("want the two bash calls pending:\n%s", text)
	}
	r, err := env.h.onSetStatusAll(1, 2, "approved", "") // in the @You: above: no calls
	if err != nil || !strings.Contains(r.Message, "not in a message with tool calls") {
		t.Fatalf("outside: %+v %v", r, err)
	}
	line := len(env.ed.text(1)) // the @You: message with the results
	r, err = env.h.onSetStatusAll(1, line, "approved", "")
	if err != nil || !strings.Contains(r.Message, "Approved 2 call(s) of the @Assistant: message of line 4: toolu_a, toolu_b") {
		t.Fatalf("approve-all: %+v %v", r, err)
	}
	st := env.h.session(1)
	st.mu.Lock()
	ra, rb := st.trustOf().ledger.Get("toolu_a"), st.trustOf().ledger.Get("toolu_b")
	st.mu.Unlock()
	if ra.By != trust.ByUser || rb.By != trust.ByUser {
		t.Errorf("records by %q and %q, want the user's", ra.By, rb.By)
	}
	r, _ = env.h.onSetStatusAll(1, line, "approved", "")
	if !strings.Contains(r.Message, "No call of the @Assistant: message of line 4 waits for a decision.") {
		t.Errorf("again: %+v", r)
	}
	env.press(1)
	env.ed.wait(t, 1, "both ran", func(*fakeBuf) bool { return env.runs() == 2 })
	env.ed.waitIdle(t, env.h, 1)
}

func TestBatchReject(t *testing.T) {
	env := newEnv(t, noSandbox())
	a, b := counter(env, "toolu_a"), counter(env, "toolu_b")
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\ngo\n\n@Assistant:\n"+
		useBlock(a.id, "bash", compactJSON(a.input))+useBlock(b.id, "bash", compactJSON(b.input)))
	// Not categorized yet: the cursor on a Tool Use line.
	r, err := env.h.onSetStatusAll(1, 6, "rejected", "not now")
	if err != nil || !strings.Contains(r.Message, "Rejected 2 call(s)") {
		t.Fatalf("reject-all: %+v %v", r, err)
	}
	if strings.Count(env.ed.String(1), "status=rejected\nnot now\n") != 2 {
		t.Fatalf("blocks:\n%s", env.ed.String(1))
	}
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if text := env.ed.String(1); strings.Count(text, "(error)\n\n```\nnot now\n```") != 2 || env.runs() != 0 {
		t.Errorf("runs %d:\n%s", env.runs(), text)
	}
}
