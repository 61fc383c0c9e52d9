package cycle

import (
	"context"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/provider"
)

// gated streams its thinking, then waits for the test before it answers.
type gated struct {
	release chan struct{}
}

func (p *gated) Name() string { return "gated" }

func (p *gated) Stream(ctx context.Context, req provider.Request, emit func(provider.Event)) error {
	emit(provider.Event{Kind: provider.EventThinking, Text: "Let me think about this héllo."})
	select {
	case <-p.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	emit(provider.Event{Kind: provider.EventText, Text: "Hello."})
	emit(provider.Event{Kind: provider.EventUsage, Usage: &provider.Usage{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 5000, ThinkingTokens: 12}})
	emit(provider.Event{Kind: provider.EventDone, StopReason: "end_turn"})
	return nil
}

// A request shows its progress (waiting, then thinking with the count of
// characters, then nothing), fires FlemmaRequestStart/End with the usage,
// and adds to the session's totals in :Flemma status.
func TestRequestProgressEventsAndTotals(t *testing.T) {
	prov := &gated{release: make(chan struct{})}
	f := &factory{prov: prov}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: f.New})
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.wait(t, 1, "thinking is shown", func(*fakeBuf) bool {
		for _, p := range env.ed.progress {
			if p.Phase == "thinking" && p.ThinkingChars == len([]rune("Let me think about this héllo.")) {
				return true
			}
		}
		return false
	})
	close(prov.release)
	env.ed.waitText(t, 1, "Hello.")
	env.ed.waitIdle(t, env.h, 1)
	env.ed.mu.Lock()
	progress := append([]Progress(nil), env.ed.progress...)
	reqs := append([]RequestEvent(nil), env.ed.reqs...)
	env.ed.mu.Unlock()
	if len(progress) < 3 || progress[0].Phase != "waiting" || progress[len(progress)-1].Phase != "" {
		t.Errorf("progress: %+v", progress)
	}
	if len(reqs) != 2 {
		t.Fatalf("request events: %+v", reqs)
	}
	if reqs[0].Provider != "gated" || reqs[0].Status != "" {
		t.Errorf("start: %+v", reqs[0])
	}
	end := reqs[1]
	if end.Provider != "gated" || end.Status != "ok" || end.StopReason != "end_turn" || end.Usage == nil ||
		*end.Usage != (UsageEvent{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 5000, ReasoningTokens: 12}) {
		t.Errorf("end: %+v usage %+v", end, end.Usage)
	}
	st, err := env.h.onStatus(1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "this buffer, this session: 1 responses · 1,200 input · 30 output tokens · cache 5,000 read, 0 written · 12 reasoning"; !strings.Contains(st.Text, want) {
		t.Errorf("status:\n%s\nwant a line %q", st.Text, want)
	}
}

// A cancelled request ends with status "cancelled" and clears its
// progress.
func TestRequestCancelledEvent(t *testing.T) {
	prov := &gated{release: make(chan struct{})}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: prov}).New})
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.wait(t, 1, "the request started", func(*fakeBuf) bool { return len(env.ed.reqs) == 1 })
	if _, err := env.h.Cancel(1); err != nil {
		t.Fatal(err)
	}
	env.ed.wait(t, 1, "the request ended", func(*fakeBuf) bool { return len(env.ed.reqs) == 2 })
	env.ed.waitIdle(t, env.h, 1)
	env.ed.mu.Lock()
	defer env.ed.mu.Unlock()
	if env.ed.reqs[1].Status != "cancelled" || env.ed.progress[len(env.ed.progress)-1].Phase != "" {
		t.Errorf("end %+v, last progress %+v", env.ed.reqs[1], env.ed.progress[len(env.ed.progress)-1])
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1204: "1,204", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// A press the moment the answer is written (the request still finishing
// its bookkeeping) waits for it instead of being told a request is in
// progress: the user sees the answer, so the request is over for them.
func TestPressRightAfterTheAnswer(t *testing.T) {
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventText, Text: "Done."},
		{Kind: provider.EventDone, StopReason: "end_turn"},
	}}
	env := newEnvWith(t, with(noSandbox(), replayAt), Deps{Providers: (&factory{prov: prov}).New})
	hold := make(chan struct{})
	env.ed.mu.Lock()
	env.ed.holdProgressEnd = hold
	env.ed.mu.Unlock()
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "Done.")
	pressed := make(chan struct{})
	answer := make(chan Reply, 1)
	go func() {
		close(pressed)
		res, err := env.h.Cycle(1)
		if err != nil {
			t.Error(err)
		}
		answer <- res
	}()
	<-pressed
	close(hold)
	if res := <-answer; res.Phase == "busy" {
		t.Errorf("a press right after the answer was refused: %s", res.Message)
	}
	env.ed.waitIdle(t, env.h, 1)
}

// A response of a model with catalogue prices has a cost: in
// FlemmaRequestEnd, the notification and the session's totals.
func TestResponseCost(t *testing.T) {
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventText, Text: "Priced."},
		{Kind: provider.EventUsage, Usage: &provider.Usage{InputTokens: 1000, OutputTokens: 2000, CacheReadTokens: 10000, CacheWriteTokens: 4000}},
		{Kind: provider.EventDone, StopReason: "end_turn"},
	}}
	// Prices set in setup (models = {…}) for the replay provider's model.
	cfg := with(noSandbox(), replayAt, map[string]any{"model": "my-model", "models": map[string]any{"my-model": map[string]any{
		"input_price": 3, "output_price": 15, "cache_read_price": 0.3, "cache_write_price": 3.75}}})
	env := newEnvWith(t, cfg, Deps{Providers: (&factory{prov: prov}).New})
	env.ed.load(1, "", env.dir, "@You:\nhi\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "Priced.")
	env.ed.waitIdle(t, env.h, 1)
	env.ed.mu.Lock()
	end := env.ed.reqs[len(env.ed.reqs)-1]
	notes := strings.Join(env.ed.notes, "\n")
	env.ed.mu.Unlock()
	if end.CostUSD == nil || *end.CostUSD < 0.050999 || *end.CostUSD > 0.051001 {
		t.Errorf("FlemmaRequestEnd cost = %v, want 0.051", end.CostUSD)
	}
	// The cache reads the statusline counts are in the usage line too
	// (issue 27 item 8), with the share of the prompt the cache held.
	if !strings.Contains(notes, "1000 input · 2000 output tokens · cache 10000 read, 4000 written (67% hit) · $0.0510") {
		t.Errorf("notifications:\n%s", notes)
	}
	st, err := env.h.onStatus(1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Text, "this buffer, this session: 1 responses · 1,000 input · 2,000 output tokens · cache 10,000 read, 4,000 written · $0.0510") {
		t.Errorf("status:\n%s", st.Text)
	}
}
