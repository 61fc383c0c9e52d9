package cycle

import (
	"strings"
	"testing"
)

// TestPhaseTransitions is the whole transition table: every allowed
// transition, and every event each phase refuses (the phase stays).
func TestPhaseTransitions(t *testing.T) {
	allowed := map[phase]map[event]phase{
		phaseIdle:      {evTake: phaseStepping, evStream: phaseStreaming},
		phaseStepping:  {evRelease: phaseIdle, evStream: phaseSending},
		phaseSending:   {evRelease: phaseStreaming, evStreamEnds: phaseSent, evStreamDone: phaseStepping},
		phaseSent:      {evRelease: phaseFinishing, evStreamDone: phaseStepping},
		phaseStreaming: {evStreamEnds: phaseFinishing, evStreamDone: phaseIdle},
		phaseFinishing: {evStreamDone: phaseIdle},
	}
	for p := phaseIdle; p <= phaseFinishing; p++ {
		for e := evTake; e <= evStreamDone; e++ {
			to, ok := next(p, e)
			want, allow := allowed[p][e]
			switch {
			case allow && (!ok || to != want):
				t.Errorf("%s --%s--> %s (allowed %v); want %s", p, e, to, ok, want)
			case !allow && (ok || to != p):
				t.Errorf("%s --%s--> %s (allowed %v); want it refused, the phase kept", p, e, to, ok)
			}
		}
	}
}

// Phases and events have names (the log says them when a step ends in a
// phase it should not).
func TestPhaseNames(t *testing.T) {
	var got []string
	for p := phaseIdle; p <= phaseFinishing+1; p++ {
		got = append(got, p.String())
	}
	for e := evTake; e <= evStreamDone+1; e++ {
		got = append(got, e.String())
	}
	want := "idle stepping sending sent streaming finishing phase? take release stream stream-ends stream-done event?"
	if strings.Join(got, " ") != want {
		t.Errorf("names %q, want %q", strings.Join(got, " "), want)
	}
}

// TestPhaseRuns walks the routes the cycle takes: a press that sends, a
// send that fails before its step ends, a queued press, :Flemma send.
func TestPhaseRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []event
		want   phase
	}{
		{"press that sends, stream outlives the step", []event{evTake, evStream, evRelease, evStreamEnds, evStreamDone}, phaseIdle},
		{"response all in before the step ends", []event{evTake, evStream, evStreamEnds, evRelease, evStreamDone}, phaseIdle},
		{"response done before the step ends", []event{evTake, evStream, evStreamEnds, evStreamDone, evRelease}, phaseIdle},
		{"send fails in its step", []event{evTake, evStream, evStreamDone, evRelease}, phaseIdle},
		{":Flemma send", []event{evStream, evStreamEnds, evStreamDone}, phaseIdle},
		{"compact in its step", []event{evTake, evStream, evRelease}, phaseStreaming},
	} {
		st := newSession(nil, 1)
		for _, e := range tc.events {
			if !st.move(e) {
				t.Fatalf("%s: %s refused in %s", tc.name, e, st.phase)
			}
		}
		if st.phase != tc.want {
			t.Errorf("%s: ends %s, want %s", tc.name, st.phase, tc.want)
		}
	}
	// Refused: a second step, a release nobody holds, two responses.
	st := newSession(nil, 1)
	st.move(evTake)
	if st.move(evTake) || st.phase != phaseStepping {
		t.Errorf("a second take was allowed: %s", st.phase)
	}
	st.move(evStream)
	if st.move(evStream) || st.move(evTake) {
		t.Errorf("a second response or a take during a response was allowed: %s", st.phase)
	}
}
