package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A stream that stops sending ends with "no data for …" once the idle
// limit passes (a short limit injected; the server waits for the client
// to hang up), keeps what arrived, and is not retried by itself.
func TestIdleTimeout(t *testing.T) {
	first := new(sse).aStart("msg_idle", 3).aText(0, "Partial").String()
	for _, name := range []string{"anthropic", "openai", "vertex"} {
		body := first
		switch name {
		case "openai":
			body = new(sse).data(obj{"type": "response.output_text.delta", "delta": "Partial"}).String()
		case "vertex":
			body = new(sse).data(obj{"candidates": []any{obj{"content": obj{"role": "model", "parts": []any{obj{"text": "Partial"}}}}}}).String()
		}
		srv := slowServer(t, body)
		p, err := New(name, Config{BaseURL: srv.URL, Getenv: testEnv, IdleTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := collect(context.Background(), p, hello())
		var pe *Error
		if !errors.As(err, &pe) || pe.Error() != name+": no data for 50 ms: the stream stalled (send.timeouts.idle)" {
			t.Fatalf("%s: err = %v", name, err)
		}
		if AutoRetry(err) {
			t.Errorf("%s: a stall is retried automatically", name)
		}
		if got := textOf(evs); got != "Partial" {
			t.Errorf("%s: text %q", name, got)
		}
		// The Writer turns it into a valid buffer tail with the reason.
		w := NewWriter([]string{"@You:", "Go"})
		for _, e := range evs {
			w.Add(e)
		}
		tail := w.FinishError(err)
		doc := parseOK(t, strings.Join(append([]string{"@You:", "Go"}, tail...), "\n"))
		if m := doc.Messages[1].AbortMarker(); m == nil || m.Message != "Response interrupted by an error: "+pe.Error() {
			t.Errorf("%s: tail %q", name, tail)
		}
	}
}

// A server that accepts the request and answers nothing ends with "no
// response within …".
func TestFirstByteTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		<-r.Context().Done() // the client gives up
	}))
	t.Cleanup(srv.Close)
	p, err := New("anthropic", Config{BaseURL: srv.URL, Getenv: testEnv, FirstByteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(context.Background(), p, hello())
	if err == nil || err.Error() != "anthropic: no response within 50 ms (send.timeouts.first_byte)" {
		t.Fatalf("err = %v", err)
	}
	// Headers alone are not the first byte of the response.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv2.Close)
	p, _ = New("openai", Config{BaseURL: srv2.URL, Getenv: testEnv, FirstByteTimeout: 50 * time.Millisecond, IdleTimeout: -1})
	if _, err = collect(context.Background(), p, hello()); err == nil || err.Error() != "openai: no response within 50 ms (send.timeouts.first_byte)" {
		t.Fatalf("headers only: err = %v", err)
	}
}

// A cancel is still a cancel with the timeouts in place.
func TestCancelWithTimeouts(t *testing.T) {
	srv := slowServer(t, new(sse).aStart("msg_c", 1).String())
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := New("anthropic", Config{BaseURL: srv.URL, Getenv: testEnv, IdleTimeout: time.Hour, FirstByteTimeout: time.Hour})
	err := p.Stream(ctx, hello(), func(e Event) {
		if e.Kind == EventUsage {
			cancel()
		}
	})
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
