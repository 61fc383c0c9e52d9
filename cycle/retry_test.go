package cycle

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/provider"
)

// flaky is a provider that fails its first calls with errs[i] (after the
// events pre[i], if any), then answers with answer. With block set, a call
// whose error is nil emits pre[i] and waits for the cancel instead.
type flaky struct {
	mu     sync.Mutex
	errs   []error
	pre    [][]provider.Event
	block  map[int]bool // call index -> stream pre, then wait for ctx
	answer string
	reqs   []provider.Request
}

func (p *flaky) Name() string { return "flaky" }

func (p *flaky) Stream(ctx context.Context, req provider.Request, emit func(provider.Event)) error {
	p.mu.Lock()
	i := len(p.reqs)
	p.reqs = append(p.reqs, req)
	var err error
	var pre []provider.Event
	if i < len(p.errs) {
		err = p.errs[i]
	}
	if i < len(p.pre) {
		pre = p.pre[i]
	}
	block := p.block[i]
	p.mu.Unlock()
	for _, e := range pre {
		emit(e)
	}
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	emit(provider.Event{Kind: provider.EventText, Text: p.answer})
	emit(provider.Event{Kind: provider.EventDone, StopReason: "end_turn"})
	return nil
}

func (p *flaky) requests() []provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]provider.Request(nil), p.reqs...)
}

// waits records the retry waits instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) get() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

var (
	overloaded = &provider.Error{Provider: "anthropic", Status: 529, Message: "Overloaded", Retryable: true}
	limited    = &provider.Error{Provider: "anthropic", Status: 429, Message: "Rate limited", Retryable: true, RetryAfter: 7 * time.Second}
)

const story = "@You:\nTell me a story\n"

func notesWith(env *testEnv, s string) []string {
	var out []string
	for _, n := range env.ed.notifications() {
		if strings.Contains(n, s) {
			out = append(out, n)
		}
	}
	return out
}

// Two transient failures, then the answer: the user is told each retry
// (the wait, the attempt, how to stop), the answer is written once, and
// the waits are the backoff's (the server's retry-after first).
func TestSendRetriesThenAnswers(t *testing.T) {
	p := &flaky{errs: []error{overloaded, limited}, answer: "Once upon a time.",
		pre: [][]provider.Event{{{Kind: provider.EventUsage, Usage: &provider.Usage{InputTokens: 5}}}}}
	w := &waits{}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: p}).New, Sleep: w.sleep, Jitter: func() float64 { return 0.5 }})
	env.ed.load(1, "", env.dir, story)
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "Once upon a time.")
	env.ed.waitIdle(t, env.h, 1)
	if got, want := env.ed.String(1), story+"\n@Assistant:\nOnce upon a time.\n\n@You:\n\n"; got != want {
		t.Errorf("buffer:\n%q\nwant\n%q", got, want)
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if got, want := fmt.Sprint(w.get()), fmt.Sprint([]time.Duration{1500 * time.Millisecond, 7 * time.Second}); got != want {
		t.Errorf("waits %s, want %s", got, want)
	}
	got := strings.Join(notesWith(env, "retrying"), "\n")
	want := "3: anthropic: 529 Overloaded — retrying in 1.5 s (attempt 2/5); <C-c> cancels\n" +
		"3: anthropic: 429 Rate limited — retrying in 7 s (attempt 3/5); <C-c> cancels"
	if got != want {
		t.Errorf("notices:\n%s\nwant:\n%s", got, want)
	}
}

