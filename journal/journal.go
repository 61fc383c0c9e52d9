// Package journal is flemma's crash-recovery journal and audit log: one SQLite
// database file, shared by every host (every Neovim instance) of a user, that
// records each tool call durably before it starts and each approval decision
// as it is made (SPEC §11, issue 12).
//
// The journal is an impure package: it touches the filesystem. It imports only
// the standard library and the pure-Go SQLite driver modernc.org/sqlite (no
// cgo).
//
// # Lifecycle (what the host calls, and when)
//
//  1. Open at startup with the database path (stdpath("state")/flemma/journal.db).
//     On error, warn once (the error says what happened) and run without a
//     journal; on success, log Recovered if it is not nil (a damaged file was
//     moved aside). Open prunes old entries cheaply.
//  2. Record every approval decision as it is made, including the user's own
//     edits of a status fence: Record(ctx, Event{...}).
//  3. Before a call runs: Started(ctx, buffer, callID, inputHash) — if it ever
//     started, never run it again silently. Then Start(ctx, Call{...}): when it
//     returns nil the row is on disk (committed and fsync'd); only then start
//     the tool. If Start fails (busy, corrupt, closed), warn and run the call
//     without the journal.
//  4. When the call ends: Finish(ctx, id, Outcome{...}) with the result text as
//     written to the buffer.
//  5. On the next press in a buffer: Unfinished(ctx, buffer) lists calls that
//     started and never finished (the host crashed). Offer resume or discard,
//     then Resolve(ctx, id, Resumed|Discarded, who). Latest(ctx, buffer,
//     callID) gives the recorded result to inject on resume.
//  6. :Flemma tool:log and `flemma-host journal`: Export(ctx, w, Filter{...}).
//  7. Close at exit.
//
// Every method is safe for concurrent use. The writes of a process go through
// one writer that commits them in batches (writer.go): 100 calls starting at
// once cost a few commits, not 100. A write waits while that writer gets
// through the writes queued before it (at most 30 s); it returns an error
// that matches ErrBusy when the writer made no progress for Options.Timeout
// (default 250 ms) — another host holding the database — or when its
// context ends before the writer took it. The commit itself (its fsync) is
// not cut short: a write that holds the lock is never interrupted, so an
// error always means that nothing was written.
package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"
)

// Defaults for Options and Retention.
const (
	// DefaultTimeout bounds how long a write waits for the database lock
	// (and for this process's writer to make progress).
	DefaultTimeout = 250 * time.Millisecond
	// DefaultReadTimeout bounds a read.
	DefaultReadTimeout = 5 * time.Second
	// DefaultMaxResultBytes bounds the result text stored per call (256 KiB).
	DefaultMaxResultBytes = 256 << 10
)

// Errors that callers can test for with errors.Is. Every error returned by
// this package starts with "journal: " and, where it matters, names the file.
var (
	// ErrBusy: another writer held the database longer than Options.Timeout.
	// The operation did not happen; the caller goes on without the journal.
	ErrBusy = errors.New("database busy")
	// ErrCorrupt: the file is damaged or is not a flemma journal.
	ErrCorrupt = errors.New("database damaged or not a flemma journal")
	// ErrReadOnly: the database file or its directory cannot be written.
	ErrReadOnly = errors.New("database is read-only")
	// ErrFull: the filesystem (or the database's size limit) is full.
	ErrFull = errors.New("no space left for the database")
	// ErrNewerSchema: the file was written by a newer flemma; it is left alone.
	ErrNewerSchema = errors.New("database was written by a newer flemma")
	// ErrNotFound: no such call, or not in the state the operation needs.
	ErrNotFound = errors.New("no such call")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal is closed")
)

// Options configure Open. The zero value (or a nil *Options) gives the
// defaults.
type Options struct {
	// Timeout bounds how long a write waits for the database without
	// progress: for this process's writer to commit something, and for
	// other processes' locks (SQLite's busy timeout). Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// ReadTimeout bounds a read (WAL readers never wait for a lock: only
	// for one of the four reader connections and the CPU, which 100 calls
	// starting at once on a loaded machine share). Zero means
	// DefaultReadTimeout. Export runs as long as its context allows.
	ReadTimeout time.Duration
	// MaxResultBytes bounds the result text stored per call; longer text is
	// cut at a UTF-8 boundary and the call is marked ResultTruncated. Zero
	// means DefaultMaxResultBytes.
	MaxResultBytes int
	// Retention is applied (a bounded amount of work) at Open, and by Prune
	// for the fields it leaves zero. Zero fields take the defaults of
	// DefaultRetention; negative fields disable a bound.
	Retention Retention
	// ReadOnly opens an existing journal for queries only: nothing is created,
	// migrated, pruned or moved aside (used by `flemma-host journal`).
	ReadOnly bool
	// Now and PID replace the clock and the process id (tests, golden files).
	Now func() time.Time
	PID int
}

