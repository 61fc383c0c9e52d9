package journal

import (
	"context"
	"testing"
)

func TestLatestDecidedBy(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	ev := func(buf, id, decision, by string) Event {
		return Event{Buffer: buf, CallID: id, Tool: "bash", InputHash: "h", Decision: decision, DecidedBy: by}
	}
	for _, e := range []Event{
		ev("/a.chat", "t1", "require_approval", "urn:flemma:approval:config ($default)"),
		ev("/a.chat", "t1", "approved", "user"),
		ev("/a.chat", "t2", "approved", "user"),
		ev("/a.chat", "t2", "rejected", "user (status edit)"), // the newest of the user's wins
		ev("/a.chat", "t3", "approve", "urn:flemma:approval:config ($default)"),
		ev("/b.chat", "t4", "rejected", "user"),
	} {
		if err := j.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := j.LatestDecidedBy(ctx, "/a.chat", []string{"t1", "t2", "t3", "t4", "never"}, "user", "user (status edit)")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["t1"].Decision != "approved" || got["t2"].Decision != "rejected" || got["t2"].DecidedBy != "user (status edit)" {
		t.Errorf("LatestDecidedBy = %+v", got)
	}
	if none, err := j.LatestDecidedBy(ctx, "/a.chat", []string{"t1"}); err != nil || len(none) != 0 {
		t.Errorf("no decider: %v, %v", none, err)
	}
}