// send.retries bounds the attempts; the last error is the user's message
// and the buffer is as before the press.
func TestSendRetriesBounded(t *testing.T) {
	p := &flaky{errs: []error{overloaded, overloaded, overloaded}, answer: "never"}
	w := &waits{}
	env := newEnvWith(t, with(noSandbox(), replayAt, map[string]any{"send": map[string]any{"retries": 2, "retry_delay": 1, "retry_max_delay": 1.5}}),
		Deps{Providers: (&factory{prov: p}).New, Sleep: w.sleep, Jitter: func() float64 { return 0 }})
	env.ed.load(1, "", env.dir, story)
	env.press(1)
	env.ed.wait(t, 1, "the error is told", func(*fakeBuf) bool { // f.mu is held here
		return strings.Contains(strings.Join(env.ed.notes, "\n"), "4: anthropic: 529 Overloaded")
	})
	env.ed.waitIdle(t, env.h, 1)
	if got := env.ed.String(1); got != story {
		t.Errorf("buffer changed:\n%s", got)
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (1 + send.retries 2)", n)
	}
	if got := fmt.Sprint(w.get()); got != "[500ms 750ms]" {
		t.Errorf("waits %s", got)
	}
}

// <C-c> while waiting to retry: the wait ends at once, the placeholder goes,
// the buffer is the user's again, no request follows; the next press works.
func TestCancelDuringRetryWait(t *testing.T) {
	p := &flaky{errs: []error{overloaded}, answer: "Second time lucky."}
	waiting := make(chan struct{}, 1)
	sleep := func(ctx context.Context, d time.Duration) error {
		waiting <- struct{}{}
		<-ctx.Done() // a wait that only a cancel ends
		return ctx.Err()
	}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: p}).New, Sleep: sleep})
	env.ed.load(1, "", env.dir, story)
	env.press(1)
	<-waiting
	if !strings.Contains(env.ed.String(1), "@Assistant:") || !env.h.Busy(1) {
		t.Errorf("while waiting: busy %v, buffer:\n%s", env.h.Busy(1), env.ed.String(1))
	}
	if phase, _ := env.reply(env.h.Cancel(1)); phase != "cancel" {
		t.Errorf("cancel: %s", phase)
	}
	env.ed.waitIdle(t, env.h, 1)
	if got := env.ed.String(1); got != story {
		t.Errorf("buffer after the cancel:\n%q", got)
	}
	if len(notesWith(env, "Response interrupted.")) != 1 {
		t.Errorf("notes %q", env.ed.notifications())
	}
	if n := len(p.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	env.press(1)
	env.ed.waitText(t, 1, "Second time lucky.")
	env.ed.waitIdle(t, env.h, 1)
}

// A failure after text reached the buffer is not retried (the text would
// be written twice): the partial answer is marked, the user told.
func TestNoRetryAfterText(t *testing.T) {
	p := &flaky{errs: []error{&provider.Error{Provider: "anthropic", Message: "overloaded_error — Overloaded", Retryable: true}},
		pre: [][]provider.Event{{{Kind: provider.EventText, Text: "Once upon"}}}, answer: "never"}
	w := &waits{}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: p}).New, Sleep: w.sleep})
	env.ed.load(1, "", env.dir, story)
	env.press(1)
	env.ed.waitText(t, 1, "flemma:aborted")
	env.ed.waitIdle(t, env.h, 1)
	want := story + "\n@Assistant:\nOnce upon\n\n<!-- flemma:aborted: Response interrupted by an error: anthropic: overloaded_error — Overloaded -->\n\n@You:\n\n"
	if got := env.ed.String(1); got != want {
		t.Errorf("buffer:\n%q\nwant\n%q", got, want)
	}
	if n := len(p.requests()); n != 1 || len(w.get()) != 0 {
		t.Errorf("%d requests, waits %v", n, w.get())
	}
}