// Recovery describes a damaged database that Open moved aside before it
// started a new one. The host should log it and mention it in :checkhealth.
type Recovery struct {
	Path    string // the journal path
	MovedTo string // where the damaged file is now
	Reason  error  // what was wrong (matches ErrCorrupt)
	// What the new journal no longer knows, as far as the damaged file
	// could still be read (-1: it could not be counted): the calls and
	// decisions of its history, and the calls in it that started and
	// never finished (interrupted), which a press would have held back.
	Calls, Events, Interrupted int
}

// String says what happened and what was lost, for the log, the user and
// :checkhealth.
func (r *Recovery) String() string {
	lost := "its history and any calls it recorded as interrupted are no longer known (the damaged file could not be counted)"
	if r.Calls >= 0 {
		lost = fmt.Sprintf("its history (%d calls, %d decisions) is no longer consulted", r.Calls, max(r.Events, 0))
		if r.Interrupted > 0 {
			lost += fmt.Sprintf(", and %d call(s) it recorded as interrupted will no longer be recognized: check before running them again", r.Interrupted)
		}
	}
	return fmt.Sprintf("journal: %s was unusable (%v); moved it to %s and started a new journal: %s", r.Path, r.Reason, r.MovedTo, lost)
}

// Journal is an open journal database. It is safe for concurrent use.
type Journal struct {
	path      string
	opts      Options
	pid       int
	w         *sql.DB // writer: one connection, so this process's writers queue in Go
	r         *sql.DB // readers: WAL lets them run beside the writer
	recovered *Recovery
	walDamage *WALDamage
	wr        writer // the one writer goroutine and its queue (writer.go)

	closeOnce sync.Once
	closeErr  error

	latestOnce sync.Once
	latest     *sql.Stmt // Latest's query (latestStmt)
}

// Path returns the database file's path.
func (j *Journal) Path() string { return j.path }

// Recovered reports the damaged file Open moved aside, or nil.
func (j *Journal) Recovered() *Recovery { return j.recovered }

// WALDamaged reports committed records of the write-ahead log that Open
// found unreadable (and the copy it kept), or nil.
func (j *Journal) WALDamaged() *WALDamage { return j.walDamage }

// Close closes the database. Calls in progress finish first; later calls
// return ErrClosed.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() {
		j.stopWriter()
		j.latestOnce.Do(func() {}) // none is prepared from now on
		if j.latest != nil {
			j.latest.Close()
		}
		j.closeErr = errors.Join(j.w.Close(), j.r.Close())
		if j.closeErr != nil {
			j.closeErr = fmt.Errorf("journal: close %s: %w", j.path, j.closeErr)
		}
	})
	return j.closeErr
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultTimeout
	}
	if v.ReadTimeout <= 0 {
		v.ReadTimeout = DefaultReadTimeout
	}
	if v.MaxResultBytes <= 0 {
		v.MaxResultBytes = DefaultMaxResultBytes
	}
	v.Retention = v.Retention.withDefaults()
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.PID == 0 {
		v.PID = os.Getpid()
	}
	return v
}

