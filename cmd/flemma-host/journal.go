package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/journal"
)

const journalUsage = `usage: flemma-host journal [--buffer PATH] [--since DURATION|RFC3339] [--limit N] [--results] [--text] [--db PATH]

Print flemma's tool journal, its audit log — every tool call (started,
finished, interrupted) with its arguments, and every decision by anyone
(policy, the user's approvals and rejections with their reason, resume,
discard, undo, trust) — as JSON lines on stdout, one object per line,
oldest first. Each object has "kind": "call" or "event". --buffer FILE
exports one conversation; --text writes a readable form instead.

The journal is opened read-only: nothing is created, changed or pruned.

Flags:
`

const journalUsageTail = `
The default database is the one the plugin uses, stdpath("state")/flemma/journal.db:
  $XDG_STATE_HOME/nvim/flemma/journal.db, or ~/.local/state/nvim/flemma/journal.db
  if XDG_STATE_HOME is not set ("nvim" is $NVIM_APPNAME when that is set).
Neovim 0.7 has no state directory; there the plugin uses stdpath("data"):
  $XDG_DATA_HOME/nvim/flemma/journal.db, or ~/.local/share/nvim/flemma/journal.db.
If the state-directory journal does not exist and that one does, it is used.
`

// journalMain runs `flemma-host journal ARGS` and returns the exit status.
func journalMain(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("flemma-host journal", flag.ContinueOnError)
	flags.SetOutput(stderr)
	buffer := flags.String("buffer", "", "only entries of this .chat `PATH` (resolved like the host does), or a key such as unnamed:PID:BUFNR")
	since := flags.String("since", "", "only entries at or after this time: a `DURATION` back from now (90m, 24h, 7d), an RFC 3339 time, or a date (2006-01-02)")
	limit := flags.Int("limit", 0, "only the newest `N` entries (0: all)")
	results := flags.Bool("results", false, "include the result text stored for each finished call")
	asText := flags.Bool("text", false, "a readable form instead of JSON lines (times in UTC)")
	dbPath := flags.String("db", "", "the journal database `PATH` (default: see below)")
	flags.Usage = func() {
		fmt.Fprint(stderr, journalUsage)
		flags.PrintDefaults()
		fmt.Fprint(stderr, journalUsageTail)
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "flemma-host journal: "+format+"\n", a...)
		return 1
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "flemma-host journal: unexpected argument %q\n", flags.Arg(0))
		flags.Usage()
		return 2
	}
	if *limit < 0 {
		return fail("--limit %d: want 0 or more", *limit)
	}
	f := journal.Filter{Limit: *limit, Results: *results, Text: *asText}
	var err error
	if f.Since, err = parseSince(*since, time.Now()); err != nil {
		return fail("%v", err)
	}
	if *buffer != "" {
		f.Buffer = *buffer
		if !strings.HasPrefix(f.Buffer, "unnamed:") {
			f.Buffer = journal.BufferKey(f.Buffer)
		}
	}
	path := *dbPath
	if path == "" {
		path = defaultJournalPath(os.Getenv, runtime.GOOS, fileExists)
	}
	ctx := context.Background()
	// A generous timeout: this is not a tool run, and the file is shared.
	j, err := journal.Open(ctx, path, &journal.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if errors.Is(err, fs.ErrNotExist) {
		return fail("no journal at %s (nothing journaled yet, or see --db)", path)
	}
	if err != nil {
		return fail("%v", err)
	}
	defer j.Close()
	if err := j.Export(ctx, stdout, f); err != nil {
		return fail("%v", err)
	}
	return 0
}

// parseSince reads --since: a duration back from now (Go syntax, plus whole
// or fractional days "7d"), an RFC 3339 time, or a local date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil && strings.HasSuffix(s, "d") {
		if days, derr := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64); derr == nil {
			d, err = time.Duration(days*24*float64(time.Hour)), nil
		}
	}
	if err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: want a duration back from now, not a negative one", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (90m, 24h, 7d), an RFC 3339 time or a date (2006-01-02)", s)
}

// defaultJournalPath is stdpath("state")/flemma/journal.db computed as Neovim
// computes it, falling back to stdpath("data") — where the plugin keeps it on
// Neovim 0.7, which has no state directory — if only that journal exists.
func defaultJournalPath(getenv func(string) string, goos string, exists func(string) bool) string {
	app := getenv("NVIM_APPNAME") // Neovim 0.9+
	if app == "" {
		app = "nvim"
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	dir := func(env, unixDefault string) string {
		if goos == "windows" {
			// Neovim on Windows keeps data and state in one "-data" directory.
			base := getenv(env)
			if base == "" {
				base = getenv("LOCALAPPDATA")
			}
			return filepath.Join(base, app+"-data")
		}
		if base := getenv(env); base != "" {
			return filepath.Join(base, app)
		}
		return filepath.Join(home, unixDefault, app)
	}
	state := filepath.Join(dir("XDG_STATE_HOME", filepath.Join(".local", "state")), "flemma", "journal.db")
	data := filepath.Join(dir("XDG_DATA_HOME", filepath.Join(".local", "share")), "flemma", "journal.db")
	if !exists(state) && exists(data) {
		return data
	}
	return state
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
