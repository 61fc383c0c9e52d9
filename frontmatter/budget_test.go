package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spinner is an approval function that spins on "spin", counts how often it
// was entered, and answers "check" with whether it was entered at most
// input.max times.
const spinner = `local entered = 0
flemma.opt.tools.auto_approve = function(name, input)
  if name == "check" then return entered <= input.max end
  if name == "spin" then entered = entered + 1 while true do end end
  return true
end`

// checkEntered asserts that the spinner was entered at most max times.
func checkEntered(t *testing.T, f *Func, max int) {
	t.Helper()
	d, err := f.Call(context.Background(), "check", map[string]any{"max": max}, nil)
	if err != nil || d != DecisionApprove {
		t.Fatalf("the function was entered more than %d times (%q, %v)", max, d, err)
	}
}

// 500 planted calls of a spinning function cost one budget, not 500 call
// deadlines: once the budget is used up, calls fail with ErrBudget without
// entering the VM.
func TestBudgetBoundsManyCalls(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 20 * time.Millisecond, CallBudget: 100 * time.Millisecond})
	f := approveFunc(t, e, spinner)
	b := e.NewBudget()
	ctx := WithBudget(context.Background(), b)
	type outcome struct{ budget, deadline, other int }
	o := within(t, "500 calls", func() (o outcome) {
		for i := 0; i < 500; i++ {
			_, err := f.Call(ctx, "spin", nil, nil)
			switch {
			case errors.Is(err, ErrBudget):
				o.budget++
			case err != nil && strings.Contains(err.Error(), "did not finish within 20ms"):
				o.deadline++
			default:
				o.other++
				t.Errorf("Call(spin) error = %v", err)
			}
		}
		return o
	})
	// 100 ms hold at most 5 full calls of 20 ms; a sixth may start on what
	// is left and be stopped by the budget.
	if o.deadline > 5 || o.budget < 494 || o.other > 0 {
		t.Fatalf("outcomes %+v, want at most 5 deadlines and the rest ErrBudget", o)
	}
	if b.Calls() > 6 || b.Remaining() != 0 {
		t.Fatalf("budget: %d calls entered, %v left; want at most 6 and none", b.Calls(), b.Remaining())
	}
	checkEntered(t, f, 6)
	// The VM is usable; a new press brings a new budget.
	if d, err := f.Call(WithBudget(context.Background(), e.NewBudget()), "ok", nil, nil); err != nil || d != DecisionApprove {
		t.Fatalf("Call with a fresh budget = %q, %v", d, err)
	}
}

// A call that starts with less than CallDeadline left runs only that long
// and reports ErrBudget.
func TestBudgetStopsARunningCall(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 5 * time.Second, CallBudget: 30 * time.Millisecond})
	f := approveFunc(t, e, spinner)
	ctx := WithBudget(context.Background(), e.NewBudget())
	err := within(t, "Call", func() error { _, err := f.Call(ctx, "spin", nil, nil); return err })
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "auto_approve function (line 3): stopped after 30ms") {
		t.Fatalf("Call(spin) error = %v, want ErrBudget after 30ms", err)
	}
	if _, err := f.Call(ctx, "ok", nil, nil); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "not called") {
		t.Fatalf("Call after the budget = %v, want ErrBudget without a call", err)
	}
	checkEntered(t, f, 1)
}

// Converting the input is part of the call: a huge input is stopped by the
// budget too.
func TestBudgetCoversConversion(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 5 * time.Second, CallBudget: 20 * time.Millisecond, MaxValues: 1 << 24})
	f := approveFunc(t, e, spinner)
	big := make([]any, 1<<22)
	for i := range big {
		big[i] = "x"
	}
	ctx := WithBudget(context.Background(), e.NewBudget())
	err := within(t, "Call", func() error { _, err := f.Call(ctx, "ok", map[string]any{"big": big}, nil); return err })
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("Call(huge input) error = %v, want ErrBudget", err)
	}
}

