package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// exportFixture fills a journal with a fixed clock and pid: two buffers,
// finished, failed, truncated, unfinished and resolved calls, and decisions.
func exportFixture(t *testing.T) (*Journal, *fakeClock) {
	t.Helper()
	ctx := context.Background()
	clock := newFakeClock()
	j := openTest(t, &Options{Now: clock.Now, PID: 1234, MaxResultBytes: 18})
	const a, b = "/home/u/notes/a.chat", "unnamed:4321:7"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := func(buffer, callID, tool, decision, by string) {
		must(j.Record(ctx, Event{Buffer: buffer, CallID: callID, Tool: tool, InputHash: "sha256:" + callID, Decision: decision, DecidedBy: by}))
	}
	rec(a, "toolu_01", "bash", "approve", "urn:flemma:approval:config ($default)")
	id1 := mustStart(t, j, Call{Buffer: a, CallID: "toolu_01", Tool: "bash", InputHash: "sha256:toolu_01",
		Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"})
	must(j.Finish(ctx, id1, Outcome{Status: "ok", Duration: 1234567 * time.Microsecond, Result: "total 0\n<dir> & \"x\""}))
	rec(a, "toolu_02", "write", "require_approval", "urn:flemma:approval:config")
	rec(a, "toolu_02", "write", "approve", "user")
	id2 := mustStart(t, j, Call{Buffer: a, CallID: "toolu_02", Tool: "write", InputHash: "sha256:toolu_02", Decision: "approve", DecidedBy: "user"})
	must(j.Finish(ctx, id2, Outcome{Status: "error", IsError: true, Duration: 2 * time.Millisecond, OutputBytes: 40, Result: "permission denied"}))
	clock.Advance(time.Hour)
	rec(b, "toolu_03", "calculator", "deny", "urn:flemma:approval:deny-list")
	rec(b, "toolu_04", "bash", "approve", "urn:flemma:approval:frontmatter")
	id4 := mustStart(t, j, Call{Buffer: b, CallID: "toolu_04", Tool: "bash", InputHash: "sha256:toolu_04", Decision: "approve", DecidedBy: "urn:flemma:approval:frontmatter"})
	clock.Advance(time.Hour)
	must(j.Resolve(ctx, id4, Discarded, "user"))
	rec(a, "toolu_05", "bash", "approve", "urn:flemma:approval:config ($default)")
	mustStart(t, j, Call{Buffer: a, CallID: "toolu_05", Tool: "bash", InputHash: "sha256:toolu_05", Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"})
	return j, clock
}

func TestExportGolden(t *testing.T) {
	j, _ := exportFixture(t)
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		filter Filter
	}{
		{"all", Filter{}},
		{"buffer", Filter{Buffer: "/home/u/notes/a.chat"}},
		{"unnamed buffer", Filter{Buffer: "unnamed:4321:7"}},
		{"since", Filter{Since: base.Add(90 * time.Minute)}},
		{"limit", Filter{Limit: 3}},
		{"buffer and limit", Filter{Buffer: "/home/u/notes/a.chat", Limit: 2}},
		{"results", Filter{Buffer: "/home/u/notes/a.chat", Results: true}},
		{"nothing", Filter{Buffer: "/nowhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := j.Export(context.Background(), &buf, tt.filter); err != nil {
				t.Fatalf("Export(%+v) = %v", tt.filter, err)
			}
			checkLines(t, buf.String(), tt.filter)
			golden := filepath.Join("testdata", "export_"+strings.ReplaceAll(tt.name, " ", "_")+".jsonl")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("Export(%+v) =\n%s\nwant (%s)\n%s", tt.filter, got, golden, want)
			}
		})
	}
}

// checkLines checks what holds for any export: one JSON object per line, the
// stable key set of its kind, newest last, and the filter obeyed.
func checkLines(t *testing.T, out string, f Filter) {
	t.Helper()
	callKeys := []string{"buffer", "call_id", "decided_by", "decision", "duration_ms", "finished_at", "id", "input_hash",
		"is_error", "kind", "output_bytes", "pid", "resolution", "resolved_at", "resolved_by", "result_truncated", "status", "time", "tool"}
	eventKeys := []string{"buffer", "call_id", "decided_by", "decision", "id", "input_hash", "kind", "pid", "time", "tool"}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	if f.Limit > 0 && len(lines) > f.Limit {
		t.Errorf("%d lines, want at most %d", len(lines), f.Limit)
	}
	prev := ""
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		var keys []string
		for k := range m {
			if k != "result" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		want := eventKeys
		if m["kind"] == "call" {
			want = callKeys
			if _, ok := m["result"]; ok != (f.Results && m["finished_at"] != nil) {
				t.Errorf("line %q: result present %v, want %v", l, ok, f.Results)
			}
		}
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("line %q: keys %v, want %v", l, keys, want)
		}
		ts := m["time"].(string)
		if ts < prev {
			t.Errorf("line %q is older than the one before (%s)", l, prev)
		}
		prev = ts
		if f.Buffer != "" && m["buffer"] != f.Buffer {
			t.Errorf("line %q: buffer, want %s", l, f.Buffer)
		}
		if tm, _ := time.Parse(TimeFormat, ts); tm.Before(f.Since) {
			t.Errorf("line %q: before %v", l, f.Since)
		}
	}
}

// TestExportLimitKeepsNewest: the limit keeps the newest entries and still
// prints them oldest first.
func TestExportLimitKeepsNewest(t *testing.T) {
	j, _ := exportFixture(t)
	var all, last bytes.Buffer
	j.Export(context.Background(), &all, Filter{})
	j.Export(context.Background(), &last, Filter{Limit: 4})
	lines := strings.SplitAfter(strings.TrimSuffix(all.String(), "\n"), "\n")
	if want := strings.Join(lines[len(lines)-4:], "") + "\n"; last.String() != want {
		t.Errorf("Export(Limit 4) =\n%s\nwant the last 4 lines of the full export:\n%s", last.String(), want)
	}
}
