package frontmatter

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrBudget is returned (wrapped; test with errors.Is) by Func.Call when the
// Budget in its context is used up: the function was not called, or was
// stopped when the budget ran out.
var ErrBudget = errors.New("the time budget for frontmatter functions is used up")

// Budget is the time that the calls of stored frontmatter functions sharing
// it may take together: one per user action (a key press), so that a buffer
// with hundreds of tool calls cannot freeze the editor for CallDeadline per
// call. A call charges the time it held its VM, conversions and the state
// check included; a call that starts with less than CallDeadline left runs
// only as long as is left, and once nothing is left every call fails with
// ErrBudget without entering its VM. Calls running at the same time may
// together overrun the budget by at most one CallDeadline each.
//
// A Budget is safe for concurrent use. Attach it with WithBudget.
type Budget struct {
	mu    sync.Mutex
	left  time.Duration
	total time.Duration
	calls int
}

// NewBudget returns a Budget of total (DefaultCallBudget when total <= 0).
func NewBudget(total time.Duration) *Budget {
	if total <= 0 {
		total = DefaultCallBudget
	}
	return &Budget{left: total, total: total}
}

// NewBudget returns a Budget of the evaluator's Limits.CallBudget.
func (e *Evaluator) NewBudget() *Budget { return NewBudget(e.limits.CallBudget) }

// Remaining is the time left.
func (b *Budget) Remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.left, 0)
}

// Calls is how many calls the budget admitted (the others failed with
// ErrBudget before entering their VM).
func (b *Budget) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// start admits a call: it returns the time the call may take, or false when
// the budget is used up.
func (b *Budget) start() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left <= 0 {
		return 0, false
	}
	b.calls++
	return b.left, true
}

func (b *Budget) spend(d time.Duration) {
	b.mu.Lock()
	b.left -= d
	b.mu.Unlock()
}

type budgetKey struct{}

// WithBudget returns a copy of ctx that carries b: every Func.Call made with
// it (or a context derived from it) shares b.
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetFrom returns the Budget ctx carries, or nil.
func BudgetFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}
