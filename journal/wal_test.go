package journal

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashedCopy writes n calls (each Start and Finish: two commits) into a
// journal, then copies its file and WAL as they are on disk while it is
// still open — the state a crash leaves — to a new path, which it returns.
// before runs first on the open journal (a checkpoint, older writes).
func crashedCopy(t *testing.T, n int, before func(j *Journal)) string {
	t.Helper()
	ctx := context.Background()
	j := openTest(t, nil)
	if before != nil {
		before(j)
	}
	for i := range n {
		id := mustStart(t, j, call("/w.chat", fmt.Sprint("w", i)))
		if err := j.Finish(ctx, id, Outcome{Status: "ok", Result: strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "journal.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(j.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func walPageSize(t *testing.T, path string) int {
	b, err := os.ReadFile(path + "-wal")
	if err != nil || len(b) < walHeaderSize {
		t.Fatalf("no WAL at %s: %v", path, err)
	}
	return int(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11]))
}

// TestDamagedWALIsReported: SQLite ignores a WAL from its first bad frame
// on, without an error (issue 26: a garbage WAL lost records without a log
// line). Open says how much could not be read and keeps a copy; an intact
// WAL, a torn last write and the old frames a restarted WAL leaves behind
// are not damage.
func TestDamagedWALIsReported(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		before    func(j *Journal)
		damage    func(t *testing.T, path string)
		wantFrame int // -1: not reported, -3: some frame after the header
		wantLost  int
		wantCalls int // calls SQLite still reads
	}{
		{name: "intact", damage: func(*testing.T, string) {}, wantFrame: -1, wantCalls: 6},
		{
			name: "garbage header",
			damage: func(t *testing.T, path string) {
				f, _ := os.OpenFile(path+"-wal", os.O_RDWR, 0)
				defer f.Close()
				f.WriteAt([]byte(strings.Repeat("garbage!", 4)), 0)
			},
			wantFrame: 0, wantLost: -1, wantCalls: 0,
		},
		{
			name: "a page of the third frame from the end",
			damage: func(t *testing.T, path string) {
				ps := walPageSize(t, path)
				fi, _ := os.Stat(path + "-wal")
				frames := (int(fi.Size()) - walHeaderSize) / (walFrameHeaderSize + ps)
				f, _ := os.OpenFile(path+"-wal", os.O_RDWR, 0)
				defer f.Close()
				off := int64(walHeaderSize + (frames-3)*(walFrameHeaderSize+ps) + walFrameHeaderSize + 100)
				f.WriteAt([]byte("damage"), off)
			},
			wantFrame: -3, wantCalls: -2, // the calls before it are read
		},
		{
			name: "torn last frame",
			damage: func(t *testing.T, path string) {
				fi, _ := os.Stat(path + "-wal")
				os.Truncate(path+"-wal", fi.Size()-100)
			},
			wantFrame: -1, wantCalls: -2,
		},
		{
			name: "old frames after a restarted WAL",
			before: func(j *Journal) {
				for i := range 30 {
					mustStart(t, j, call("/old.chat", fmt.Sprint("o", i)))
				}
				if _, err := j.w.Exec("PRAGMA wal_checkpoint(RESTART)"); err != nil {
					t.Fatal(err)
				}
			},
			damage: func(*testing.T, string) {}, wantFrame: -1, wantCalls: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := crashedCopy(t, 6, tt.before)
			tt.damage(t, path)
			j := openAt(t, path, nil)
			d := j.WALDamaged()
			switch {
			case tt.wantFrame == -1 && d != nil:
				t.Fatalf("reported %s", d)
			case tt.wantFrame != -1 && d == nil:
				t.Fatal("not reported")
			case d != nil:
				if tt.wantFrame >= 0 && d.Frame != tt.wantFrame || tt.wantFrame == -3 && d.Frame < 1 || tt.wantLost != 0 && d.Lost != tt.wantLost || tt.wantLost == 0 && d.Lost < 1 {
					t.Errorf("frame %d, lost %d; want frame %d, lost %d", d.Frame, d.Lost, tt.wantFrame, tt.wantLost)
				}
				if b, err := os.ReadFile(d.CopyAt); err != nil || int64(len(b)) != d.Size {
					t.Errorf("copy %q: %d bytes, %v; want %d", d.CopyAt, len(b), err, d.Size)
				}
				t.Log(d)
			}
			var calls int
			j.r.QueryRowContext(ctx, "SELECT count(*) FROM calls WHERE buffer = '/w.chat'").Scan(&calls)
			if tt.wantCalls >= 0 && calls != tt.wantCalls || tt.wantCalls == -2 && (calls == 0 || calls > 6) {
				t.Errorf("%d calls readable, want %d", calls, tt.wantCalls)
			}
			// The journal works on.
			mustStart(t, j, call("/w.chat", "after"))
		})
	}
}

