//go:build linux

package builtin

import (
	"os"
	"sync"
	"testing"
	"time"
)

// TestWalkSwapStress: while grep, find and ls run again and again, a
// goroutine flips proj/a between the real directory and a symlink to
// outside the search root or to a deny_read folder, as fast as it can. No
// run ever shows what lies behind the symlink. Bounded: 3 seconds or 20,000
// runs (the deterministic form is TestWalkSymlinkSwap).
func TestWalkSwapStress(t *testing.T) {
	s := newSwapTree(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	flips := 0
	go func() {
		defer wg.Done()
		targets := []string{s.out, s.secret}
		for ; ; flips++ {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(s.a, s.a+".orig") == nil {
				os.Symlink(targets[flips%2], s.a)
				os.Remove(s.a)
				os.Rename(s.a+".orig", s.a)
			}
		}
	}()
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	inputs := []struct {
		tool  string
		input map[string]any
	}{
		{"grep", map[string]any{"pattern": "needle", "path": "proj"}},
		{"find", map[string]any{"pattern": "*.txt", "path": "proj"}},
		{"ls", map[string]any{"path": "proj", "max_depth": 3}},
	}
	runs := 0
	for deadline := time.Now().Add(3 * time.Second); runs < 20000 && time.Now().Before(deadline); runs++ {
		in := inputs[runs%len(inputs)]
		if res := s.f.run(in.tool, in.input); leaked(res.Content) {
			halt()
			t.Fatalf("run %d: %s followed the swapped-in symlink:\n%s", runs, in.tool, res.Content)
		}
	}
	halt()
	t.Logf("%d runs, %d flips", runs, flips)
}
