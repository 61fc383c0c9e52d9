package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// parallelCalls does what the host does for n calls run at once
// (max_concurrent = 0): for each, the look-up before it starts, a durable
// Start, a Finish with its result and the decision recorded with the
// result's write. It returns every error.
func parallelCalls(ctx context.Context, j *Journal, batch string, n int) []error {
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	result := strings.Repeat("output line\n", 200)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := call("/load.chat", fmt.Sprintf("%s_%d", batch, i))
			if _, _, err := j.Latest(ctx, c.Buffer, c.CallID); err != nil {
				fail(err)
			}
			id, err := j.Start(ctx, c)
			if err != nil {
				fail(err)
				return
			}
			if err := j.Finish(ctx, id, Outcome{Status: "ok", Result: result}); err != nil {
				fail(err)
			}
			if err := j.Record(ctx, Event{Buffer: c.Buffer, CallID: c.CallID, Tool: c.Tool, InputHash: c.InputHash, Decision: "approved", DecidedBy: "urn:flemma:approval:config"}); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return errs
}

// TestParallelLoadLosesNothing: 100 calls at once with the default
// options (issue 26: 68–83 of 100 writes failed "database busy" when each
// write committed on its own and waited its turn for the one writer).
// Every write succeeds and every row is there.
func TestParallelLoadLosesNothing(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	const n = 100
	for round := range 3 {
		if errs := parallelCalls(ctx, j, fmt.Sprint("r", round), n); len(errs) > 0 {
			t.Fatalf("round %d: %d of %d×3 writes failed, first: %v", round, len(errs), n, errs[0])
		}
	}
	assertCounts(t, j, 3*n, 3*n)
}

// TestBatchKeepsEachWritesOutcome: writes that share a commit keep their
// own outcome — a Finish that refuses (no such call) fails alone — and 100
// Starts at once share commits.
func TestBatchKeepsEachWritesOutcome(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	before := j.wr.batches.Load()
	const n = 100
	var wg sync.WaitGroup
	ids := make([]ID, n)
	errs := make([]error, n)
	refused := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = j.Start(ctx, call("/b.chat", fmt.Sprint("t", i)))
			refused[i] = j.Finish(ctx, ID(1_000_000+i), Outcome{Status: "ok"})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] == 0 {
			t.Errorf("Start %d = %d, %v", i, ids[i], errs[i])
		}
		if !errors.Is(refused[i], ErrNotFound) {
			t.Errorf("Finish of an unknown call = %v, want ErrNotFound", refused[i])
		}
	}
	if un, err := j.Unfinished(ctx, "/b.chat"); err != nil || len(un) != n {
		t.Errorf("Unfinished = %d calls, %v; want %d", len(un), err, n)
	}
	if commits := j.wr.batches.Load() - before; commits >= 2*n {
		t.Errorf("%d commits for %d writes: nothing was batched", commits, 2*n)
	}
}
