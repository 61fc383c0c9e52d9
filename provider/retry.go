package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry configures the automatic retries of a request that failed before
// any of its response arrived (WithRetry).
type Retry struct {
	// Retries is how many times a failed request is sent again; 0 = never.
	Retries int
	// Delay is the first wait; each retry doubles it (0 = 2 s).
	Delay time.Duration
	// MaxDelay caps a wait (0 = 60 s). A server that asks for a longer
	// wait (retry-after) is not waited for: its error is returned at once.
	MaxDelay time.Duration
	// Jitter returns a number in [0, 1); nil = math/rand. The computed wait
	// d becomes d/2 + Jitter()·d/2, so clients that failed together do not
	// come back together.
	Jitter func() float64
	// Sleep waits d or until ctx ends, returning ctx.Err() then; nil = a
	// timer. Tests inject one that records the waits and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry is told before each wait (to show the user); may be nil.
	OnRetry func(RetryNotice)
}

// RetryNotice describes a coming retry.
type RetryNotice struct {
	Attempt  int           // the number of the coming attempt (2 for the first retry)
	Attempts int           // attempts in all (Retries + 1)
	Delay    time.Duration // the wait before it
	Err      error         // why the previous attempt failed
}

// String reads "anthropic: 529 Overloaded — retrying in 4 s (attempt 2/5)".
func (n RetryNotice) String() string {
	msg := fmt.Sprint(n.Err)
	var pe *Error
	if errors.As(n.Err, &pe) && pe.RetryAfter > 0 {
		e := *pe
		e.RetryAfter = 0 // the wait is said once
		msg = e.Error()
	}
	return fmt.Sprintf("%s — retrying in %s (attempt %d/%d)", msg, Seconds(n.Delay), n.Attempt, n.Attempts)
}

// Seconds formats a duration for the user: "4 s", "1.5 s", "250 ms".
func Seconds(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 s"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d%time.Second == 0 || d >= 10*time.Second:
		return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

const (
	defaultRetryDelay    = 2 * time.Second
	defaultRetryMaxDelay = 60 * time.Second
)

// AutoRetry reports whether an error is worth sending the same request again
// by itself, without asking the user: an HTTP status of a transient
// failure (408, 409, 429, 5xx but 501, 529), an overload, rate limit or
// server error reported in the stream, or a connection that dropped.
// Errors that the next attempt would meet again — the request itself (4xx),
// the credential, a refused connection or an unknown host (a local server
// that is not running, a wrong base_url), a timeout (the wait is already
// long) — are not.
func AutoRetry(err error) bool {
	var pe *Error
	if !errors.As(err, &pe) {
		return false
	}
	if pe.Status != 0 {
		return retryableStatus(pe.Status)
	}
	return pe.Retryable && !pe.manual
}

// Backoff returns the wait before the next attempt after attempt number
// failed (1 for the first) with err, and whether to retry at all.
func (r Retry) Backoff(failed int, err error) (time.Duration, bool) {
	if failed > r.Retries || !AutoRetry(err) {
		return 0, false
	}
	base, limit := r.Delay, r.MaxDelay
	if base <= 0 {
		base = defaultRetryDelay
	}
	if limit <= 0 {
		limit = defaultRetryMaxDelay
	}
	var pe *Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		if pe.RetryAfter > limit {
			return 0, false // the server asks for longer than we wait
		}
		return pe.RetryAfter, true
	}
	d := base
	for i := 1; i < failed && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	j := r.Jitter
	if j == nil {
		j = rand.Float64
	}
	return d/2 + time.Duration(j()*float64(d/2)), true
}

// WithRetry returns p sending a request again, per r, when it failed with
// an error AutoRetry accepts before any of the response reached emit (usage
// counts excepted): a retry never repeats text, thinking or a tool call
// already handed on. A cancel of ctx ends a wait at once (ctx.Err()).
func WithRetry(p Provider, r Retry) Provider {
	if r.Retries <= 0 {
		return p
	}
	return &retrying{p: p, r: r}
}

type retrying struct {
	p Provider
	r Retry
}

func (rp *retrying) Name() string { return rp.p.Name() }

func (rp *retrying) Stream(ctx context.Context, req Request, emit func(Event)) error {
	sleep := rp.r.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	var billed Usage // of the attempts that failed: their tokens count too
	for attempt := 1; ; attempt++ {
		content := false
		var last Usage
		err := rp.p.Stream(ctx, req, func(e Event) {
			if e.Kind != EventUsage {
				content = true
			} else if e.Usage != nil {
				last = *e.Usage
				u := billed.plus(last)
				e.Usage = &u
			}
			emit(e)
		})
		if err == nil || content || ctx.Err() != nil {
			return err
		}
		billed = billed.plus(last)
		d, ok := rp.r.Backoff(attempt, err)
		if !ok {
			return err
		}
		if rp.r.OnRetry != nil {
			rp.r.OnRetry(RetryNotice{Attempt: attempt + 1, Attempts: rp.r.Retries + 1, Delay: d, Err: err})
		}
		if serr := sleep(ctx, d); serr != nil {
			return serr
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// plus is the sum of two usages.
func (u Usage) plus(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ThinkingTokens: u.ThinkingTokens + v.ThinkingTokens, WebSearches: u.WebSearches + v.WebSearches, SearchFee: u.SearchFee + v.SearchFee}
}
