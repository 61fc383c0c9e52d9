package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// stallError ends a request whose server went silent: no first byte of
// the response within the first-byte limit, or no data for the idle limit
// once the response began.
type stallError struct {
	first bool
	d     time.Duration
}

func (e *stallError) Error() string {
	if e.first {
		return "no response within " + Seconds(e.d) + " (send.timeouts.first_byte)"
	}
	return "no data for " + Seconds(e.d) + ": the stream stalled (send.timeouts.idle)"
}

// Timeout marks it as a timeout for net.Error-minded callers.
func (e *stallError) Timeout() bool { return true }

// Temporary is part of net.Error.
func (e *stallError) Temporary() bool { return false }

// withStallTimeouts returns a client whose requests end with a *stallError
// when the server sends nothing for too long: firstByte from sending the
// request to the first byte of the response body, idle between two reads
// of the body after that. 0 disables a limit. The client's own transport
// (nil = http.DefaultTransport) does the work.
func withStallTimeouts(c *http.Client, firstByte, idle time.Duration) *http.Client {
	if firstByte <= 0 && idle <= 0 {
		return c
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := *c
	out.Transport = &stallTransport{base: base, firstByte: firstByte, idle: idle}
	return &out
}

type stallTransport struct {
	base            http.RoundTripper
	firstByte, idle time.Duration
}

// watchdog cancels the request's context with its reason when its timer
// fires; every read of data re-arms it with the idle limit.
type watchdog struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	timer  *time.Timer
	reason *stallError
	idle   *stallError // the reason of the idle limit (its d: 0 = none)
}

func (w *watchdog) fire() {
	w.mu.Lock()
	r := w.reason
	w.mu.Unlock()
	if r != nil {
		w.cancel(r)
	}
}

// arm sets the next deadline: d from now (0 = none) with the reason.
func (w *watchdog) arm(d time.Duration, reason *stallError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d <= 0 {
		w.reason = nil
		if w.timer != nil {
			w.timer.Stop()
		}
		return
	}
	w.reason = reason
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

func (w *watchdog) stop() { w.arm(0, nil) }

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{cancel: cancel, idle: &stallError{d: t.idle}}
	w.arm(t.firstByte, &stallError{first: true, d: t.firstByte})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		w.stop()
		var st *stallError
		if errors.As(context.Cause(ctx), &st) {
			err = st
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = &stallBody{rc: resp.Body, ctx: ctx, cancel: cancel, w: w}
	return resp, nil
}

// stallBody re-arms the watchdog on every read that brings data and turns
// the cancel of a stall into its *stallError.
type stallBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	w      *watchdog
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.arm(b.w.idle.d, b.w.idle)
	}
	if err != nil && err != io.EOF {
		var st *stallError
		if errors.As(context.Cause(b.ctx), &st) {
			return n, st
		}
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
