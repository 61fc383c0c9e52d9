package cycle

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// oneCall has the user type a calculator call with a new id into buffer 1
// (replacing what was there) and press <C-]> until its result is in.
func oneCall(tb testing.TB, env *testEnv, i int) {
	id := fmt.Sprintf("toolu_%06d", i)
	text := []string{"@Assistant:", "", fmt.Sprintf("**Tool Use:** `calculator` (`%s`)", id), "", "```json", fmt.Sprintf(`{"expression": "%d * 2"}`, i), "```"}
	env.ed.mu.Lock()
	n := len(env.ed.bufs[1].lines)
	// What the fake editor records for tests' assertions is not the
	// engine's memory.
	env.ed.notes, env.ed.evs, env.ed.reqs, env.ed.progress = nil, nil, nil, nil
	// Nor is its undo history (Neovim's memory): the earlier calls' states
	// go, the current one stays.
	b := env.ed.bufs[1]
	b.states, b.parent = map[int][]string{b.seq: b.states[b.seq]}, map[int]int{}
	env.ed.mu.Unlock()
	if err := env.ed.edit(1, 0, n, text...); err != nil {
		tb.Fatal(err)
	}
	// A call the user typed is not one the provider sent: the user vouches
	// for it (:Flemma trust), or auto_approve does not count for it.
	env.ed.trust(1)
	want := fmt.Sprintf("\n%d\n", i*2)
	for range 3 {
		if _, err := env.h.Cycle(1); err != nil {
			tb.Fatal(err)
		}
		env.ed.waitIdle(tb, env.h, 1)
		if strings.Contains(env.ed.String(1), want) {
			return
		}
	}
	tb.Fatalf("call %s has no result:\n%q\n%v", id, env.ed.String(1), env.ed.notifications())
}

// memDir is a new directory in memory (/dev/shm) when the system has
// one, else in the test's temporary directory; it is removed at the end.
func memDir(tb testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "flemma-bench-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// heapProfile writes a heap profile to $FLEMMA_HEAP_PROFILE.name, when that
// is set: `go tool pprof -diff_base X.100 X.600` shows what the calls kept.
func heapProfile(tb testing.TB, name string) {
	prefix := os.Getenv("FLEMMA_HEAP_PROFILE")
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "." + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkMemoryPerCall runs calls through the engine one after another in
// one buffer (the user types a calculator call, <C-]> runs it; the buffer
// keeps only the latest call, so its text does not grow) and reports how
// much live heap the engine keeps per call: the growth from 100 calls to
// 600, divided by 500 (KB/call), and what 10,000 calls would keep
// beyond 100 at that rate (MB-at-10k). trust-KB/call is the part of the
// trust ledger and its editor-side copy (measured by dropping them at the
// end), which prune themselves (another part of the code).
func BenchmarkMemoryPerCall(b *testing.B) {
	const first, more = 100, 500
	var perCall, trustPerCall float64
	for b.Loop() {
		// The journal commits each call with an fsync (synchronous=FULL):
		// on a disk that was most of the benchmark's time and none of its
		// figure (the heap). In memory (/dev/shm, where there is one) the
		// same commits cost no waiting.
		paths := map[string]any{"state": memDir(b), "config": b.TempDir()}
		env := newEnv(b, with(noSandbox(), map[string]any{"paths": paths, "tools": map[string]any{"auto_approve": []any{"calculator"}, "autopilot": map[string]any{"enabled": false}}}))
		env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "")
		for i := range first {
			oneCall(b, env, i)
		}
		h0 := liveHeap()
		heapProfile(b, "100")
		for i := first; i < first+more; i++ {
			oneCall(b, env, i)
		}
		h1 := liveHeap()
		heapProfile(b, "600")
		perCall = (float64(h1) - float64(h0)) / more
		// The trust ledger (trust/, cycle/trust.go) and its copy in the
		// editor (lua/flemma/trust.lua; here the fake's records) prune
		// themselves: what dropping them frees, per call so far.
		st := env.h.session(1)
		st.mu.Lock()
		st.trust = nil
		st.mu.Unlock()
		env.ed.mu.Lock()
		env.ed.bufs[1].records = map[string]WireRecord{}
		env.ed.mu.Unlock()
		trustPerCall = (float64(h1) - float64(liveHeap())) / (first + more)
		runtime.KeepAlive(env)
	}
	b.ReportMetric(perCall/1024, "KB/call")
	b.ReportMetric(perCall*(10000-first)/(1<<20), "MB-at-10k")
	b.ReportMetric(trustPerCall/1024, "trust-KB/call")
}
