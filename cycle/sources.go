package cycle

import "fmt"

// The one gate on tool sources (issue 28 item 1; seed 004: "Flemma gates
// API requests on all sources being ready"). Every path that decides calls
// or sends — <C-]>, :Flemma send, autopilot's steps, a queued press,
// flemma-host run — passes through sourcesGate first: the MCP servers of
// setup are started (each start bounded) and, while async Lua tool sources
// are still resolving (the plugin reports how many: SourcesPending), the
// step waits. A waiting step belongs to its buffer, not to the cursor: it
// runs for that buffer when the last source is done, wherever the user is,
// and the user is told when it cannot (the buffer was closed, <C-c>).
// Categorize waits too: a call to a tool still loading is not unknown.

// waitKind is what a buffer waits to do once the sources are ready.
type waitKind int

const (
	waitNone  waitKind = iota
	waitCycle          // the next phase of the cycle (<C-]>, autopilot)
	waitSend           // phase 3 directly (:Flemma send)
)

// sourcesGate lets a step of bufnr go on (ok) once the tool sources are
// ready; otherwise the step is remembered for the buffer and the reply
// says it waits. auto: autopilot's step (it stays autopilot's).
func (sess *session) sourcesGate(kind waitKind, auto bool) (Reply, bool) {
	h := sess.h
	h.ensureMCP()
	// The session's lock, then the engine's (the lock order): the count is
	// read and the step remembered at once, so a SourcesPending(0) between
	// them cannot miss this buffer.
	sess.mu.Lock()
	defer sess.mu.Unlock()
	h.mu.Lock()
	n := h.luaSources
	h.mu.Unlock()
	if n <= 0 {
		return Reply{}, true
	}
	// A send waiting already stays one; a press adds nothing to a waiting
	// send (the send runs the cycle's last phase anyway).
	if sess.waiting == waitNone || kind == waitSend {
		sess.waiting = kind
	}
	sess.waitAuto = sess.waitAuto || auto
	return reply("waiting", fmt.Sprintf("Waiting for tool definitions to load (%d source(s) still resolving)… This buffer goes on by itself when they are, wherever you are; <C-c> cancels.", n), levelWarn), false
}

// onSourcesPending is the plugin's count of async Lua tool sources still
// resolving (flemma.tools: sent when a source is added or done, and when
// the host starts). Their tools are registered before the count drops. At
// zero, every buffer that waited goes on, in the background.
func (h *Engine) onSourcesPending(n int) error {
	h.mu.Lock()
	h.luaSources = n
	h.mu.Unlock()
	var ready []int
	if n <= 0 {
		for _, st := range h.sessions() {
			st.mu.Lock()
			if st.waiting != waitNone {
				ready = append(ready, st.bufnr)
			}
			st.mu.Unlock()
		}
	}
	for _, bufnr := range ready {
		bufnr := bufnr
		h.session(bufnr).spawn(func() { h.resumeWaiting(bufnr) })
	}
	return nil
}

// resumeWaiting runs the step a buffer waited to take, and tells the user
// what came of it (they may be elsewhere: the message names the buffer's
// outcome as the step's own reply does).
func (h *Engine) resumeWaiting(bufnr int) {
	st := h.lookup(bufnr)
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.waiting == waitNone {
		st.mu.Unlock()
		return
	}
	kind, auto := st.waiting, st.waitAuto
	st.waiting, st.waitAuto = waitNone, false
	st.cond.Broadcast()
	st.mu.Unlock()
	if h.closingNow() {
		return
	}
	h.logf("buffer %d: the tool sources are ready; its waiting step goes on", bufnr)
	var res Reply
	var err error
	if kind == waitSend {
		res, err = h.onSend(bufnr)
	} else {
		res, err = h.session(bufnr).cycle(auto)
	}
	if err != nil {
		h.notify(fmt.Sprintf("The step that waited for the tool definitions could not go on: %v", err), levelError)
		return
	}
	if res.Message != "" {
		h.notify(res.Message, res.Level)
	}
}

// cancelWaiting drops a buffer's waiting step (<C-c>); true if there was one.
func (h *Engine) cancelWaiting(bufnr int) bool {
	st := h.lookup(bufnr)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.waiting == waitNone {
		return false
	}
	st.waiting, st.waitAuto = waitNone, false
	st.cond.Broadcast()
	return true
}
