package cycle

import (
	"context"
	"fmt"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
)

// What the host keeps per call is bounded: calls gone from the buffer are
// forgotten, and of a long conversation only the latest keepCalls are
// remembered (a running call keeps how it ran until it ends).
func TestPruneCallsBoundsPerCallState(t *testing.T) {
	st := &session{
		outcomes: map[string]approval.Outcome{}, ran: map[string]ranCall{},
		notes: map[string]string{}, running: map[string]context.CancelFunc{},
	}
	var uses []*buffer.ToolUse
	for i := range keepCalls + 50 {
		id := fmt.Sprintf("c%d", i)
		uses = append(uses, &buffer.ToolUse{ID: id})
		st.outcomes[id], st.ran[id], st.notes[id] = approval.Outcome{Resolver: "r"}, ranCall{}, "waits"
	}
	for _, id := range []string{"gone", "gone-running"} {
		st.outcomes[id], st.ran[id], st.notes[id] = approval.Outcome{}, ranCall{}, "waits"
	}
	st.running["gone-running"] = func() {}
	st.running["c0"] = func() {}
	st.pruneCalls(uses)
	if len(st.outcomes) != keepCalls || len(st.ran) != keepCalls+2 || len(st.notes) != keepCalls+50 {
		t.Fatalf("kept %d outcomes, %d runs, %d notes", len(st.outcomes), len(st.ran), len(st.notes))
	}
	for _, id := range []string{fmt.Sprintf("c%d", keepCalls+49), "c50"} {
		if _, ok := st.outcomes[id]; !ok {
			t.Errorf("the outcome of %s, one of the latest calls, was dropped", id)
		}
	}
	if _, ok := st.outcomes["c49"]; ok {
		t.Error("the outcome of c49, older than the latest keepCalls, was kept")
	}
	if _, ok := st.notes["gone"]; ok {
		t.Error("the note of a call gone from the buffer was kept")
	}
	if _, ok := st.ran["gone-running"]; !ok {
		t.Error("a running call lost how it ran")
	}
}
