package headless

import "testing"

func TestPlain(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"anthropic: retry 2/5 in 3 s (overloaded_error — Overloaded); <C-c> cancels", "anthropic: retry 2/5 in 3 s (overloaded_error — Overloaded)"},
		{"Autopilot stopped after 3 consecutive turns (tools.autopilot.max_turns = 3). Press <C-]> to go on.", "Autopilot stopped after 3 consecutive turns (tools.autopilot.max_turns = 3)."},
		{"ollama: a piece of the response could not be read; the answer is marked incomplete and its raw text is in the log (:Flemma log).", "ollama: a piece of the response could not be read; the answer is marked incomplete and its raw text is in the log."},
		{"rec: the model's answer was empty (stop reason \"end_turn\", 0 output tokens); nothing was written. Press <C-]> to ask again.", "rec: the model's answer was empty (stop reason \"end_turn\", 0 output tokens); nothing was written."},
		{"no hint here: 3 < 4 and <b> is html", "no hint here: 3 < 4 and <b> is html"},
		{"Press <C-]>.", "Press <C-]>."}, // nothing else to say: kept whole
		{"cannot connect: connection refused by localhost:1", "cannot connect: connection refused by localhost:1"},
	} {
		if got := Plain(tc.in); got != tc.want {
			t.Errorf("Plain(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
