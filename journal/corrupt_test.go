package journal

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodJournal returns the bytes of a closed, checkpointed journal with some
// calls in it.
func goodJournal(t *testing.T) []byte {
	t.Helper()
	path := dbPath(t)
	j, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		id := mustStart(t, j, call("/a.chat", fmt.Sprint("toolu_", i)))
		if err := j.Finish(context.Background(), id, Outcome{Status: "ok", Result: strings.Repeat("r", 3000)}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sqliteFile makes an SQLite file by running stmts and returns its bytes.
func sqliteFile(t *testing.T, stmts ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenDamagedOrForeignFile(t *testing.T) {
	good := goodJournal(t)
	random := make([]byte, 8192)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.IntN(256))
	}
	const (
		fresh     = "fresh"     // Open works, nothing to recover
		recovered = "recovered" // moved aside, new journal
	)
	tests := []struct {
		name    string
		content []byte
		wal     []byte // a -wal file beside it, if not nil
		want    string // fresh, recovered, or an error that errors.Is matches
		wantErr error
	}{
		{name: "empty file", content: []byte{}, want: fresh},
		{name: "random bytes", content: random, want: recovered},
		{name: "random bytes with a WAL", content: random, wal: random[:4096], want: recovered},
		{name: "text", content: []byte("not a database\n"), want: recovered},
		{name: "SQLite header only", content: good[:100], want: recovered},
		{name: "truncated to 50 bytes", content: good[:50], want: recovered},
		{name: "truncated to one page", content: good[:4096], want: recovered},
		{name: "truncated to half", content: good[:len(good)/2], want: recovered},
		{name: "last page cut", content: good[:len(good)-4096], want: recovered},
		{name: "zeroed page in the middle", content: zeroPage(good, 3), want: recovered},
		{name: "another application's database", content: sqliteFile(t, "CREATE TABLE notes (x)"), want: recovered},
		{name: "another application id", content: sqliteFile(t, "PRAGMA application_id = 42", "PRAGMA user_version = 1"), want: recovered},
		{name: "our id, missing column", content: sqliteFile(t,
			fmt.Sprintf("PRAGMA application_id = %d", applicationID), "PRAGMA user_version = 1",
			"CREATE TABLE calls (id INTEGER PRIMARY KEY)", "CREATE TABLE events (id INTEGER PRIMARY KEY)"), want: recovered},
		{name: "newer schema", content: sqliteFile(t,
			fmt.Sprintf("PRAGMA application_id = %d", applicationID), "PRAGMA user_version = 99",
			"CREATE TABLE calls2 (x)"), wantErr: ErrNewerSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := dbPath(t)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.wal != nil {
				os.WriteFile(path+"-wal", tt.wal, 0o600)
			}
			j, err := Open(ctx, path, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open = %v, want %v", err, tt.wantErr)
				}
				if b, _ := os.ReadFile(path); !bytes.Equal(b, tt.content) {
					t.Errorf("Open changed a file it refused")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open = %v, want a usable journal", err)
			}
			defer j.Close()
			rec := j.Recovered()
			switch {
			case tt.want == fresh && rec != nil:
				t.Errorf("Recovered() = %v, want nil", rec)
			case tt.want == recovered && rec == nil:
				t.Fatalf("Recovered() = nil, want the file moved aside")
			case tt.want == recovered:
				t.Log(rec)
				if !errors.Is(rec.Reason, ErrCorrupt) || rec.Path != path || !strings.HasPrefix(rec.MovedTo, path+".corrupt-") {
					t.Errorf("Recovered() = %+v", rec)
				}
				if b, err := os.ReadFile(rec.MovedTo); err != nil || !bytes.Equal(b, tt.content) {
					t.Errorf("the damaged file was not kept as it was at %s (%v)", rec.MovedTo, err)
				}
				if tt.wal != nil {
					// SQLite itself drops the WAL of a file that is not
					// a database; what matters is that it is not applied
					// to the new journal.
					if b, err := os.ReadFile(path + "-wal"); err == nil && bytes.Equal(b, tt.wal) {
						t.Errorf("the damaged file's WAL is still at %s-wal", path)
					}
				}
			}
			id := mustStart(t, j, call("/a.chat", "toolu_new"))
			if err := j.Finish(ctx, id, Outcome{Status: "ok"}); err != nil {
				t.Errorf("Finish in the new journal = %v", err)
			}
		})
	}
}

// zeroPage returns a copy of db with page n (1-based) zeroed.
func zeroPage(db []byte, n int) []byte {
	b := bytes.Clone(db)
	clear(b[(n-1)*4096 : n*4096])
	return b
}

func TestOpenDirectoryAtPath(t *testing.T) {
	path := dbPath(t)
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := Open(context.Background(), path, nil)
	if err == nil {
		j.Close()
		t.Fatal("Open(directory) = nil error")
	}
	t.Log(err)
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory at %s was touched: %v", path, err)
	}
}

func TestOpenNoPath(t *testing.T) {
	if _, err := Open(context.Background(), "", nil); err == nil {
		t.Error(`Open("") = nil error`)
	}
}

// TestMoveAsideOnlyTheDamagedFile: if another host already replaced the
// damaged file, moveAside leaves the new one alone.
func TestMoveAsideOnlyTheDamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	os.WriteFile(path, []byte("old"), 0o600)
	old, _ := os.Stat(path)
	os.Rename(path, path+".elsewhere")
	os.WriteFile(path, []byte("new"), 0o600)
	moved, err := moveAside(path, old, newFakeClock().Now())
	if moved != "" || err != nil {
		t.Errorf("moveAside(replaced file) = %q, %v, want nothing done", moved, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("the new file was moved")
	}
}

// TestDamageFoundLaterIsCheckedAtNextOpen: a damaged page that Open's cheap
// checks miss (a large file gets no quick_check) makes an operation fail with
// ErrCorrupt; the next Open checks the whole file and moves it aside.
func TestDamageFoundLaterIsCheckedAtNextOpen(t *testing.T) {
	defer func(old int64) { quickCheckMaxBytes = old }(quickCheckMaxBytes)
	quickCheckMaxBytes = 0 // every file counts as large
	ctx := context.Background()
	path := dbPath(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	good := goodJournal(t)
	os.WriteFile(path, zeroPage(good, len(good)/4096/2), 0o600) // a page of the calls table

	j, err := Open(ctx, path, nil)
	if err != nil || j.Recovered() != nil {
		t.Fatalf("Open = %v, %v; want the damage unnoticed", err, j.Recovered())
	}
	if err := j.Export(ctx, io.Discard, Filter{Results: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Export over a zeroed page = %v, want ErrCorrupt", err)
	}
	j.Close()
	if _, err := os.Stat(path + damagedSuffix); err != nil {
		t.Fatalf("no damage marker: %v", err)
	}
	j = openAt(t, path, nil)
	if j.Recovered() == nil {
		t.Fatal("Recovered() = nil after a damage marker, want the file moved aside")
	}
	if _, err := os.Stat(path + damagedSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the damage marker is still there: %v", err)
	}
	mustStart(t, j, call("/a.chat", "toolu_new"))
}
