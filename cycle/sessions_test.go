package cycle

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flemma-dev/flemma/provider"
)

// twoBufferEnv is an engine whose provider answers every request at once,
// with buffers 1 and 2 each holding a user message.
func twoBufferEnv(t testing.TB) *testEnv {
	t.Helper()
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventText, Text: "Seen."},
		{Kind: provider.EventDone, StopReason: "end_turn"},
	}}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: prov}).New})
	env.ed.load(1, "", env.dir, "@You:\nhi from A\n")
	env.ed.load(2, "", env.dir, "@You:\nhi from B\n")
	return env
}

// One buffer's step never holds another buffer's: while buffer 1's press
// is stuck in the middle of its step (its write waits on the editor, as a
// slow Neovim or a slow tool would hold it), buffer 2 is pressed, streams
// its whole response and ends; only then is buffer 1 let go.
func TestTwoBuffersStreamWhileOneSteps(t *testing.T) {
	env := twoBufferEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	env.ed.beforeApply = func(bufnr int) {
		if bufnr != 1 {
			return
		}
		once.Do(func() { close(entered) })
		<-release
	}
	done1 := make(chan Reply, 1)
	go func() {
		res, err := env.h.Cycle(1)
		if err != nil {
			t.Error(err)
		}
		done1 <- res
	}()
	<-entered // buffer 1's step is writing, and stays there
	if !env.h.Busy(1) {
		t.Fatal("buffer 1 is not busy while its step is held")
	}
	if phase, msg := env.press(2); phase != "send" {
		t.Fatalf("press in buffer 2: %s %s", phase, msg)
	}
	env.ed.waitText(t, 2, "Seen.")
	env.ed.waitIdle(t, env.h, 2)
	if !strings.HasSuffix(env.ed.String(2), "@You:\n") && !strings.Contains(env.ed.String(2), "@You:\n\n") {
		t.Errorf("buffer 2's response did not end with the next @You:\n%s", env.ed.String(2))
	}
	select {
	case res := <-done1:
		t.Fatalf("buffer 1's step ended while it was held: %+v", res)
	default:
	}
	if !env.h.Busy(1) {
		t.Fatal("buffer 1 stopped being busy while its step was held")
	}
	close(release)
	if res := <-done1; res.Phase != "send" {
		t.Errorf("buffer 1's press: %s %s", res.Phase, res.Message)
	}
	env.ed.waitText(t, 1, "Seen.")
	env.ed.waitIdle(t, env.h, 1)
}

// <C-c> cancels a session's context: its response stops; the session's
// next press works under a new context, and the other buffer's session
// is not touched.
func TestCancelRenewsTheSessionContext(t *testing.T) {
	env := twoBufferEnv(t)
	a, b := env.h.session(1), env.h.session(2)
	a.mu.Lock()
	ctxA, ctxB := a.ctx, b.ctx
	a.mu.Unlock()
	if _, err := env.h.Cancel(1); err != nil {
		t.Fatal(err)
	}
	if ctxA.Err() == nil {
		t.Error("<C-c> left buffer 1's context running")
	}
	if ctxB.Err() != nil {
		t.Error("<C-c> in buffer 1 cancelled buffer 2's context")
	}
	a.mu.Lock()
	renewed := a.ctx.Err() == nil
	a.mu.Unlock()
	if !renewed {
		t.Error("buffer 1 has no live context after <C-c>")
	}
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press after <C-c>: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "Seen.")
	env.h.WaitIdle(1) // the headless runs' wait: returns once the response is written
	if env.h.Busy(1) {
		t.Error("WaitIdle returned while buffer 1 was busy")
	}
	env.h.Forget(2)
	env.h.WaitIdle(2) // a wiped buffer has nothing to wait for
	if ctxB.Err() == nil {
		t.Error("a wipe left buffer 2's context running")
	}
	env.h.Shutdown()
	a.mu.Lock()
	stopped := a.ctx.Err() != nil
	a.mu.Unlock()
	if !stopped {
		t.Error("shutdown left buffer 1's context running")
	}
}

// pressBoth presses each buffer in its own goroutine and waits until both
// responses are written; each iteration starts from the user's message.
func pressBuffers(b *testing.B, env *testEnv, bufs ...int) {
	for b.Loop() {
		b.StopTimer()
		for _, n := range bufs {
			env.h.WaitIdle(n)
			env.ed.mu.Lock()
			lines := len(env.ed.bufs[n].lines)
			env.ed.bufs[n].modifiable = true
			env.ed.mu.Unlock()
			if err := env.ed.edit(n, 2, lines); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for _, n := range bufs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := env.h.Cycle(n); err != nil || res.Phase != "send" {
					b.Errorf("press %d: %v %+v", n, err, res)
				}
				env.h.WaitIdle(n)
			}()
		}
		wg.Wait()
	}
}

// BenchmarkOneBuffer is one press that sends and its response written
// (the in-memory editor, a provider that answers at once).
func BenchmarkOneBuffer(b *testing.B) {
	env := twoBufferEnv(b)
	b.ReportAllocs()
	pressBuffers(b, env, 1)
}

// BenchmarkTwoBuffers is a press in each of two buffers at once, both
// responses written: with one session per buffer it costs about one
// buffer's time on two cores, not two.
func BenchmarkTwoBuffers(b *testing.B) {
	env := twoBufferEnv(b)
	b.ReportAllocs()
	pressBuffers(b, env, 1, 2)
}

// A diff view's :Flemma tool:reject names its call by id, away from the
// chat buffer's cursor: the placeholder takes the status and the reason,
// and an id the buffer does not hold is the user's error, nothing written.
func TestSetStatusByID(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo hi", "pending"))
	if phase, msg := env.reply(env.h.onSetStatusID(1, "toolu_f1", "rejected", "not now")); phase != "status" {
		t.Fatalf("set status: %s %s", phase, msg)
	}
	if got := env.ed.String(1); !strings.Contains(got, "status=rejected") || !strings.Contains(got, "not now") {
		t.Fatalf("the placeholder was not rejected with its reason:\n%s", got)
	}
	before := env.ed.String(1)
	if phase, _ := env.reply(env.h.onSetStatusID(1, "toolu_nope", "rejected", "")); phase != "none" {
		t.Errorf("an unknown id: phase %s", phase)
	}
	if env.ed.String(1) != before {
		t.Errorf("an unknown id changed the buffer:\n%s", env.ed.String(1))
	}
}
