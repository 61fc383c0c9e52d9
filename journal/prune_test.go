package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func count(t *testing.T, j *Journal, table string) int {
	t.Helper()
	var n int
	if err := j.r.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPruneByAge(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	j := openTest(t, &Options{Now: clock.Now})
	old := func(name string) ID { return mustStart(t, j, call("/a.chat", name)) }
	oldFinished, oldUnfinished, oldResolved := old("old-finished"), old("old-unfinished"), old("old-resolved")
	j.Finish(ctx, oldFinished, Outcome{Status: "ok"})
	j.Resolve(ctx, oldResolved, Discarded, "user") // also an event
	j.Record(ctx, Event{Buffer: "/a.chat", CallID: "old-event", Decision: "approve"})
	clock.Advance(31 * 24 * time.Hour)
	newID := mustStart(t, j, call("/a.chat", "new"))
	j.Record(ctx, Event{Buffer: "/a.chat", CallID: "new-event", Decision: "approve"})

	p, err := j.Prune(ctx, Retention{MaxAge: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if p != (Pruned{Calls: 2, Events: 2}) {
		t.Errorf("Prune = %+v, want 2 calls and 2 events", p)
	}
	un, _ := j.Unfinished(ctx, "/a.chat")
	if len(un) != 2 || un[0].ID != oldUnfinished || un[1].ID != newID {
		t.Errorf("Unfinished after Prune = %+v, want the old unfinished call kept, and the new one", un)
	}
	if ok, _ := j.Started(ctx, "/a.chat", "old-finished", "sha256:old-finished"); ok {
		t.Error("the old finished call is still there")
	}
	if p, _ := j.Prune(ctx, Retention{}); p != (Pruned{}) {
		t.Errorf("second Prune = %+v, want nothing", p)
	}
}

func TestPruneByCount(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	for i := range 25 {
		mustStart(t, j, call("/a.chat", fmt.Sprint("t", i)))
		j.Record(ctx, Event{Buffer: "/a.chat", CallID: fmt.Sprint("t", i), Decision: "approve"})
	}
	p, err := j.Prune(ctx, Retention{MaxCalls: 10, MaxEvents: 5})
	if err != nil || p != (Pruned{Calls: 15, Events: 20}) {
		t.Errorf("Prune = %+v, %v, want 15 calls and 20 events", p, err)
	}
	if c, e := count(t, j, "calls"), count(t, j, "events"); c != 10 || e != 5 {
		t.Errorf("%d calls, %d events left, want 10, 5", c, e)
	}
	// The newest are kept.
	if ok, _ := j.Started(ctx, "/a.chat", "t24", "sha256:t24"); !ok {
		t.Error("the newest call was pruned")
	}
	if ok, _ := j.Started(ctx, "/a.chat", "t14", "sha256:t14"); ok {
		t.Error("the 11th newest call was kept")
	}
}

func TestPruneByBytes(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	for i := range 200 {
		id := mustStart(t, j, call("/a.chat", fmt.Sprint("t", i)))
		j.Finish(ctx, id, Outcome{Status: "ok", Result: strings.Repeat("r", 8000)})
	}
	const max = 512 << 10
	p, err := j.Prune(ctx, Retention{MaxBytes: max})
	if err != nil || p.Calls == 0 {
		t.Fatalf("Prune = %+v, %v, want calls deleted", p, err)
	}
	var pages, free, size int64
	j.r.QueryRow("PRAGMA page_count").Scan(&pages)
	j.r.QueryRow("PRAGMA freelist_count").Scan(&free)
	j.r.QueryRow("PRAGMA page_size").Scan(&size)
	if used := (pages - free) * size; used > max {
		t.Errorf("%d bytes in use after Prune, want at most %d", used, max)
	}
	if ok, _ := j.Started(ctx, "/a.chat", "t199", "sha256:t199"); !ok {
		t.Error("the newest call was pruned")
	}
	t.Logf("pruned %d of 200 calls", p.Calls)
}

// TestOpenPrunesABoundedAmount: Open does a few short batches; Prune does the
// rest.
func TestOpenPrunesABoundedAmount(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	j := openAt(t, path, &Options{Retention: Retention{MaxCalls: -1, MaxEvents: -1}})
	const n = 3000
	now := time.Now().UnixMicro()
	tx, _ := j.w.Begin()
	for i := range n {
		tx.Exec(`INSERT INTO calls (buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at, finished_at)
			VALUES ('/a', ?, 'bash', '', '', '', 1, ?, ?)`, fmt.Sprint(i), now, now)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = openAt(t, path, &Options{Retention: Retention{MaxCalls: 100}})
	if got, want := count(t, j, "calls"), n-openPruneBatches*pruneBatch; got != want {
		t.Errorf("%d calls after Open, want %d (Open prunes at most %d batches of %d)", got, want, openPruneBatches, pruneBatch)
	}
	p, err := j.Prune(ctx, Retention{MaxCalls: 100})
	if err != nil || count(t, j, "calls") != 100 {
		t.Errorf("Prune = %+v, %v; %d calls left, want 100", p, err, count(t, j, "calls"))
	}
}

func TestRetentionDefaults(t *testing.T) {
	got := Retention{MaxCalls: -1, MaxBytes: 5}.withDefaults()
	want := Retention{MaxAge: 30 * 24 * time.Hour, MaxCalls: -1, MaxEvents: 200_000, MaxBytes: 5}
	if got != want {
		t.Errorf("withDefaults = %+v, want %+v", got, want)
	}
}

// TestPruneUsesOpenRetention: fields Prune leaves zero come from
// Options.Retention.
func TestPruneUsesOpenRetention(t *testing.T) {
	j := openTest(t, &Options{Retention: Retention{MaxCalls: 3}})
	for i := range 5 {
		mustStart(t, j, call("/a.chat", fmt.Sprint("t", i)))
	}
	if p, err := j.Prune(context.Background(), Retention{}); err != nil || p.Calls != 2 {
		t.Errorf("Prune = %+v, %v, want 2 calls (MaxCalls 3 from Open)", p, err)
	}
}
