package cycle

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// While an async Lua tool source resolves, every step that decides calls
// or sends waits for it (a press, :Flemma send); when the last source is
// done the waiting buffer goes on by itself, with the tools the source
// registered (issue 28 item 1).
func TestStepsWaitForToolSources(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t, turn{text: "Hello."}, turn{text: "Again."})))
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	if err := env.h.onSourcesPending(1); err != nil {
		t.Fatal(err)
	}
	phase, msg := env.press(1)
	if phase != "waiting" || !strings.Contains(msg, "Waiting for tool definitions to load") {
		t.Fatalf("press: %s %q", phase, msg)
	}
	if !env.h.Busy(1) {
		t.Errorf("a waiting buffer is not idle")
	}
	if strings.Contains(env.ed.String(1), "Hello.") {
		t.Fatalf("sent while a source was loading")
	}
	_ = env.h.onSourcesPending(0)
	env.ed.waitText(t, 1, "Hello.")
	env.ed.waitIdle(t, env.h, 1)

	// :Flemma send waits the same way.
	_ = env.ed.edit(1, len(env.ed.text(1)), len(env.ed.text(1)), "more")
	_ = env.h.onSourcesPending(2)
	if r, err := env.h.onSend(1); err != nil || r.Phase != "waiting" {
		t.Fatalf("send: %+v %v", r, err)
	}
	_ = env.h.onSourcesPending(1)
	if strings.Contains(env.ed.String(1), "Again.") {
		t.Fatalf("sent with a source still loading")
	}
	_ = env.h.onSourcesPending(0)
	env.ed.waitText(t, 1, "Again.")
	env.ed.waitIdle(t, env.h, 1)
}

// A waiting step that cannot go on says why: <C-c> cancels it, and a
// buffer wiped meanwhile drops it with a message.
func TestWaitingStepCancelledOrDropped(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t, turn{text: "Hello."})))
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	env.ed.load(2, filepath.Join(env.dir, "d.chat"), env.dir, "@You:\nhi\n")
	_ = env.h.onSourcesPending(1)
	env.press(1)
	env.press(2)
	r, err := env.h.Cancel(1)
	if err != nil || !strings.Contains(r.Message, "Cancelled the step that waited for the tool definitions") {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	env.h.Forget(2)
	if !slices.ContainsFunc(env.ed.notifications(), func(n string) bool {
		return strings.Contains(n, "The step of buffer 2 that waited for the tool definitions to load was dropped: the buffer was closed.")
	}) {
		t.Errorf("notifications: %q", env.ed.notifications())
	}
	_ = env.h.onSourcesPending(0)
	env.ed.waitIdle(t, env.h, 1)
	if strings.Contains(env.ed.String(1), "Hello.") {
		t.Errorf("a cancelled step went on")
	}
}