// TestDamagedJournalSaysWhatWasLost: a journal moved aside is counted —
// its calls, decisions and interrupted calls — or said to be uncountable.
func TestDamagedJournalSaysWhatWasLost(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	j := openAt(t, path, nil)
	for i := range 5 {
		id := mustStart(t, j, call("/d.chat", fmt.Sprint("d", i)))
		if i < 3 {
			if err := j.Finish(ctx, id, Outcome{Status: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Record(ctx, Event{Buffer: "/d.chat", CallID: "d0", Tool: "bash", Decision: "approve", DecidedBy: "user"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// Not a flemma journal any more (another application's id), yet readable.
	db := openRaw(t, path)
	if _, err := db.Exec("PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j2 := openAt(t, path, nil)
	r := j2.Recovered()
	if r == nil {
		t.Fatal("not recovered")
	}
	if r.Calls != 5 || r.Events != 1 || r.Interrupted != 2 {
		t.Errorf("counted %d calls, %d events, %d interrupted; want 5, 1, 2", r.Calls, r.Events, r.Interrupted)
	}
	if s := r.String(); !strings.Contains(s, "5 calls, 1 decisions") || !strings.Contains(s, "2 call(s) it recorded as interrupted") || !strings.Contains(s, r.MovedTo) {
		t.Errorf("String() = %s", s)
	}
	// Garbage: nothing to count, and it says so.
	j2.Close()
	os.Remove(path + "-wal")
	os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	j3 := openAt(t, path, nil)
	if r := j3.Recovered(); r == nil || r.Calls != -1 || !strings.Contains(r.String(), "could not be counted") {
		t.Errorf("garbage: %+v", r)
	}
}

func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestReportsOutliveTheHost: what Open found stays reported until a host
// acknowledges it — a host killed before it told the user leaves it to the
// next.
func TestReportsOutliveTheHost(t *testing.T) {
	path := dbPath(t)
	j := openAt(t, path, nil)
	j.Close()
	os.WriteFile(path, []byte(strings.Repeat("garbage ", 1000)), 0o600)
	j1 := openAt(t, path, nil)
	r := j1.Reports()
	if len(r) != 1 || r[0].Kind != "moved-aside" || !strings.Contains(r[0].Text, j1.Recovered().MovedTo) {
		t.Fatalf("reports = %+v", r)
	}
	j1.Close() // killed before it told anyone
	j2 := openAt(t, path, nil)
	if j2.Recovered() != nil {
		t.Fatal("the new journal was moved aside")
	}
	if got := j2.Reports(); len(got) != 1 || got[0] != r[0] {
		t.Fatalf("the next host's reports = %+v, want %+v", got, r)
	}
	if err := j2.Acknowledge(r); err != nil {
		t.Fatal(err)
	}
	if got := j2.Reports(); len(got) != 0 {
		t.Errorf("after Acknowledge: %+v", got)
	}
	if _, err := os.Stat(path + unreportedSuffix); !os.IsNotExist(err) {
		t.Errorf("the reports file stays: %v", err)
	}
}