// After <C-c> (or an error) in the middle of an answer, the next press
// sends a conversation that ends with the user's question, not with the
// partial answer (which the buffer keeps); once the user writes, the
// partial answer goes as a closed turn.
func TestPressAfterInterruptedAnswer(t *testing.T) {
	for _, how := range []string{"cancel", "error"} {
		t.Run(how, func(t *testing.T) {
			p := &flaky{pre: [][]provider.Event{{{Kind: provider.EventText, Text: "Once upon a"}}}, answer: "A whole story."}
			if how == "cancel" {
				p.block = map[int]bool{0: true}
			} else {
				p.errs = []error{&provider.Error{Provider: "anthropic", Message: "api_error — Internal server error", Retryable: true}}
			}
			env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: p}).New, Sleep: (&waits{}).sleep})
			env.ed.load(1, "", env.dir, story)
			env.press(1)
			env.ed.waitText(t, 1, "Once upon a")
			if how == "cancel" {
				env.h.Cancel(1)
			}
			env.ed.waitText(t, 1, "flemma:aborted")
			env.ed.waitIdle(t, env.h, 1)
			partial := env.ed.String(1)
			if phase, msg := env.press(1); phase != "send" {
				t.Fatalf("second press: %s %s", phase, msg)
			}
			env.ed.waitText(t, 1, "A whole story.")
			env.ed.waitIdle(t, env.h, 1)
			if got := env.ed.String(1); !strings.HasPrefix(got, partial) {
				t.Errorf("the partial answer was not kept:\n%s", got)
			}
			reqs := p.requests()
			second := reqs[len(reqs)-1]
			if got := describeMsgs(second.Messages); got != "user: Tell me a story" {
				t.Errorf("second request: %s", got)
			}
			// The user writes on: the partial answer goes as a closed turn.
			lines := env.ed.text(1)
			if lines[len(lines)-2] != "@You:" || lines[len(lines)-1] != "" {
				t.Fatalf("no empty prompt at the end:\n%s", env.ed.String(1))
			}
			if err := env.ed.edit(1, len(lines)-1, len(lines), "Shorter, please."); err != nil {
				t.Fatal(err)
			}
			env.press(1)
			env.ed.wait(t, 1, "a third answer", func(*fakeBuf) bool { return len(p.requests()) == len(reqs)+1 })
			env.ed.waitIdle(t, env.h, 1)
			third := p.requests()[len(reqs)]
			got := describeMsgs(third.Messages)
			if !strings.HasPrefix(got, "user: Tell me a story\nassistant: Once upon a | <!-- Response interrupted by") || !strings.HasSuffix(got, "\nuser: Shorter, please.") {
				t.Errorf("third request:\n%s", got)
			}
		})
	}
}

// describeMsgs renders the roles and texts of a conversation, one message
// a line, parts joined with " | ".
func describeMsgs(msgs []provider.Message) string {
	var lines []string
	for _, m := range msgs {
		var parts []string
		for _, p := range m.Parts {
			if p.Kind == provider.PartText && strings.TrimSpace(p.Text) != "" {
				parts = append(parts, strings.TrimSpace(p.Text))
			}
		}
		lines = append(lines, string(m.Role)+": "+strings.Join(parts, " | "))
	}
	return strings.Join(lines, "\n")
}

// send.timeouts reach the provider: a server that goes silent mid-answer
// ends the response with "no data for …" after the (short) idle limit, the
// buffer valid and unlocked.
func TestStalledStreamEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, turn{text: "Once upon a"}.sse()[:strings.Index(turn{text: "Once upon a"}.sse(), "event: content_block_stop")])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stalls until the client gives up
	}))
	t.Cleanup(srv.Close)
	env := newEnvWith(t, with(noSandbox(), map[string]any{
		"providers": map[string]any{"anthropic": map[string]any{"base_url": srv.URL}},
		"send":      map[string]any{"timeouts": map[string]any{"idle": 0.05}},
	}), Deps{})
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	env.ed.load(1, "", env.dir, story)
	env.press(1)
	env.ed.waitText(t, 1, "flemma:aborted")
	env.ed.waitIdle(t, env.h, 1)
	want := story + "\n@Assistant:\nOnce upon a\n\n<!-- flemma:aborted: Response interrupted by an error: anthropic: no data for 50 ms: the stream stalled (send.timeouts.idle) -->\n\n@You:\n\n"
	if got := env.ed.String(1); got != want {
		t.Errorf("buffer:\n%q\nwant\n%q", got, want)
	}
	if len(notesWith(env, "no data for 50 ms")) != 1 {
		t.Errorf("notes %q", env.ed.notifications())
	}
}
