package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkStartFinish: one durable Start and one durable Finish (two
// fsync'd commits) with a 2 KiB result.
func BenchmarkStartFinish(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, b.TempDir()+"/journal.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	result := strings.Repeat("r", 2048)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id, err := j.Start(ctx, call("/home/u/a.chat", fmt.Sprint("toolu_", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := j.Finish(ctx, id, Outcome{Status: "ok", Result: result}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkStartFinishParallel: the same from several goroutines (writes
// queue on the one writer connection).
func BenchmarkStartFinishParallel(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, b.TempDir()+"/journal.db", &Options{Timeout: 10 * 1e9})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			id, err := j.Start(ctx, call("/home/u/a.chat", fmt.Sprint("toolu_", i)))
			if err == nil {
				err = j.Finish(ctx, id, Outcome{Status: "ok", Result: "ok"})
			}
			if err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkStarted: the read before every run, in a journal of 10,000 calls.
func BenchmarkStarted(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, b.TempDir()+"/journal.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	tx, _ := j.w.Begin()
	for i := range 10_000 {
		tx.Exec(`INSERT INTO calls (buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at)
			VALUES (?, ?, 'bash', ?, '', '', 1, 1)`, fmt.Sprint("/b", i%20), fmt.Sprint("toolu_", i), fmt.Sprint("h", i))
	}
	tx.Commit()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Started(ctx, "/b7", "toolu_7", "h7"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen: Open of an existing journal (what a host start pays).
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := b.TempDir() + "/journal.db"
	j, err := Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	mustStart(b, j, call("/a", "t"))
	j.Close()
	b.ReportAllocs()
	for b.Loop() {
		j, err := Open(ctx, path, nil)
		if err != nil {
			b.Fatal(err)
		}
		j.Close()
	}
}

// BenchmarkParallel100: what 100 calls run at once (max_concurrent = 0)
// ask of the journal — for each, a look-up, a durable Start, a Finish with a
// 2.4 KB result and a recorded decision — with the default options. One op
// is the whole burst. Reported: failed writes per burst (the target is 0),
// the time per record (a burst's wall time over its 300 writes) and how
// many writes share one commit.
func BenchmarkParallel100(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, b.TempDir()+"/journal.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ReportAllocs()
	failures, round := 0, 0
	b0, w0 := j.wr.batches.Load(), j.wr.writes.Load()
	for b.Loop() {
		failures += len(parallelCalls(ctx, j, fmt.Sprint("r", round), 100))
		round++
	}
	b.ReportMetric(float64(failures)/float64(round), "failures/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(round*300), "ns/record")
	if n := j.wr.batches.Load() - b0; n > 0 {
		b.ReportMetric(float64(j.wr.writes.Load()-w0)/float64(n), "writes/commit")
	}
}

// BenchmarkRecordPress: the decisions of one press of 50 calls in one
// commit, bare (as before the audit kept arguments) and with each call's
// arguments (a 300-byte bash input) — the audit's cost (issue 28 item 3).
func BenchmarkRecordPress(b *testing.B) {
	input := `{"command": "go test ./... -run 'TestX|TestY' -count=1 2>&1 | tail -50", "label": "running the tests", "timeout": 300}` + strings.Repeat(" ", 180)
	for _, withInput := range []bool{false, true} {
		b.Run(fmt.Sprintf("input=%v", withInput), func(b *testing.B) {
			ctx := context.Background()
			j, err := Open(ctx, b.TempDir()+"/journal.db", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			evs := make([]Event, 50)
			for i := range evs {
				evs[i] = Event{Buffer: "/home/u/a.chat", CallID: fmt.Sprint("toolu_", i), Tool: "bash", InputHash: "h", Decision: "approved", DecidedBy: "user"}
				if withInput {
					evs[i].Input = input
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := j.RecordAll(ctx, evs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
