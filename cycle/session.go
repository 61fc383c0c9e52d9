package cycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// session is everything the host keeps of one buffer, in one place (Forget
// drops it in one place). The buffer text is the state of the conversation;
// this is what the text does not say: the host's copy of it, what was
// evaluated and decided on it, and the work running on it.
//
// Each session has its own lock: its fields are read and written with
// session.mu held, never Engine.mu, so one buffer's step, stream or tool
// run never waits on another buffer's. Lock order: a session's mu may be
// held while Engine.mu is taken (to read the configuration), never the
// other way round, and no two sessions' locks are held at once.
type session struct {
	h     *Engine // the services and the configuration it shares
	mu    sync.Mutex
	cond  *sync.Cond // on mu: broadcast when the session's work may have ended (take, WaitIdle)
	bufnr int
	// forgotten: the buffer was wiped (Forget); its work was cancelled.
	forgotten bool
	// ctx is the session's work: every call it runs and every response it
	// receives has a context under it. <C-c> (Cancel), a wipe (Forget)
	// and the host's shutdown cancel it; <C-c> then gives the session a
	// new one for the work that comes after.
	ctx    context.Context
	cancel context.CancelFunc

	mirror      *mirror                     // the host's copy of the text, as of a changedtick
	fm          *frontmatter.Result         // the latest evaluated frontmatter
	outcomes    map[string]approval.Outcome // tool id -> the decision that categorized it
	trust       *bufTrust                   // what in the buffer counts as the user's
	pins        *sandbox.RootPins           // identity of the buffer's writable roots
	notes       map[string]string           // tool id -> why it waits (a diagnostic on its header)
	attachDiags bool                        // the last send published diagnostics of its attachments
	// attachAsk are the files outside the project the last send asked
	// about; attachAllowed those the user allowed (:Flemma attach:allow).
	attachAsk     []askFile
	attachAllowed map[string]bool
	kept          map[string]tools.Result // finished results whose block changed while they ran
	ran           map[string]ranCall      // tool id -> how its last run in this session ended
	reviewed      map[string]bool         // tool id -> approved from a diff view (true: modified by the user)

	// The work on the buffer.
	running     map[string]context.CancelFunc // tool id -> cancel
	started     map[string]time.Time          // tool id -> when it left the queue
	streaming   context.CancelFunc            // the response being received, if any
	turns       int                           // consecutive autopilot sends
	disarmed    bool                          // <C-c> stopped autopilot until the next press
	lastUsage   *provider.Usage
	usage       usageTotal      // the buffer's responses in this session
	lastFlushes int             // buffer updates of the last response
	linesRead   int             // lines received from Neovim by snapshots, in all
	lastResult  time.Time       // when the last tool result was written
	phase       phase           // what the session does with the text (phase.go; only move changes it)
	queued      bool            // a press came during the step: run it when the step ends
	writeMu     *sync.Mutex     // one result write at a time
	background  int             // goroutines working on the buffer (a response, jobs, a queued step)
	ended       map[string]bool // running calls that ended and are writing their result
	jobsPending int             // job batches that have not yet decided whether autopilot goes on

	// Compaction (compact.go): the changedtick of the text a send was
	// held at to offer it, and the level (1: over the threshold, 2: over
	// the window) the user sent anyway at; attachCompact: the files
	// :Flemma attach:allow allows were asked about by a compaction.
	compactOffered, compactDeclined int
	attachCompact                   bool
	// waiting is the step the buffer takes once the tool sources are
	// ready (sourcesGate); waitAuto: it is autopilot's.
	waiting  waitKind
	waitAuto bool
}

// keepCalls is how many of a buffer's latest calls the host keeps facts
// about for :Flemma tool:list (the decision that categorized each, how its
// run ended): a conversation of 10,000 calls keeps as much as one of
// keepCalls (BenchmarkMemoryPerCall).
const keepCalls = 256

