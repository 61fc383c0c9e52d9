package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of a test server: a status with headers and
// a body (an SSE stream for 200).
type reply struct {
	status int
	header map[string]string
	body   string
}

// scriptServer answers the n-th request with replies[n] (the last one
// repeats) and counts the requests.
type scriptServer struct {
	mu      sync.Mutex
	replies []reply
	n       int
	bodies  []string
}

func (s *scriptServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	rp := s.replies[min(s.n, len(s.replies)-1)]
	s.n++
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if rp.status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	io.WriteString(w, rp.body)
}

func (s *scriptServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func startScript(t *testing.T, replies ...reply) (*scriptServer, string) {
	t.Helper()
	s := &scriptServer{replies: replies}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// retryRecorder is an injected Sleep and OnRetry: it records the waits and
// the notices, and returns at once.
type retryRecorder struct {
	mu      sync.Mutex
	waits   []time.Duration
	notices []string
}

func (r *retryRecorder) retry(n int) Retry {
	return Retry{Retries: n, Jitter: func() float64 { return 0.5 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			r.waits = append(r.waits, d)
			r.mu.Unlock()
			return ctx.Err()
		},
		OnRetry: func(n RetryNotice) {
			r.mu.Lock()
			r.notices = append(r.notices, n.String())
			r.mu.Unlock()
		}}
}

func textOf(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == EventText {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

var (
	overloaded  = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	rateLimited = `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`
	okStream    = new(sse).aStart("msg_ok", 5).aText(0, "Fine", " now.").aStop("end_turn", 3).String()
)

// 529 with retry-after seconds, 429 with retry-after-ms, then a stream:
// three requests, the server's waits honoured, each retry told.
func TestRetryHonoursRetryAfter(t *testing.T) {
	srv, url := startScript(t,
		reply{status: 529, header: map[string]string{"Retry-After": "3"}, body: overloaded},
		reply{status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, body: rateLimited},
		reply{status: 200, body: okStream})
	rec := &retryRecorder{}
	evs, err := collect(context.Background(), WithRetry(newTest(t, "anthropic", url), rec.retry(4)), hello())
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(evs); got != "Fine now." {
		t.Errorf("text %q", got)
	}
	if n := srv.requests(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if want := []time.Duration{3 * time.Second, 1500 * time.Millisecond}; !equalDurations(rec.waits, want) {
		t.Errorf("waits %v, want %v", rec.waits, want)
	}
	want := []string{
		"anthropic: 529 Overloaded — retrying in 3 s (attempt 2/5)",
		"anthropic: 429 Rate limited — retrying in 1.5 s (attempt 3/5)",
	}
	if strings.Join(rec.notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices:\n%s\nwant:\n%s", strings.Join(rec.notices, "\n"), strings.Join(want, "\n"))
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Without a hint the waits grow exponentially (2, 4, 8, 16 s with jitter
// 0.5 → ×0.75), and the last error is returned once the retries are spent.
func TestRetryExponentialAndBounded(t *testing.T) {
	srv, url := startScript(t, reply{status: 503, body: `<html><title>503 Service Unavailable</title></html>`})
	rec := &retryRecorder{}
	_, err := collect(context.Background(), WithRetry(newTest(t, "openai", url), rec.retry(4)), hello())
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 503 {
		t.Fatalf("err = %v", err)
	}
	if n := srv.requests(); n != 5 {
		t.Errorf("%d requests, want 5 (1 + 4 retries)", n)
	}
	want := []time.Duration{1500 * time.Millisecond, 3 * time.Second, 6 * time.Second, 12 * time.Second}
	if !equalDurations(rec.waits, want) {
		t.Errorf("waits %v, want %v", rec.waits, want)
	}
}

func TestBackoff(t *testing.T) {
	overload := &Error{Provider: "anthropic", Status: 529, Message: "Overloaded", Retryable: true}
	r := Retry{Retries: 6, Delay: time.Second, MaxDelay: 10 * time.Second, Jitter: func() float64 { return 0 }}
	var got []time.Duration
	for failed := 1; failed <= 7; failed++ {
		d, ok := r.Backoff(failed, overload)
		if !ok {
			got = append(got, -1)
			continue
		}
		got = append(got, d)
	}
	// jitter 0: half of 1, 2, 4, 8, 10 (capped), 10 s; then no 7th retry
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, -1}
	if !equalDurations(got, want) {
		t.Errorf("backoff %v, want %v", got, want)
	}
	r.Jitter = func() float64 { return 0.999999 }
	if d, _ := r.Backoff(5, overload); d < 9990*time.Millisecond || d > 10*time.Second {
		t.Errorf("full jitter at the cap: %v", d)
	}
	// A server asking for longer than MaxDelay is not waited for.
	if _, ok := r.Backoff(1, &Error{Provider: "openai", Status: 429, RetryAfter: 11 * time.Second}); ok {
		t.Error("retry-after beyond the cap was accepted")
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 400, Message: "bad request"}, false},
		{&Error{Status: 401}, false},
		{&Error{Status: 404}, false},
		{&Error{Status: 413}, false},
		{&Error{Status: 408}, true},
		{&Error{Status: 409}, true},
		{&Error{Status: 429}, true},
		{&Error{Status: 500}, true},
		{&Error{Status: 501}, false},
		{&Error{Status: 502}, true},
		{&Error{Status: 529}, true},
		{&Error{Message: "overloaded_error — Overloaded", Retryable: true}, true}, // in the stream
		{&Error{Message: "Response blocked by Anthropic (refusal)"}, false},
		{&Error{Message: "cannot connect", Retryable: true, manual: true}, false},
		{context.Canceled, false},
		{errors.New("plain"), false},
	} {
		if got := AutoRetry(tc.err); got != tc.want {
			t.Errorf("AutoRetry(%#v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	defer func(f func() time.Time) { now = f }(now)
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now = func() time.Time { return at }
	for _, tc := range []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "Wed, 25 Nov 2026 10:00:42 GMT"}, 42 * time.Second},
		{map[string]string{"Retry-After": "Wed, 25 Nov 2026 09:59:00 GMT"}, 0}, // in the past
		{map[string]string{"Retry-After-Ms": "120", "Retry-After": "1"}, 120 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "1"}, time.Second},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := retryAfter(h); got != tc.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// Overload reported inside a 200 stream, before any content: retried, for
// each provider's shape of it.
func TestRetryMidStreamOverload(t *testing.T) {
	openaiOK := new(sse).data(obj{"type": "response.output_text.delta", "delta": "Fine now."}).
		data(obj{"type": "response.completed", "response": obj{"status": "completed"}}).String()
	vertexOK := new(sse).data(obj{"candidates": []any{obj{"content": obj{"role": "model", "parts": []any{obj{"text": "Fine now."}}}, "finishReason": "STOP"}}}).String()
	for _, tc := range []struct {
		provider, failing string
	}{
		{"anthropic", new(sse).aStart("msg_1", 5).event(obj{"type": "error", "error": obj{"type": "overloaded_error", "message": "Overloaded"}}).String()},
		{"openai", new(sse).data(obj{"type": "response.created", "response": obj{"status": "in_progress"}}).
			data(obj{"type": "response.failed", "response": obj{"status": "failed", "error": obj{"code": "server_error", "message": "The server had an error"}}}).String()},
		{"openai", new(sse).data(obj{"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached"}).String()},
		{"vertex", new(sse).data(obj{"error": obj{"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}).String()},
		{"vertex", new(sse).data(obj{"error": obj{"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}).String()},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			ok := map[string]string{"anthropic": okStream, "openai": openaiOK, "vertex": vertexOK}[tc.provider]
			srv, url := startScript(t, reply{status: 200, body: tc.failing}, reply{status: 200, body: ok})
			rec := &retryRecorder{}
			evs, err := collect(context.Background(), WithRetry(newTest(t, tc.provider, url), rec.retry(4)), hello())
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(evs); got != "Fine now." {
				t.Errorf("text %q", got)
			}
			if n := srv.requests(); n != 2 || len(rec.waits) != 1 {
				t.Errorf("%d requests, waits %v", n, rec.waits)
			}
		})
	}
}

// Once text was handed on, a failure is returned as it is: a retry would
// write the beginning of the answer twice.
func TestNoRetryAfterContent(t *testing.T) {
	failing := new(sse).aStart("msg_1", 5).aText(0, "Half an ans").
		event(obj{"type": "error", "error": obj{"type": "overloaded_error", "message": "Overloaded"}}).String()
	srv, url := startScript(t, reply{status: 200, body: failing}, reply{status: 200, body: okStream})
	rec := &retryRecorder{}
	evs, err := collect(context.Background(), WithRetry(newTest(t, "anthropic", url), rec.retry(4)), hello())
	if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("err = %v", err)
	}
	if got := textOf(evs); got != "Half an ans" {
		t.Errorf("text %q", got)
	}
	if n := srv.requests(); n != 1 || len(rec.waits) != 0 {
		t.Errorf("%d requests, waits %v", n, rec.waits)
	}
}

// Errors of the request itself are never retried.
func TestNoRetryOfRequestErrors(t *testing.T) {
	for _, st := range []int{400, 401, 403, 404, 413, 422, 501} {
		srv, url := startScript(t, reply{status: st, body: `{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`})
		rec := &retryRecorder{}
		_, err := collect(context.Background(), WithRetry(newTest(t, "anthropic", url), rec.retry(4)), hello())
		if err == nil || srv.requests() != 1 || len(rec.waits) != 0 {
			t.Errorf("status %d: err %v, %d requests", st, err, srv.requests())
		}
	}
	// Nor a server that is not there: the next attempt would meet it again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rec := &retryRecorder{}
	if _, err := collect(context.Background(), WithRetry(newTest(t, "openai", "http://"+addr), rec.retry(4)), hello()); err == nil || len(rec.waits) != 0 {
		t.Errorf("connection refused: err %v, waits %v", err, rec.waits)
	}
}

// <C-c> during a wait ends it at once: Stream returns context.Canceled
// and no further request is sent. The real timer is used, with a wait of
// an hour; the cancel comes from the retry notice.
func TestCancelDuringBackoff(t *testing.T) {
	srv, url := startScript(t, reply{status: 529, body: overloaded}, reply{status: 200, body: okStream})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := Retry{Retries: 4, Delay: time.Hour, MaxDelay: 2 * time.Hour, OnRetry: func(RetryNotice) { cancel() }}
	done := make(chan error, 1)
	go func() {
		_, err := collect(ctx, WithRetry(newTest(t, "anthropic", url), r), hello())
		done <- err
	}()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end on cancel")
	}
	if n := srv.requests(); n != 1 {
		t.Errorf("%d requests after the cancel, want 1", n)
	}
}

// Retries 0: the provider itself, one attempt.
func TestRetryDisabled(t *testing.T) {
	p := newTest(t, "anthropic", "http://127.0.0.1:1")
	if WithRetry(p, Retry{}) != p {
		t.Error("WithRetry with no retries wraps the provider")
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 s", 250 * time.Millisecond: "250 ms", time.Second: "1 s", 1500 * time.Millisecond: "1.5 s",
		4 * time.Second: "4 s", 12300 * time.Millisecond: "12 s", 2 * time.Minute: "120 s",
	} {
		if got := Seconds(d); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", d, got, want)
		}
	}
}

// The tokens of an attempt that failed after the server reported them
// (Anthropic's message_start, then overloaded) are added to the usage of
// the attempt that succeeded: the cost counts what was billed.
func TestRetryCountsFailedAttemptsUsage(t *testing.T) {
	failing := new(sse).aStart("msg_1", 5).event(obj{"type": "error", "error": obj{"type": "overloaded_error", "message": "Overloaded"}}).String()
	_, url := startScript(t, reply{status: 200, body: failing}, reply{status: 200, body: okStream})
	rec := &retryRecorder{}
	evs, err := collect(context.Background(), WithRetry(newTest(t, "anthropic", url), rec.retry(4)), hello())
	if err != nil {
		t.Fatal(err)
	}
	var last *Usage
	for _, e := range evs {
		if e.Kind == EventUsage {
			last = e.Usage
		}
	}
	if last == nil || last.InputTokens != 10 || last.OutputTokens != 4 {
		t.Errorf("usage = %+v, want 5+5 input and 1+3 output tokens", last)
	}
}
