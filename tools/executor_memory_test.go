package tools

import (
	"context"
	"encoding/json"
	"testing"
)

// TestReleaseAfterLargeCalls: memory is given back once, when the last of
// the calls running together ends, and only if they allocated more than
// the threshold.
func TestReleaseAfterLargeCalls(t *testing.T) {
	released := 0
	saved := releaseMemory
	releaseMemory = func() { released++ }
	t.Cleanup(func() { releaseMemory = saved })

	r := NewRegistry()
	big := &blockingTool{name: "big", size: 64 << 20, started: make(chan struct{}), release: make(chan struct{})}
	small := &blockingTool{name: "small", size: 1 << 10, started: make(chan struct{}), release: make(chan struct{})}
	r.MustAdd(big)
	r.MustAdd(small)
	e := &Executor{Registry: r}
	run := func(name string) <-chan Result {
		ch := make(chan Result, 1)
		go func() { ch <- e.Run(context.Background(), Call{ID: name, Tool: name}, json.RawMessage(`{}`)) }()
		return ch
	}

	// A small call alone: nothing to give back.
	close(small.release)
	<-run("small")
	if released != 0 {
		t.Fatalf("released after a small call")
	}

	// A large call ends while a small one still runs: the release waits
	// for the small one.
	small.started, small.release = make(chan struct{}), make(chan struct{})
	smallDone := run("small")
	<-small.started
	bigDone := run("big")
	<-big.started
	close(big.release)
	<-bigDone
	if released != 0 {
		t.Fatalf("released while another call was still running")
	}
	close(small.release)
	<-smallDone
	if released != 1 {
		t.Fatalf("released %d times after the last call ended, want 1", released)
	}

	// Off.
	e.ReleaseAfter = -1
	big.started, big.release = make(chan struct{}), make(chan struct{})
	close(big.release)
	<-run("big")
	if released != 1 {
		t.Errorf("released with ReleaseAfter < 0")
	}
}

// blockingTool allocates size bytes, then waits for release.
type blockingTool struct {
	name    string
	size    int
	started chan struct{}
	release chan struct{}
}

func (b *blockingTool) Spec() Spec {
	return Spec{Name: b.name, Description: "d", InputSchema: map[string]any{"type": "object"}}
}

func (b *blockingTool) Run(ctx context.Context, _ Call, _ json.RawMessage) (Output, error) {
	buf := make([]byte, b.size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	sink = buf
	sink = nil
	close(b.started)
	<-b.release
	return Output{Text: "ok"}, nil
}

// sink keeps an allocation alive until the test drops it.
var sink []byte