// pruneCalls drops the per-call facts of calls that are no longer in the
// buffer (uses are its calls, in order) or older than its last keepCalls,
// and the notes of calls no longer in it. Call with st.mu held.
func (st *session) pruneCalls(uses []*buffer.ToolUse) {
	recent := make(map[string]bool, min(len(uses), keepCalls))
	for _, u := range uses[max(0, len(uses)-keepCalls):] {
		recent[u.ID] = true
	}
	for id := range st.outcomes {
		if !recent[id] {
			delete(st.outcomes, id)
		}
	}
	for id := range st.ran {
		if !recent[id] && st.running[id] == nil {
			delete(st.ran, id)
		}
	}
	if len(st.notes) == 0 {
		return
	}
	in := make(map[string]bool, len(uses))
	for _, u := range uses {
		in[u.ID] = true
	}
	for id := range st.notes {
		if !in[id] {
			delete(st.notes, id)
		}
	}
}

// ranCall is how a call's run ended, for :Flemma tool:list.
type ranCall struct {
	duration time.Duration
	isError  bool
	kind     string // the executor's error kind, when isError
}

func (r ranCall) String() string {
	d := r.duration.Round(time.Millisecond)
	if d >= time.Second {
		d = r.duration.Round(100 * time.Millisecond)
	}
	if r.isError {
		return fmt.Sprintf("%s after %s", r.kind, d)
	}
	return fmt.Sprintf("ran in %s", d)
}

func newSession(h *Engine, bufnr int) *session {
	s := &session{h: h, bufnr: bufnr, running: map[string]context.CancelFunc{}, started: map[string]time.Time{}}
	s.cond = sync.NewCond(&s.mu)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// session returns the buffer's session, creating it. A wiped buffer
// (Forget) gets a detached session: work that ends after the wipe does not
// bring its entry back. Call without Engine.mu held.
func (h *Engine) session(bufnr int) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.bufs[bufnr]
	if st == nil {
		st = newSession(h, bufnr)
		if !h.wiped[bufnr] {
			h.bufs[bufnr] = st
		}
	}
	return st
}

// lookup returns the buffer's session, or nil when it has none.
func (h *Engine) lookup(bufnr int) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bufs[bufnr]
}

// sessions returns every session (Shutdown, SourcesPending).
func (h *Engine) sessions() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*session, 0, len(h.bufs))
	for _, s := range h.bufs {
		out = append(out, s)
	}
	return out
}

// stop cancels the session's context: its running calls and its response
// (<C-c> on every call, a wipe, the host's shutdown). Call with st.mu held.
func (st *session) stop() {
	st.cancel()
}

// renew gives a stopped session a new context (<C-c>: the buffer's next
// work runs). Call with st.mu held.
func (st *session) renew() {
	st.ctx, st.cancel = context.WithCancel(context.Background())
}

// spawn runs fn in a goroutine counted as the buffer's work (Busy).
func (sess *session) spawn(fn func()) {
	sess.mu.Lock()
	sess.background++
	sess.mu.Unlock()
	go func() {
		defer func() {
			sess.mu.Lock()
			sess.background--
			sess.cond.Broadcast()
			sess.mu.Unlock()
		}()
		fn()
	}()
}

// Busy reports whether anything works on a buffer: a step, a response,
// running tools, or the step autopilot or a queued press is about to take.
func (h *Engine) Busy(bufnr int) bool {
	st := h.lookup(bufnr)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.busy()
}

// busy: see Busy. Call with st.mu held.
func (st *session) busy() bool {
	return st.phase != phaseIdle || st.streaming != nil || len(st.running) > 0 || st.background > 0 || st.waiting != waitNone
}

// WaitIdle blocks until nothing works on a buffer (Busy is false): the
// step in progress, the response, the running calls and every step
// autopilot chains after them have ended. It is how a caller without an
// editor waiting on the user (headless runs) knows the cycle stopped.
func (h *Engine) WaitIdle(bufnr int) {
	st := h.lookup(bufnr)
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.busy() && !st.forgotten {
		st.cond.Wait()
	}
}
