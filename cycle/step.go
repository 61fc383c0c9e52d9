package cycle

import (
	"fmt"
	"time"

	"github.com/flemma-dev/flemma/buffer"
)

// withStep runs fn as the buffer's one step, the prologue of every command
// that changes the buffer's text: one cycle (or one <M-CR>, status or
// result edit) at a time, and none while a response streams or (when
// exclusive) tools run — two steps planned on the same text would run the
// same approved call twice. A step that may not start gets the "busy"
// reply instead; a step on a single call (<M-CR>, not exclusive) may run
// while other calls of the buffer do.
func (sess *session) withStep(exclusive bool, fn func() (Reply, error)) (Reply, error) {
	busy, release := sess.take(exclusive)
	if busy != nil {
		return *busy, nil
	}
	defer release()
	return fn()
}

// stepKind is how a command on the block under the cursor takes the
// buffer (withBlock).
type stepKind uint8

const (
	noStep  stepKind = iota // reads only
	stepOne                 // a step on the one call (<M-CR>): other calls may run
	stepAll                 // an exclusive step
)

// withBlock is the prologue of the commands on the tool block under the
// cursor: the step (as kind says), then the block — the id of the call
// whose use or result block covers line — or the "no block" reply.
func (h *Engine) withBlock(bufnr, line int, kind stepKind, fn func(doc *buffer.Document, id string) (Reply, error)) (Reply, error) {
	onBlock := func() (Reply, error) {
		doc, id, err := h.blockUnder(bufnr, line)
		if err != nil || id == "" {
			return noBlock(err)
		}
		return fn(doc, id)
	}
	if kind == noStep {
		return onBlock()
	}
	return h.session(bufnr).withStep(kind == stepAll, onBlock)
}

// stepWait bounds how long a user's action waits for another step of the
// buffer to be written (a few milliseconds, usually) before it is refused.
const stepWait = 3 * time.Second

func (sess *session) take(exclusive bool) (*Reply, func()) {
	h, bufnr := sess.h, sess.bufnr
	st := sess
	st.mu.Lock()
	defer st.mu.Unlock()
	// Another step is being planned and written (autopilot's, or a queued
	// press): wait for it rather than refuse the user's action.
	// So are calls that ended and are writing their results: a user who
	// acts on the result they just saw must not be told it still runs.
	finishing := func() bool {
		for id := range st.running {
			if !st.ended[id] {
				return false
			}
		}
		return len(st.running) > 0 || st.jobsPending > 0
	}
	// A step being written, a response all in and being written: the
	// phases that end by themselves in a moment. The wait is on the
	// session's condition variable (every phase change, every call that
	// ends, every background goroutine that ends broadcasts on it), with
	// a timer that wakes it at the deadline.
	wait := func() bool {
		switch st.phase {
		case phaseStepping, phaseSent, phaseFinishing:
			return true
		}
		return exclusive && finishing()
	}
	deadline := time.Now().Add(stepWait)
	if wait() {
		timer := time.AfterFunc(stepWait, func() {
			st.mu.Lock()
			st.cond.Broadcast()
			st.mu.Unlock()
		})
		defer timer.Stop()
		for wait() && time.Now().Before(deadline) {
			st.cond.Wait()
		}
	}
	switch {
	case st.phase.responding():
		return ptr(reply("busy", "A request is already in progress. Use <C-c> to cancel it first.", levelWarn)), nil
	case exclusive && len(st.running) > 0:
		return ptr(reply("busy", fmt.Sprintf("%d tool(s) still running in this buffer: wait, or press <C-c> to cancel them.", len(st.running)), levelWarn)), nil
	case st.phase.stepping():
		return ptr(reply("busy", "flemma is already working on this buffer; try again in a moment.", levelWarn)), nil
	}
	st.move(evTake)
	return nil, func() {
		st.mu.Lock()
		if !st.move(evRelease) {
			h.logf("buffer %d: a step ended in phase %s", bufnr, st.phase)
		}
		queued := st.queued
		st.queued = false
		st.mu.Unlock()
		if queued {
			sess.spawn(func() { sess.autoCycleAs(false) })
		}
	}
}

func ptr[T any](v T) *T { return &v }
