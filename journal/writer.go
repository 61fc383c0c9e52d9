package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// One writer, batched (group commit).
//
// Every write of this process goes to one goroutine, which takes all the
// writes queued at that moment (at most maxBatch), runs them in one
// IMMEDIATE transaction, and commits once: one fsync of
// the WAL for the whole batch instead of one per write. A write's caller
// is answered only after that commit returned, so a Start that returns nil
// is on disk exactly as before (synchronous=FULL syncs the WAL at every
// commit): batching changes when other rows reach the disk with it, never
// whether this one did. With 100 calls starting at once, the writes queue
// for one or two commits instead of a hundred, and none waits past its
// timeout (issue 26: 68–83 of 100 writes failed when each committed on its
// own).
//
// A write still queued when the writer made no progress for Options.Timeout
// (another host holds the database), or when its caller's context ends, is
// withdrawn and fails (ErrBusy, or the context's error): nothing of it is
// written. Once taken it is never cut short:
// its caller waits for the commit (a few milliseconds), so an error always
// means that nothing was written and nil always means it is durable.
//
// A write that refuses (ErrNotFound: a Finish of a call that is not open)
// writes nothing before it refuses, so the others of its batch stand
// without a savepoint each (savepoints tripled the cost of a write). Any
// other error aborts the transaction, and every write of the batch fails
// with it: the database itself refused (full, damaged, read-only).

// maxBatch bounds the writes of one transaction (and so how long the
// write lock is held against other hosts).
const maxBatch = 64

// Request states: the writer takes a queued request, or its caller gives up
// on it; whichever comes first decides.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type writeReq struct {
	ctx   context.Context // the caller's: a write it gave up on before the lock is not made
	fn    func(ctx context.Context, tx *sql.Tx) error
	state atomic.Int32
	done  chan error // buffered: the writer never blocks on a caller
}

// writer is the queue of the one writer goroutine.
type writer struct {
	mu     sync.Mutex
	queue  []*writeReq
	closed bool
	wake   chan struct{} // capacity 1: "the queue changed"
	exited chan struct{}
	// batches counts the batches the writer got through (committed or
	// not): the queue's sign of progress. writes counts the writes
	// committed (the benchmark's writes per commit).
	batches, writes atomic.Int64
	// working is set while the writer goes through the queue: progress
	// under way (on a loaded machine a batch can take longer than the timeout,
	// and that is no reason to give up). Its own waits are bounded: the
	// writer connection and the lock of another host each by the
	// timeout, after which the batch fails and the writer goes on.
	working atomic.Bool
}

func (j *Journal) startWriter() {
	j.wr.wake = make(chan struct{}, 1)
	j.wr.exited = make(chan struct{})
	go j.runWriter()
}

// stopWriter lets the writer finish what is queued, then stops it.
func (j *Journal) stopWriter() {
	j.wr.mu.Lock()
	j.wr.closed = true
	j.wr.mu.Unlock()
	j.wr.signal()
	<-j.wr.exited
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// maxQueueWait bounds how long a write waits in this process's queue while
// the writer keeps committing other writes (a burst of thousands of calls);
// a writer that makes no progress for Options.Timeout fails it sooner.
const maxQueueWait = 30 * time.Second

// enqueue hands fn to the writer and waits for the commit that holds it.
// It gives up (nothing written) when the writer made no progress — no
// batch ended and none is being handled — for Options.Timeout, or when
// ctx ends first. A batch that waits for another host's lock fails after
// Options.Timeout (its writes get ErrBusy); the writes queued behind it
// are then tried in the next batch.
func (j *Journal) enqueue(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	w := &j.wr
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("%w", ErrClosed)
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	w.signal()
	start, seen := time.Now(), w.batches.Load()
	t := time.NewTimer(j.opts.Timeout)
	defer t.Stop()
	for {
		select {
		case err := <-r.done:
			return err
		case <-ctx.Done():
		case <-t.C:
			if now := w.batches.Load(); (now != seen || w.working.Load()) && time.Since(start) < maxQueueWait {
				seen = now // the writer is getting through the queue
				t.Reset(j.opts.Timeout)
				continue
			}
		}
		break
	}
	if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: the journal's writer made no progress for %v", ErrBusy, j.opts.Timeout)
	}
	return <-r.done // taken: the commit is under way and is not cut short
}

func (j *Journal) runWriter() {
	w := &j.wr
	defer close(w.exited)
	for range w.wake {
		w.working.Store(true)
		for {
			batch := w.take()
			if len(batch) == 0 {
				break
			}
			j.commitBatch(batch)
		}
		w.working.Store(false)
		w.mu.Lock()
		done := w.closed && len(w.queue) == 0
		w.mu.Unlock()
		if done {
			return
		}
	}
}

// take removes up to maxBatch requests from the queue (and those their
// callers gave up on) and marks them taken.
func (w *writer) take() []*writeReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	var batch []*writeReq
	i := 0
	for ; i < len(w.queue) && len(batch) < maxBatch; i++ {
		if r := w.queue[i]; r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	w.queue = append(w.queue[:0:0], w.queue[i:]...)
	return batch
}

// commitBatch runs the batch in one transaction and answers every request.
func (j *Journal) commitBatch(batch []*writeReq) {
	defer j.wr.batches.Add(1) // progress, for the callers still queued
	answer := func(rs []*writeReq, err error) {
		for _, r := range rs {
			r.done <- err
		}
	}
	// The writer connection (a test, or Open's setup, may hold it) and
	// then SQLite's lock (another host may hold it), each within the
	// timeout.
	cctx, cancel := context.WithTimeout(context.Background(), j.opts.Timeout)
	conn, err := j.w.Conn(cctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: waited %v for this process's other journal writes", ErrBusy, j.opts.Timeout)
		} else {
			err = classify(err)
		}
		answer(batch, err)
		return
	}
	defer conn.Close()
	bg := context.Background()
	if _, err := conn.ExecContext(bg, "PRAGMA busy_timeout = "+strconv.FormatInt(max(j.opts.Timeout.Milliseconds(), 1), 10)); err != nil {
		answer(batch, classify(err))
		return
	}
	tx, err := conn.BeginTx(bg, nil)
	if err != nil {
		answer(batch, j.noteDamage(classify(err)))
		return
	}
	// Writes whose callers gave up while the lock was waited for are not
	// made.
	live := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	errs := make([]error, len(live))
	for i, r := range live {
		err := r.fn(bg, tx)
		if errors.Is(err, ErrNotFound) {
			// This write's own refusal (a Finish of a call that is not
			// open): it wrote nothing before refusing, the others stand.
			errs[i] = err
			continue
		}
		if err != nil {
			// The database refused (full, damaged, read-only …): the
			// transaction is gone, and with it every write of the batch.
			_ = tx.Rollback()
			answer(live, j.noteDamage(classify(err)))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		answer(live, j.noteDamage(classify(err)))
		return
	}
	j.wr.writes.Add(int64(len(live)))
	for i, r := range live {
		r.done <- errs[i]
	}
}
