package cycle

// phase is what a buffer's session is doing with the buffer's text: the
// one answer to "may a step start now, must it wait, or is it refused"
// (take), "may a press be queued" (Cycle) and "is the buffer busy" (Busy).
// It changes only through session.move, by the transition table of next.
//
// Running tool calls are not a phase: they run beside the phases (a
// <M-CR> step plans while other calls of the buffer run), counted in
// session.running. Nor is a queued press (session.queued): it waits for
// the step to end whatever the step does meanwhile — a step that starts
// a response passes from stepping to sending with the press still
// waiting, and the press is answered when the step ends, as before the
// phases existed.
type phase uint8

const (
	phaseIdle      phase = iota // nothing holds the buffer's text
	phaseStepping               // a step is being planned and written (take … release)
	phaseSending                // a step started a response and has not ended yet
	phaseSent                   // sending, and the response is all in and being written
	phaseStreaming              // a response is being received (no step holds the buffer)
	phaseFinishing              // the response is all in and being written
)

var phaseNames = [...]string{"idle", "stepping", "sending", "sent", "streaming", "finishing"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase?"
}

// event is what happens to a session: the causes of its transitions.
type event uint8

const (
	evTake       event = iota // a step takes the buffer (take)
	evRelease                 // the step ends (take's release)
	evStream                  // a response starts (startSend, Compact)
	evStreamEnds              // the response is all in (pump)
	evStreamDone              // the response was written, or failed (endStream)
)

var eventNames = [...]string{"take", "release", "stream", "stream-ends", "stream-done"}

func (e event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "event?"
}

// next is the transition table: the phase after e, and whether e is
// allowed in p at all (a refused event leaves the phase as it is; the
// caller answers "busy" or logs a broken invariant).
func next(p phase, e event) (to phase, ok bool) {
	switch p {
	case phaseIdle:
		switch e {
		case evTake:
			return phaseStepping, true
		case evStream: // :Flemma send holds no step
			return phaseStreaming, true
		}
	case phaseStepping:
		switch e {
		case evRelease:
			return phaseIdle, true
		case evStream:
			return phaseSending, true
		}
	case phaseSending:
		switch e {
		case evRelease:
			return phaseStreaming, true
		case evStreamEnds:
			return phaseSent, true
		case evStreamDone: // failed before the step ended
			return phaseStepping, true
		}
	case phaseSent:
		switch e {
		case evRelease:
			return phaseFinishing, true
		case evStreamDone:
			return phaseStepping, true
		}
	case phaseStreaming:
		switch e {
		case evStreamEnds:
			return phaseFinishing, true
		case evStreamDone:
			return phaseIdle, true
		}
	case phaseFinishing:
		if e == evStreamDone {
			return phaseIdle, true
		}
	}
	return p, false
}

// move applies e to the session's phase; false when the table refuses it.
// Every change wakes whoever waits on the session (take, WaitIdle). Call
// with st.mu held.
func (st *session) move(e event) bool {
	to, ok := next(st.phase, e)
	if !ok {
		return false
	}
	st.phase = to
	st.cond.Broadcast()
	return true
}

// stepping: a step holds the buffer (planned and written now).
func (p phase) stepping() bool {
	return p == phaseStepping || p == phaseSending || p == phaseSent
}

// responding: a response is being received or written.
func (p phase) responding() bool {
	return p == phaseSending || p == phaseSent || p == phaseStreaming || p == phaseFinishing
}
