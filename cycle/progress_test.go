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
	st, err := env.h.Status(1)
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
