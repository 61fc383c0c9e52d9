package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets a test re-execute the test binary as a helper process (crash,
// second writer, lock holder): see child_test.go.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// fakeClock is a clock that advances by step on every reading, so times in
// golden files are fixed and every row gets a distinct time.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), step: time.Millisecond}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// dbPath returns a journal path in a fresh directory that does not exist yet.
func dbPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "flemma", "journal.db")
}

// openTest opens a journal at a fresh path and closes it at cleanup.
func openTest(t *testing.T, o *Options) *Journal {
	t.Helper()
	return openAt(t, dbPath(t), o)
}

func openAt(t *testing.T, path string, o *Options) *Journal {
	t.Helper()
	j, err := Open(context.Background(), path, o)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func mustStart(t testing.TB, j *Journal, c Call) ID {
	t.Helper()
	id, err := j.Start(context.Background(), c)
	if err != nil {
		t.Fatalf("Start(%+v) = %v", c, err)
	}
	return id
}

func call(buffer, callID string) Call {
	return Call{Buffer: buffer, CallID: callID, Tool: "bash", InputHash: "sha256:" + callID,
		Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"}
}

func TestStartFinishRoundTrip(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	j := openTest(t, &Options{Now: clock.Now, PID: 4242, MaxResultBytes: 16})
	tests := []struct {
		name      string
		outcome   Outcome
		want      Outcome // Result as stored
		truncated bool
	}{
		{"ok", Outcome{Status: "ok", Duration: 1500 * time.Microsecond, OutputBytes: 5, Result: "hello"},
			Outcome{Status: "ok", Duration: 1500 * time.Microsecond, OutputBytes: 5, Result: "hello"}, false},
		{"error", Outcome{Status: "error", IsError: true, ErrorKind: "ToolError", Duration: time.Second, Result: "exit 1"},
			Outcome{Status: "error", IsError: true, ErrorKind: "ToolError", Duration: time.Second, OutputBytes: 6, Result: "exit 1"}, false},
		{"canceled, no duration given", Outcome{Status: "canceled", IsError: true},
			Outcome{Status: "canceled", IsError: true, Duration: time.Millisecond}, false},
		{"truncated", Outcome{Status: "ok", Result: "0123456789abcdefXYZ"},
			Outcome{Status: "ok", Duration: time.Millisecond, OutputBytes: 19, Result: "0123456789abcdef"}, true},
		{"truncated at a rune boundary", Outcome{Status: "ok", Result: "0123456789abcde€"},
			Outcome{Status: "ok", Duration: time.Millisecond, OutputBytes: 18, Result: "0123456789abcde"}, true},
		{"empty result", Outcome{Status: "timeout", IsError: true, ErrorKind: "Timeout", Duration: 30 * time.Second},
			Outcome{Status: "timeout", IsError: true, ErrorKind: "Timeout", Duration: 30 * time.Second}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := call("/home/u/a.chat", fmt.Sprintf("toolu_%02d", i))
			id := mustStart(t, j, in)
			got, ok, err := j.Latest(ctx, in.Buffer, in.CallID)
			if err != nil || !ok {
				t.Fatalf("Latest after Start = %v, %v, %v", got, ok, err)
			}
			if got.ID != id || got.Finished() || got.PID != 4242 || got.StartedAt.IsZero() ||
				got.Tool != in.Tool || got.InputHash != in.InputHash || got.Decision != in.Decision || got.DecidedBy != in.DecidedBy {
				t.Fatalf("Latest after Start = %+v, want the started call %d of %+v", got, id, in)
			}
			if err := j.Finish(ctx, id, tt.outcome); err != nil {
				t.Fatalf("Finish = %v", err)
			}
			got, _, err = j.Latest(ctx, in.Buffer, in.CallID)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Finished() || !got.FinishedAt.After(got.StartedAt) {
				t.Errorf("finished %v at %v, started at %v", got.Finished(), got.FinishedAt, got.StartedAt)
			}
			gotO := Outcome{Status: got.Status, IsError: got.IsError, ErrorKind: got.ErrorKind, Duration: got.Duration, OutputBytes: got.OutputBytes, Result: got.Result}
			if gotO != tt.want || got.ResultTruncated != tt.truncated {
				t.Errorf("stored %+v truncated=%v, want %+v truncated=%v", gotO, got.ResultTruncated, tt.want, tt.truncated)
			}
			if err := j.Finish(ctx, id, tt.outcome); !errors.Is(err, ErrNotFound) {
				t.Errorf("second Finish = %v, want ErrNotFound", err)
			}
		})
	}
	if err := j.Finish(ctx, 9999, Outcome{Status: "ok"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Finish(unknown id) = %v, want ErrNotFound", err)
	}
}

func TestStartValidation(t *testing.T) {
	j := openTest(t, nil)
	for _, c := range []Call{{CallID: "a", Tool: "t"}, {Buffer: "b", Tool: "t"}, {Buffer: "b", CallID: "a"}} {
		if _, err := j.Start(context.Background(), c); err == nil {
			t.Errorf("Start(%+v) = nil, want an error", c)
		}
	}
}

func TestStartedLatestUnfinishedResolve(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	const a, b = "/p/a.chat", "unnamed:77:3"
	idA1 := mustStart(t, j, call(a, "t1"))
	idA2 := mustStart(t, j, call(a, "t2"))
	idB1 := mustStart(t, j, call(b, "t1"))
	if err := j.Finish(ctx, idA2, Outcome{Status: "ok"}); err != nil {
		t.Fatal(err)
	}

	started := []struct {
		buffer, callID, hash string
		want                 bool
	}{
		{a, "t1", "sha256:t1", true},
		{a, "t2", "sha256:t2", true}, // finished calls started too
		{a, "t1", "sha256:other", false},
		{a, "t3", "sha256:t3", false},
		{b, "t1", "sha256:t1", true},
		{b, "t2", "sha256:t2", false},
	}
	for _, tt := range started {
		if got, err := j.Started(ctx, tt.buffer, tt.callID, tt.hash); got != tt.want || err != nil {
			t.Errorf("Started(%q, %q, %q) = %v, %v, want %v", tt.buffer, tt.callID, tt.hash, got, err, tt.want)
		}
	}

	unfinished := func(buffer string) []ID {
		t.Helper()
		cs, err := j.Unfinished(ctx, buffer)
		if err != nil {
			t.Fatalf("Unfinished(%q) = %v", buffer, err)
		}
		var ids []ID
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	if got := unfinished(a); fmt.Sprint(got) != fmt.Sprint([]ID{idA1}) {
		t.Errorf("Unfinished(a) = %v, want [%d]", got, idA1)
	}

	// Resume: resolve the old row, run again under a new row.
	if err := j.Resolve(ctx, idA1, Resumed, "user"); err != nil {
		t.Fatalf("Resolve(resumed) = %v", err)
	}
	if got := unfinished(a); len(got) != 0 {
		t.Errorf("Unfinished(a) after Resolve = %v, want none", got)
	}
	old, _, _ := j.Latest(ctx, a, "t1")
	if old.ID != idA1 || old.Resolution != Resumed || old.ResolvedBy != "user" || old.ResolvedAt.IsZero() {
		t.Errorf("Latest after Resolve = %+v, want call %d resumed by user", old, idA1)
	}
	idA1b := mustStart(t, j, call(a, "t1"))
	if latest, _, _ := j.Latest(ctx, a, "t1"); latest.ID != idA1b {
		t.Errorf("Latest after the re-run = %d, want %d", latest.ID, idA1b)
	}
	if err := j.Resolve(ctx, idB1, Discarded, "user"); err != nil {
		t.Fatalf("Resolve(discarded) = %v", err)
	}
	if _, ok, err := j.Latest(ctx, a, "nope"); ok || err != nil {
		t.Errorf("Latest(unknown) = %v, %v, want not found", ok, err)
	}

	for _, tt := range []struct {
		name string
		id   ID
		r    Resolution
	}{
		{"already resolved", idA1, Discarded},
		{"finished", idA2, Discarded},
		{"unknown", 12345, Resumed},
	} {
		if err := j.Resolve(ctx, tt.id, tt.r, "user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(%s) = %v, want ErrNotFound", tt.name, err)
		}
	}
	if err := j.Resolve(ctx, idA1b, "maybe", "user"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(unknown resolution) = %v, want a usage error", err)
	}

	// Resolutions are decisions: they are in the audit log.
	var buf strings.Builder
	if err := j.Export(ctx, &buf, Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"event","id":1,`, `"decision":"resumed","decided_by":"user"`, `"decision":"discarded"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("Export has no %s:\n%s", want, buf.String())
		}
	}
}

func TestFileModesAndSettings(t *testing.T) {
	path := dbPath(t)
	j := openAt(t, path, nil)
	mustStart(t, j, call("/a", "t1")) // creates the WAL
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600, path + "-wal": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&^want != 0 {
			t.Errorf("mode of %s = %v, want at most %v", p, got, want)
		}
	}
	// Durability rests on these: WAL, and synchronous=FULL (2) on the
	// connection that writes, which syncs the WAL on every commit.
	var mode string
	var syncMode int
	ctx := context.Background()
	if err := j.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v, want wal", mode, err)
	}
	if err := j.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil || syncMode != 2 {
		t.Errorf("synchronous = %d, %v, want 2 (FULL)", syncMode, err)
	}
	var appID, version int
	j.w.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID)
	j.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	if appID != applicationID || version != schemaVersion || schemaVersion != len(migrations) {
		t.Errorf("application_id %#x, user_version %d, want %#x, %d (= len(migrations) %d)", appID, version, applicationID, schemaVersion, len(migrations))
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := dbPath(t)
	j, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, j, call("/a", "t1"))
	j.Close()
	j = openAt(t, path, nil)
	if j.Recovered() != nil {
		t.Errorf("Recovered() = %v on a good file", j.Recovered())
	}
	cs, err := j.Unfinished(context.Background(), "/a")
	if err != nil || len(cs) != 1 || cs[0].ID != id {
		t.Errorf("Unfinished after reopen = %+v, %v, want call %d", cs, err, id)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, nil)
	id := mustStart(t, j, call("/a", "t1"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := j.Start(ctx, call("/a", "t2")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := j.Finish(ctx, id, Outcome{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Finish after Close = %v, want ErrClosed", err)
	}
	if _, err := j.Unfinished(ctx, "/a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Unfinished after Close = %v, want ErrClosed", err)
	}
}

func TestContextCanceled(t *testing.T) {
	j := openTest(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Start(ctx, call("/a", "t1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Start(canceled ctx) = %v, want context.Canceled", err)
	}
	if _, err := j.Started(ctx, "/a", "t1", "h"); !errors.Is(err, context.Canceled) {
		t.Errorf("Started(canceled ctx) = %v, want context.Canceled", err)
	}
	if ok, _ := j.Started(context.Background(), "/a", "t1", "sha256:t1"); ok {
		t.Error("a Start with a canceled context was recorded")
	}
}

func TestReadOnlyOption(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	if _, err := Open(ctx, path, &Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open(missing, ReadOnly) = %v, want not exist", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(ReadOnly) created %s", filepath.Dir(path))
	}
	w := openAt(t, path, nil)
	mustStart(t, w, call("/a", "t1"))
	r := openAt(t, path, &Options{ReadOnly: true})
	if cs, err := r.Unfinished(ctx, "/a"); err != nil || len(cs) != 1 {
		t.Errorf("read-only Unfinished = %v, %v, want 1 call", cs, err)
	}
	if _, err := r.Start(ctx, call("/a", "t2")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Start = %v, want ErrReadOnly", err)
	}
}

func TestTruncateUTF8(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
		cut  bool
	}{
		{"", 4, "", false},
		{"abcd", 4, "abcd", false},
		{"abcde", 4, "abcd", true},
		{"abcé", 4, "abc", true},                              // é is 2 bytes: 5 in all
		{"ab€", 4, "ab", true},                                // € is 3 bytes
		{"a😀b", 4, "a", true},                                 // 😀 is 4 bytes
		{"😀😀", 4, "😀", true},                                  // cut right after a rune
		{"\xff\xff\xff\xff\xff", 4, "\xff\xff\xff\xff", true}, // invalid bytes: cut anyway
	}
	for _, tt := range tests {
		got, cut := truncateUTF8(tt.in, tt.max)
		if got != tt.want || cut != tt.cut {
			t.Errorf("truncateUTF8(%q, %d) = %q, %v, want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.cut)
		}
	}
}

func TestHashInput(t *testing.T) {
	h1, err := HashInput(map[string]any{"command": "ls", "label": "x"})
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HashInput(map[string]any{"label": "x", "command": "ls"})
	h3, _ := HashInput(map[string]any{"command": "ls -a", "label": "x"})
	if h1 != h2 || h1 == h3 || !strings.HasPrefix(h1, "sha256:") || len(h1) != len("sha256:")+64 {
		t.Errorf("HashInput: %s %s %s; want equal for the same input in any key order, different otherwise", h1, h2, h3)
	}
	if _, err := HashInput(func() {}); err == nil {
		t.Error("HashInput(func) = nil error")
	}
}

func TestBufferKey(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	file := filepath.Join(real, "a.chat")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(real, "link.chat")
	if err := os.Symlink(file, link); err != nil {
		t.Skip(err)
	}
	t.Chdir(real)
	tests := []struct{ in, want string }{
		{file, file},
		{link, file},
		{"a.chat", file},
		{"./sub/../a.chat", file},
		{"gone.chat", filepath.Join(real, "gone.chat")},
	}
	for _, tt := range tests {
		if got := BufferKey(tt.in); got != tt.want {
			t.Errorf("BufferKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPathsNeedingEscapes: the path goes into a file: URI.
func TestPathsNeedingEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir %41", "journal.db")
	j := openAt(t, path, nil)
	mustStart(t, j, call("/a", "t1"))
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at %q: %v", path, err)
	}
}

// TestImports: journal may import only the standard library and the SQLite
// driver.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") && path != "modernc.org/sqlite" {
				t.Errorf("%s imports %s: only the standard library and modernc.org/sqlite are allowed", name, path)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	j := openAt(t, path, &Options{Timeout: 50 * time.Millisecond})
	if err := j.Check(ctx); err != nil {
		t.Errorf("Check = %v", err)
	}
	release := holdLock(t, "another connection", j, path)
	if err := j.Check(ctx); !errors.Is(err, ErrBusy) {
		t.Errorf("Check while locked = %v, want ErrBusy", err)
	}
	release()
}

// RecordAll writes a press's decisions in one transaction, in order.
func TestRecordAll(t *testing.T) {
	j := openTest(t, nil)
	ctx := context.Background()
	var evs []Event
	for i := 0; i < 300; i++ {
		evs = append(evs, Event{Buffer: "/b.chat", CallID: fmt.Sprintf("c%d", i), Tool: "read", Decision: "approve", DecidedBy: "urn:flemma:approval:config ($default)"})
	}
	if err := j.RecordAll(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := j.RecordAll(ctx, nil); err != nil {
		t.Fatalf("RecordAll(nil) = %v", err)
	}
	var buf strings.Builder
	if err := j.Export(ctx, &buf, Filter{Buffer: "/b.chat"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 300 || !strings.Contains(lines[0], `"c0"`) || !strings.Contains(lines[299], `"c299"`) {
		t.Errorf("exported %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// A journal written by schema 1 (before calls recorded their changes) is
// migrated in place: its rows stay, and new rows keep changes.
func TestMigrateFromSchema1(t *testing.T) {
	path := dbPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{migrations[0], "PRAGMA user_version = 1",
		`INSERT INTO calls (buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at) VALUES ('/b.chat', 'old', 'bash', 'h', 'approve', 'user', 1, 1)`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	j := openAt(t, path, nil)
	ctx := context.Background()
	if c, ok, err := j.Latest(ctx, "/b.chat", "old"); err != nil || !ok || c.Changes != "" {
		t.Fatalf("Latest(old) after the migration = %+v, %v, %v", c, ok, err)
	}
	id := mustStart(t, j, Call{Buffer: "/b.chat", CallID: "new", Tool: "write", InputHash: "h2"})
	if err := j.Finish(ctx, id, Outcome{Status: "ok", Result: "Wrote", Changes: `[{"path":"/x","before":"absent","after":"ab"}]`}); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := j.Latest(ctx, "/b.chat", "new"); c.Changes != `[{"path":"/x","before":"absent","after":"ab"}]` {
		t.Errorf("changes = %q", c.Changes)
	}
	// Migrated on to version 3 too: error kinds are kept.
	id = mustStart(t, j, Call{Buffer: "/b.chat", CallID: "failed", Tool: "bash", InputHash: "h3"})
	if err := j.Finish(ctx, id, Outcome{Status: "error", IsError: true, ErrorKind: "Timeout", Result: "timed out"}); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := j.Latest(ctx, "/b.chat", "failed"); c.ErrorKind != "Timeout" {
		t.Errorf("error kind = %q", c.ErrorKind)
	}
}