// A call with a used-up budget does not wait for the VM's lock.
func TestBudgetRefusesWithoutWaiting(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 2 * time.Second})
	f := approveFunc(t, e, spinner)
	var firstDone atomic.Bool
	started := make(chan struct{})
	go func() {
		close(started)
		_, _ = f.Call(context.Background(), "spin", nil, nil)
		firstDone.Store(true)
	}()
	<-started
	for f.vm.mu.TryLock() { // wait until the spinning call holds the VM
		f.vm.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	b := NewBudget(time.Nanosecond)
	b.spend(time.Millisecond)
	_, err := f.Call(WithBudget(context.Background(), b), "ok", nil, nil)
	if !errors.Is(err, ErrBudget) || firstDone.Load() {
		t.Fatalf("Call with a used-up budget = %v (first call done: %v); want ErrBudget while the VM is busy", err, firstDone.Load())
	}
}

// Calls from several goroutines and several VMs share one budget; the
// overrun is at most one call deadline per concurrent call.
func TestBudgetConcurrent(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 10 * time.Millisecond, CallBudget: 50 * time.Millisecond})
	fs := []*Func{approveFunc(t, e, spinner), approveFunc(t, e, spinner+"\n-- another VM")}
	b := e.NewBudget()
	ctx := WithBudget(context.Background(), b)
	var wg sync.WaitGroup
	var unexpected atomic.Int64
	within(t, "concurrent calls", func() bool {
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					_, err := fs[g%2].Call(ctx, "spin", nil, nil)
					if !errors.Is(err, ErrBudget) && (err == nil || !strings.Contains(err.Error(), "did not finish")) {
						unexpected.Add(1)
					}
				}
			}(g)
		}
		wg.Wait()
		return true
	})
	if unexpected.Load() > 0 || b.Remaining() != 0 {
		t.Fatalf("%d unexpected outcomes, %v left", unexpected.Load(), b.Remaining())
	}
	// Two VMs run at once at most (each serialises its calls): 50 ms of
	// budget is 5 calls, plus one overrun per VM.
	if n := b.Calls(); n > 5+2+2 {
		t.Fatalf("%d calls entered under a 50 ms budget of 10 ms calls", n)
	}
}

// Cheap calls barely touch the budget.
func TestBudgetCheapCalls(t *testing.T) {
	// Deadlines no loaded machine reaches: the test is about what is
	// charged, not about time.
	e := NewEvaluator(Limits{CallDeadline: time.Minute, CallBudget: time.Minute})
	f := approveFunc(t, e, spinner)
	b := e.NewBudget()
	ctx := WithBudget(context.Background(), b)
	for i := 0; i < 1000; i++ {
		if d, err := f.Call(ctx, "ok", map[string]any{"i": i}, nil); err != nil || d != DecisionApprove {
			t.Fatalf("call %d = %q, %v", i, d, err)
		}
	}
	if b.Calls() != 1000 || b.Remaining() <= 0 || b.Remaining() >= time.Minute {
		t.Fatalf("budget after 1000 cheap calls: %d calls, %v left", b.Calls(), b.Remaining())
	}
}

// Call honours the caller's deadline and cancellation and says so.
func TestCallContext(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 5 * time.Second})
	f := approveFunc(t, e, spinner)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := within(t, "Call", func() error { _, err := f.Call(ctx, "spin", nil, nil); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call(spin) with a 20ms context = %v, want context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	err = within(t, "Call", func() error { _, err := f.Call(ctx, "spin", nil, nil); return err })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Call(spin) cancelled = %v, want context.Canceled", err)
	}
	if d, err := f.Call(context.Background(), "ok", nil, nil); err != nil || d != DecisionApprove {
		t.Fatalf("Call after = %q, %v", d, err)
	}
}

func TestBudgetAPI(t *testing.T) {
	if b := BudgetFrom(context.Background()); b != nil {
		t.Fatalf("BudgetFrom(Background) = %v", b)
	}
	b := NewBudget(0)
	if b.Remaining() != DefaultCallBudget {
		t.Fatalf("NewBudget(0).Remaining() = %v", b.Remaining())
	}
	ctx, cancel := context.WithCancel(WithBudget(context.Background(), b))
	defer cancel()
	if BudgetFrom(ctx) != b {
		t.Fatalf("BudgetFrom(derived context) lost the budget")
	}
	if got := NewEvaluator(Limits{CallBudget: time.Second}).NewBudget().Remaining(); got != time.Second {
		t.Fatalf("Evaluator.NewBudget().Remaining() = %v", got)
	}
	if err := fmt.Errorf("x: %w", ErrBudget); !errors.Is(err, ErrBudget) {
		t.Fatal("ErrBudget does not wrap")
	}
}
