package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
)

// allocated runs fn and returns how many bytes the heap allocated meanwhile
// (runtime.MemStats.TotalAlloc: a count, not a timing).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGrepManyMatchesBounded: with a huge limit, grep keeps the text of
// only the matches it can show (the line limit) and counts the rest: its
// memory does not grow with the file.
func TestGrepManyMatchesBounded(t *testing.T) {
	f := newFixture(t)
	line := "needle " + strings.Repeat("x", 92) + "\n" // 100 bytes
	f.write("many.txt", strings.Repeat(line, 200000))  // 20 MB, 200,000 matches
	var res tools.Result
	n := allocated(func() {
		res = f.run("grep", map[string]any{"pattern": "needle", "path": "many.txt", "limit": 1e9})
	})
	want(t, "many", res, true, "[200000 matches; showing the first ")
	if got := strings.Count(res.Content, "\n"); got > tools.DefaultMaxLines+2 {
		t.Errorf("grep output has %d lines", got)
	}
	if n > 12<<20 {
		t.Errorf("grep over a 20 MB file with 200,000 matches allocated %d MB, want under 12 MB", n>>20)
	}
	// The count is still exact below the limit, and the limit still holds.
	want(t, "limit", f.run("grep", map[string]any{"pattern": "needle", "path": "many.txt", "limit": 150000}), true, "[150000 matches, limit reached; showing the first ")
	// A directory search counts the same way across files and batches.
	for i := range 70 {
		f.write(fmt.Sprintf("d/f%03d.txt", i), strings.Repeat("needle\n", 50))
	}
	want(t, "dir", f.run("grep", map[string]any{"pattern": "needle", "path": "d", "limit": 1e9}), true, "[3500 matches; showing the first 2000]")
	res = f.run("grep", map[string]any{"pattern": "needle", "path": "d", "limit": 3}) // within the first file
	want(t, "dir limit", res, true, "[3 matches, limit reached]")
	if !strings.HasPrefix(res.Content, "d/f000.txt:1:needle\nd/f000.txt:2:needle\nd/f000.txt:3:needle\n\n") {
		t.Errorf("dir limit kept the wrong matches:\n%s", res.Content)
	}
}

// TestGrepLongLineBounded: a line longer than grepMaxLine is searched in
// its first grepMaxLine bytes; the buffer does not grow with it, and the
// lines after it are searched and numbered as usual.
func TestGrepLongLineBounded(t *testing.T) {
	f := newFixture(t)
	long := "needle at the start " + strings.Repeat("y", 40<<20) + " needle at the end"
	p := f.write("long.txt", long+"\nafter needle\n"+long+"\n")
	var res tools.Result
	n := allocated(func() {
		res = f.run("grep", map[string]any{"pattern": "needle", "path": "long.txt"})
	})
	want(t, "long", res, true, "long.txt:1:needle at the start", "long.txt:2:after needle", "long.txt:3:needle at the start", "[3 matches]")
	if n > 3*grepMaxLine {
		t.Errorf("grep over two 40 MB lines allocated %d MB, want under %d MB", n>>20, 3*grepMaxLine>>20)
	}
	os.Remove(p)
	// Case-insensitive search goes through a lower-cased copy: bounded too.
	f.write(filepath.Join("sub", "long.txt"), long+"\n")
	n = allocated(func() {
		res = f.run("grep", map[string]any{"pattern": "(?i)NEEDLE AT", "path": "sub"})
	})
	want(t, "fold", res, true, "sub/long.txt:1:needle at the start")
	if n > 4*grepMaxLine {
		t.Errorf("case-insensitive grep over a 40 MB line allocated %d MB", n>>20)
	}
}

// rssBytes is this process's resident set size (Linux), or 0.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb uint64
			fmt.Sscan(rest, &kb)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkLargeOutput runs a command printing 100 MB through the
// executor and reports what the process holds right after the call (as
// an idle host would hold it for minutes): its resident size and heap in
// use.
func BenchmarkLargeOutput(b *testing.B) {
	dir := b.TempDir()
	call := benchCall(b, dir)
	call.Env.Truncate = tools.Limits{}
	call.Env.OutputDir = b.TempDir()
	call.Tool = "bash"
	r := tools.NewRegistry()
	r.MustAdd(Bash())
	e := &tools.Executor{Registry: r}
	in := json.RawMessage(`{"command":"head -c 100000000 /dev/zero | tr '\\0' 'y' | fold -w 99","label":"x","timeout":null}`)
	var rss, inuse uint64
	for b.Loop() {
		if res := e.Run(context.Background(), call, in); res.IsError {
			b.Fatal(res.Content)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, inuse = rssBytes(), ms.HeapInuse
	}
	b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
	b.ReportMetric(float64(inuse)/(1<<20), "heap-inuse-MB")
}

// TestLargeOutputReleased: after a call that produced 100 MB of output, the
// host does not keep that memory: the garbage is collected and returned to
// the system when the call ends, not minutes later (an idle host runs no
// collection at all).
func TestLargeOutputReleased(t *testing.T) {
	f := newFixture(t)
	res := f.run("bash", map[string]any{"command": "head -c 100000000 /dev/zero | tr '\\0' 'y' | fold -w 99"})
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // no collection here: what the call left behind
	want(t, "100 MB", res, true, "[Showing lines ")
	held := ms.HeapIdle - ms.HeapReleased
	t.Logf("after a 100 MB output: HeapInuse %d MB, held but unused %d MB, released %d MB", ms.HeapInuse>>20, held>>20, ms.HeapReleased>>20)
	if ms.HeapInuse > 24<<20 {
		t.Errorf("HeapInuse = %d MB after the call, want under 24 MB (its garbage was not collected)", ms.HeapInuse>>20)
	}
	if held > 8<<20 {
		t.Errorf("%d MB of heap held but unused after the call, want under 8 MB (not returned to the system)", held>>20)
	}
	// Nothing keeps the output alive either.
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > 24<<20 {
		t.Errorf("HeapInuse = %d MB after a collection: something keeps the output", ms.HeapInuse>>20)
	}
}