// dsn builds the driver's data source name. The path goes in a file: URI,
// escaped, so names with '?', '#' or '%' work. Every connection gets the
// busy timeout and synchronous=FULL: in WAL mode FULL syncs the WAL on every
// commit, which is what makes a returned Start durable.
func dsn(path string, timeout time.Duration, readOnly, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(timeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "synchronous(FULL)")
	if writer {
		// Take the write lock at BEGIN: a deferred transaction that reads
		// first and writes later can fail with SQLITE_BUSY_SNAPSHOT without
		// ever calling the busy handler.
		q.Set("_txlock", "immediate")
		// Truncate the WAL after checkpoints that find it bigger than this,
		// so a burst of large results does not leave a large file behind.
		q.Add("_pragma", "journal_size_limit(16777216)")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("mode", "rw") // never create: Open creates the file itself, 0600
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// sqlite result codes (primary codes; extended codes carry them in the low
// byte). They are part of SQLite's stable ABI.
const (
	codeBusy      = 5
	codeLocked    = 6
	codeReadOnly  = 8
	codeInterrupt = 9
	codeCorrupt   = 11
	codeFull      = 13
	codeNotADB    = 26
)

// sqliteCode returns the primary SQLite result code in err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// classify wraps err with the sentinel that describes it, keeping the
// driver's message for the log.
func classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, sql.ErrConnDone) || err.Error() == "sql: database is closed" || err.Error() == "sql: statement is closed":
		return fmt.Errorf("%w: %v", ErrClosed, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	}
	switch sqliteCode(err) {
	case codeBusy, codeLocked:
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case codeInterrupt: // only reads are interrupted, at the journal's deadline
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case codeCorrupt, codeNotADB:
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	case codeReadOnly:
		return fmt.Errorf("%w: %v", ErrReadOnly, err)
	case codeFull:
		return fmt.Errorf("%w: %v", ErrFull, err)
	}
	return err
}

// writeConn waits (at most the timeout, or the caller's deadline if sooner)
// for the writer connection and sets its busy timeout to the time that is
// left, so the whole wait — in-process queue plus SQLite's lock wait — stays
// within the bound. The returned context carries no deadline: a statement
// that has the lock is never interrupted, so a returned error always means the
// write did not happen (an interrupted COMMIT could otherwise be reported as
// failed after it was durable).
func (j *Journal) writeConn(ctx context.Context) (*sql.Conn, context.Context, error) {
	deadline := time.Now().Add(j.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := j.w.Conn(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("%w: waited %v for this process's other journal writes", ErrBusy, j.opts.Timeout)
		}
		return nil, nil, classify(err)
	}
	left := time.Until(deadline).Milliseconds()
	if left < 1 {
		conn.Close()
		return nil, nil, fmt.Errorf("%w: no time left to wait for the lock", ErrBusy)
	}
	bg := context.WithoutCancel(ctx)
	if _, err := conn.ExecContext(bg, "PRAGMA busy_timeout = "+strconv.FormatInt(left, 10)); err != nil {
		conn.Close()
		return nil, nil, classify(err)
	}
	return conn, bg, nil
}

// write runs fn in an immediate transaction on the writer connection,
// batched with the writes other goroutines asked for meanwhile (see
// writer.go). It returns once that transaction is committed and synced, or
// with an error when nothing of fn was written. fn may refuse with
// ErrNotFound only before it wrote anything.
func (j *Journal) write(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := j.enqueue(ctx, fn); err != nil {
		return fmt.Errorf("journal: %s: %w", op, err)
	}
	return nil
}

// noteDamage leaves a marker beside the database when err says a page is
// damaged, so the next Open checks the whole file and moves it aside if need
// be (a file in use by other hosts is not moved under them).
func (j *Journal) noteDamage(err error) error {
	if errors.Is(err, ErrCorrupt) && !j.opts.ReadOnly {
		if f, ferr := os.OpenFile(j.path+damagedSuffix, os.O_CREATE|os.O_WRONLY, 0o600); ferr == nil {
			f.Close()
		}
	}
	return err
}

// readCtx bounds a read by the read timeout.
func (j *Journal) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, j.opts.ReadTimeout)
}

// readErr turns a read error into one the caller can classify: the caller's
// own cancellation stays a context error, the journal's deadline is ErrBusy.
func (j *Journal) readErr(parent context.Context, op string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("journal: %s: %w", op, parent.Err())
	}
	return fmt.Errorf("journal: %s: %w", op, j.noteDamage(classify(err)))
}

// now returns the journal clock in Unix microseconds, the unit of every time
// column.
func (j *Journal) now() int64 { return j.opts.Now().UnixMicro() }

// Check reports whether the journal can be written now (it takes and
// releases the write lock, within Options.Timeout) and whether every page is
// sound (SQLite's quick_check, which reads the whole file: about 1 ms per
// MB). For :checkhealth.
func (j *Journal) Check(ctx context.Context) error {
	if err := j.write(ctx, "check", func(context.Context, *sql.Tx) error { return nil }); err != nil {
		return err
	}
	var res string
	if err := j.r.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
		return j.readErr(ctx, "check", err)
	}
	if res != "ok" {
		return fmt.Errorf("journal: check: %w", j.noteDamage(fmt.Errorf("%w: quick_check: %s", ErrCorrupt, res)))
	}
	return nil
}
