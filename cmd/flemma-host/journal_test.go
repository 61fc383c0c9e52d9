package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/journal"
)

// fillJournal writes two calls and two decisions, in two buffers, to a new
// journal at path.
func fillJournal(t *testing.T, path, chat string) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, b := range []string{chat, "unnamed:1:2"} {
		if err := j.Record(ctx, journal.Event{Buffer: b, CallID: "toolu_1", Tool: "bash", Decision: "approve", DecidedBy: "user"}); err != nil {
			t.Fatal(err)
		}
		id, err := j.Start(ctx, journal.Call{Buffer: b, CallID: "toolu_1", Tool: "bash", InputHash: "h", Decision: "approve", DecidedBy: "user"})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(ctx, id, journal.Outcome{Status: "ok", Result: "done"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJournalCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "journal.db")
	chat := filepath.Join(dir, "a.chat")
	os.WriteFile(chat, nil, 0o600)
	os.Symlink(chat, filepath.Join(dir, "link.chat"))
	fillJournal(t, db, journal.BufferKey(chat))

	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantLines int
		wantOut   []string // substrings of stdout
		wantErr   string   // substring of stderr
	}{
		{name: "all", args: []string{"--db", db}, wantLines: 4},
		{name: "buffer by path", args: []string{"--db", db, "--buffer", chat}, wantLines: 2, wantOut: []string{`"buffer":"` + journal.BufferKey(chat) + `"`}},
		{name: "buffer through a link", args: []string{"--db", db, "--buffer", filepath.Join(dir, "link.chat")}, wantLines: 2},
		{name: "unnamed buffer", args: []string{"--db", db, "--buffer", "unnamed:1:2"}, wantLines: 2, wantOut: []string{`"buffer":"unnamed:1:2"`}},
		{name: "limit", args: []string{"--db", db, "--limit", "1"}, wantLines: 1, wantOut: []string{`"kind":"call"`, `"buffer":"unnamed:1:2"`}},
		{name: "since a duration", args: []string{"--db", db, "--since", "1h"}, wantLines: 4},
		{name: "since days", args: []string{"--db", db, "--since", "2d"}, wantLines: 4},
		{name: "since the future", args: []string{"--db", db, "--since", time.Now().Add(time.Hour).Format(time.RFC3339)}, wantLines: 0},
		{name: "results", args: []string{"--db", db, "--results", "--limit", "1"}, wantLines: 1, wantOut: []string{`"result":"done"`}},
		{name: "help", args: []string{"-h"}, wantErr: "~/.local/state/nvim/flemma/journal.db"},
		{name: "help names the 0.7 path", args: []string{"--help"}, wantErr: "~/.local/share/nvim/flemma/journal.db"},
		{name: "bad since", args: []string{"--db", db, "--since", "yesterday"}, wantCode: 1, wantErr: `--since "yesterday"`},
		{name: "bad limit", args: []string{"--db", db, "--limit", "-3"}, wantCode: 1, wantErr: "--limit"},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: 2, wantErr: "flag provided but not defined"},
		{name: "extra argument", args: []string{"--db", db, "extra"}, wantCode: 2, wantErr: `unexpected argument "extra"`},
		{name: "no journal", args: []string{"--db", filepath.Join(dir, "none.db")}, wantCode: 1, wantErr: "no journal at"},
		{name: "not a journal", args: []string{"--db", chat}, wantCode: 1, wantErr: "journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := journalMain(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("journal %v = %d, want %d; stderr:\n%s", tt.args, code, tt.wantCode, stderr.String())
			}
			out := stdout.String()
			lines := strings.Count(out, "\n")
			if lines != tt.wantLines {
				t.Errorf("journal %v printed %d lines, want %d:\n%s", tt.args, lines, tt.wantLines, out)
			}
			for _, l := range strings.SplitAfter(out, "\n") {
				if l != "" && !json.Valid([]byte(l)) {
					t.Errorf("line %q is not JSON", l)
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("journal %v: stdout has no %s:\n%s", tt.args, w, out)
				}
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("journal %v: stderr has no %q:\n%s", tt.args, tt.wantErr, stderr.String())
			}
		})
	}
	// Nothing was created or changed by the read-only command.
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("the command created a database: %v", err)
	}
}

func TestDefaultJournalPath(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		goos   string
		exists []string
		want   string
	}{
		{"defaults", map[string]string{"HOME": "/h"}, "linux", nil, "/h/.local/state/nvim/flemma/journal.db"},
		{"XDG_STATE_HOME", map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s"}, "linux", nil, "/s/nvim/flemma/journal.db"},
		{"NVIM_APPNAME", map[string]string{"HOME": "/h", "NVIM_APPNAME": "lazyvim"}, "linux", nil, "/h/.local/state/lazyvim/flemma/journal.db"},
		{"0.7: only the data journal exists", map[string]string{"HOME": "/h"}, "linux",
			[]string{"/h/.local/share/nvim/flemma/journal.db"}, "/h/.local/share/nvim/flemma/journal.db"},
		{"0.7 with XDG_DATA_HOME", map[string]string{"HOME": "/h", "XDG_DATA_HOME": "/d"}, "linux",
			[]string{"/d/nvim/flemma/journal.db"}, "/d/nvim/flemma/journal.db"},
		{"both exist: state wins", map[string]string{"HOME": "/h"}, "darwin",
			[]string{"/h/.local/share/nvim/flemma/journal.db", "/h/.local/state/nvim/flemma/journal.db"}, "/h/.local/state/nvim/flemma/journal.db"},
		{"windows", map[string]string{"LOCALAPPDATA": "/L"}, "windows", nil, filepath.Join("/L", "nvim-data", "flemma", "journal.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exists := func(p string) bool {
				for _, e := range tt.exists {
					if filepath.FromSlash(e) == p {
						return true
					}
				}
				return false
			}
			got := defaultJournalPath(func(k string) string { return tt.env[k] }, tt.goos, exists)
			if got != filepath.FromSlash(tt.want) {
				t.Errorf("defaultJournalPath(%v, %s) = %q, want %q", tt.env, tt.goos, got, tt.want)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "", want: time.Time{}},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "1.5d", want: now.Add(-36 * time.Hour)},
		{in: "2025-03-01T08:00:00Z", want: time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)},
		{in: "2025-03-01", want: time.Date(2025, 3, 1, 0, 0, 0, 0, time.Local)},
		{in: "-1h", err: true},
		{in: "yesterday", err: true},
		{in: "d", err: true},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in, now)
		if (err != nil) != tt.err || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v, want %v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
