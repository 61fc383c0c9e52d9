package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// applicationID marks the file as a flemma journal ("flem"), so Open can tell
// its own database from any other SQLite file left at the path.
const applicationID = 0x666c656d

// migrations[i] brings the schema from version i to version i+1; the schema
// version is stored in PRAGMA user_version. Append, never edit.
//
// Times are Unix microseconds (INTEGER). A call is unfinished while
// finished_at is NULL, and unresolved while resolution is NULL.
var migrations = []string{
	`PRAGMA application_id = ` + strconv.Itoa(applicationID) + `;
CREATE TABLE calls (
	id               INTEGER PRIMARY KEY,
	buffer           TEXT    NOT NULL,
	call_id          TEXT    NOT NULL,
	tool             TEXT    NOT NULL,
	input_hash       TEXT    NOT NULL,
	decision         TEXT    NOT NULL,
	decided_by       TEXT    NOT NULL,
	pid              INTEGER NOT NULL,
	started_at       INTEGER NOT NULL,
	finished_at      INTEGER,
	status           TEXT,
	is_error         INTEGER,
	duration_us      INTEGER,
	output_bytes     INTEGER,
	result           TEXT,
	result_truncated INTEGER NOT NULL DEFAULT 0,
	resolution       TEXT,
	resolved_at      INTEGER,
	resolved_by      TEXT
);
CREATE INDEX calls_by_call ON calls (buffer, call_id);
CREATE INDEX calls_open ON calls (buffer) WHERE finished_at IS NULL AND resolution IS NULL;
CREATE INDEX calls_by_time ON calls (started_at);
CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	time       INTEGER NOT NULL,
	buffer     TEXT    NOT NULL,
	call_id    TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	input_hash TEXT    NOT NULL,
	decision   TEXT    NOT NULL,
	decided_by TEXT    NOT NULL,
	pid        INTEGER NOT NULL
);
CREATE INDEX events_by_buffer ON events (buffer, time);
CREATE INDEX events_by_time ON events (time);`,
	// 2: the files a call changed, as JSON (for :Flemma tool:undo).
	`ALTER TABLE calls ADD COLUMN changes TEXT;`,
	// 3: why a call failed (the executor's error kind: ToolValidationError,
	// ToolError, Timeout, Canceled, InternalError).
	`ALTER TABLE calls ADD COLUMN error_kind TEXT;`,
	// 4: the audit log's arguments (issue 28 item 3): a call's input
	// (redacted by the caller, at most MaxInputBytes) and its whole size;
	// an event's input and its detail (a rejection's reason, …).
	`ALTER TABLE calls ADD COLUMN input TEXT;
ALTER TABLE calls ADD COLUMN input_bytes INTEGER;
ALTER TABLE events ADD COLUMN input TEXT;
ALTER TABLE events ADD COLUMN detail TEXT;`,
}

// schemaVersion is the schema version this package writes: len(migrations)
// (a test checks it).
const schemaVersion = 4

// probes read one row of each table naming every column: cheap (the
// rightmost leaf of each b-tree), and they fail if a column is missing or the
// pages on the way are damaged.
//
// probesFor returns them for a schema version: a file of an older version
// is checked against its own schema before it is migrated (or touched).
func probesFor(version int) []string {
	calls, events := callColumns, eventColumns
	if version < 4 {
		calls = strings.TrimSuffix(calls, ", input, input_bytes")
		events = strings.TrimSuffix(events, ", input, detail")
	}
	if version < 3 {
		calls = strings.TrimSuffix(calls, ", error_kind")
	}
	if version < 2 {
		calls = strings.TrimSuffix(calls, ", changes")
	}
	return []string{
		`SELECT ` + calls + ` FROM calls ORDER BY id DESC LIMIT 1`,
		`SELECT ` + events + ` FROM events ORDER BY id DESC LIMIT 1`,
	}
}

// openPruneBatches bounds the pruning Open does: each batch is one short
// transaction of at most pruneBatch rows.
const openPruneBatches = 4

// Open opens (creating if needed) the journal at path. The directory is
// created 0700 and the file 0600.
//
// A file that is damaged or is not a flemma journal (not SQLite, truncated,
// another application's database) is renamed to
// "<path>.corrupt-<UTC time>" and a new journal is started; Recovered then
// says so. A file written by a newer flemma (ErrNewerSchema), a read-only file
// (ErrReadOnly), a directory at path, or a database another process holds
// locked past the timeout (ErrBusy) is left alone and Open returns an error:
// the caller warns and goes on without a journal.
func Open(ctx context.Context, path string, opts *Options) (*Journal, error) {
	o := opts.withDefaults()
	if path == "" {
		return nil, errors.New("journal: no database path given")
	}
	if o.ReadOnly {
		return openReadOnly(ctx, path, o)
	}
	fi, err := prepareFile(path)
	if err != nil {
		return nil, err
	}
	j, err := openDB(ctx, path, o)
	if errors.Is(err, ErrCorrupt) {
		reason := err
		movedTo, merr := moveAside(path, fi, o.Now())
		if merr != nil {
			return nil, fmt.Errorf("journal: %s: %w (moving it aside failed: %v)", path, reason, merr)
		}
		// Reported at once, before anything slow: a host killed from here
		// on leaves the news to the next (the counts follow).
		var rec *Recovery
		var first Report
		if movedTo != "" {
			rec = &Recovery{Path: path, MovedTo: movedTo, Reason: reason, Calls: -1, Events: -1, Interrupted: -1}
			first = Report{Kind: "moved-aside", Text: rec.String()}
			addReport(path, first)
		}
		if _, err := prepareFile(path); err != nil {
			return nil, err
		}
		j, err = openDB(ctx, path, o)
		if err != nil {
			return nil, fmt.Errorf("journal: %s: %w (after moving a damaged file to %s)", path, err, movedTo)
		}
		if rec != nil {
			rec.Calls, rec.Events, rec.Interrupted = countDamaged(ctx, movedTo)
			replaceReport(path, first, Report{Kind: "moved-aside", Text: rec.String()})
			j.recovered = rec
		}
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	// Cheap, bounded pruning; a busy database just postpones it.
	_, _ = j.prune(ctx, o.Retention, openPruneBatches)
	return j, nil
}

// countDamaged counts, as far as it can still be read, what a damaged
// journal held: calls, events, and calls that never finished nor were
// resolved. -1 for what cannot be counted.
func countDamaged(ctx context.Context, path string) (calls, events, interrupted int) {
	calls, events, interrupted = -1, -1, -1
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	count := func(q string) int {
		var n int
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	calls = count("SELECT count(*) FROM calls")
	events = count("SELECT count(*) FROM events")
	interrupted = count("SELECT count(*) FROM calls WHERE finished_at IS NULL AND resolution IS NULL")
	return
}

// prepareFile creates the directory (0700) and an empty file (0600) if they
// do not exist, so SQLite — which would create it 0644 — never does; the WAL
// and shared-memory files copy the database file's mode.
func prepareFile(path string) (fs.FileInfo, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal: create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("journal: create %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("journal: %s is not a regular file (%v); remove it or choose another path", path, fi.Mode().Type())
	}
	// SQLite would open a file it cannot write read-only, and the first
	// write would fail; say so now.
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("journal: %s: %w: %v", path, ErrReadOnly, err)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	f.Close()
	return fi, nil
}

// moveAside renames a damaged database (and its WAL) out of the way. If the
// file at path is no longer the one that was found damaged (another host got
// there first and started a new journal), it does nothing and returns "".
func moveAside(path string, damaged fs.FileInfo, now time.Time) (string, error) {
	cur, err := os.Stat(path)
	if err != nil || !os.SameFile(cur, damaged) {
		return "", nil
	}
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	dst := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = base + "-" + strconv.Itoa(i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", err
	}
	// The WAL belongs to the damaged file: keep it beside it. The
	// shared-memory index is derived data; SQLite rebuilds it.
	if _, err := os.Lstat(path + "-wal"); err == nil {
		_ = os.Rename(path+"-wal", dst+"-wal")
	}
	_ = os.Remove(path + "-shm")
	return dst, nil
}

func openPools(path string, o Options, readOnly bool) *Journal {
	w, _ := sql.Open("sqlite", dsn(path, o.Timeout, readOnly, true))
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	r, _ := sql.Open("sqlite", dsn(path, o.Timeout, readOnly, false))
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(2)
	j := &Journal{path: path, opts: o, pid: o.PID, w: w, r: r}
	j.startWriter()
	return j
}

// openDB opens the pools, switches the file to WAL, and creates or migrates
// the schema.
func openDB(ctx context.Context, path string, o Options) (*Journal, error) {
	j := openPools(path, o, false)
	if err := j.setup(ctx); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) setup(ctx context.Context) error {
	conn, bg, err := j.writeConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Identify the file before changing anything in it: switching a foreign
	// or newer file to WAL would already rewrite its header.
	version, err := identifyVersion(bg, conn)
	if err != nil {
		return err
	}
	if version > 0 {
		if err := runProbes(bg, conn, version); err != nil {
			return err
		}
	}
	if err := j.quickCheck(bg, conn); err != nil {
		return err
	}
	var mode string
	if err := conn.QueryRowContext(bg, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return classify(err)
	}
	if mode != "wal" {
		// SQLite answers with the old mode when it cannot switch, for
		// instance on a read-only file.
		if err := probeWritable(bg, conn); err != nil {
			return err
		}
		return fmt.Errorf("cannot switch to WAL mode (still %q)", mode)
	}
	tx, err := conn.BeginTx(bg, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	// Under the write lock nobody appends to the WAL: see whether SQLite
	// will read all of it before the next write starts it over.
	if j.walDamage = checkWAL(j.path, j.opts.Now); j.walDamage != nil {
		addReport(j.path, Report{Kind: "wal", Text: j.walDamage.String()})
	}
	// Again, under the write lock: another host may have created the schema
	// meanwhile.
	version, err = identifyVersion(bg, tx)
	if err != nil {
		return err
	}
	for v := version; v < schemaVersion; v++ {
		if _, err := tx.ExecContext(bg, migrations[v]); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, classify(err))
		}
	}
	if version != schemaVersion {
		if _, err := tx.ExecContext(bg, "PRAGMA user_version = "+strconv.Itoa(schemaVersion)); err != nil {
			return classify(err)
		}
	}
	if err := runProbes(bg, tx, schemaVersion); err != nil {
		return err
	}
	if err := classify(tx.Commit()); err != nil {
		return err
	}
	_ = os.Remove(j.path + damagedSuffix)
	return nil
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// identifyVersion tells a new file, a flemma journal (its schema version) and
// anything else apart.
func identifyVersion(ctx context.Context, q rowQuerier) (int, error) {
	var appID, version, objects int
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, classify(err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, classify(err)
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").Scan(&objects); err != nil {
		return 0, classify(err)
	}
	switch {
	case appID == 0 && version == 0 && objects == 0:
		return 0, nil // a new file
	case appID != applicationID:
		return 0, fmt.Errorf("%w: application_id %#x, not a flemma journal", ErrCorrupt, appID)
	case version > schemaVersion:
		return 0, fmt.Errorf("%w (schema version %d, this flemma knows %d); leaving it alone", ErrNewerSchema, version, schemaVersion)
	case version < 0:
		return 0, fmt.Errorf("%w: schema version %d", ErrCorrupt, version)
	}
	return version, nil
}

// quickCheck runs SQLite's quick_check (every page, not the index contents)
// when it is cheap — a small file, a few milliseconds — or when a damaged
// page was met since the last check (the marker file): Open's probes only read
// the newest pages.
func (j *Journal) quickCheck(ctx context.Context, q rowQuerier) error {
	fi, err := os.Stat(j.path)
	if err != nil {
		return err
	}
	_, merr := os.Stat(j.path + damagedSuffix)
	if fi.Size() > quickCheckMaxBytes && merr != nil {
		return nil
	}
	var res string
	if err := q.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
		return classify(err)
	}
	if res != "ok" {
		return fmt.Errorf("%w: quick_check: %s", ErrCorrupt, res)
	}
	return nil
}

// quickCheckMaxBytes: files up to this size get a quick_check at every Open
// (8 MiB: a few milliseconds; a 237 MB journal took 236 ms).
var quickCheckMaxBytes int64 = 8 << 20

// damagedSuffix names the marker file written when an operation meets a
// damaged page, so the next Open checks the whole file.
const damagedSuffix = ".damaged"

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func runProbes(ctx context.Context, q querier, version int) error {
	for _, p := range probesFor(version) {
		rows, err := q.QueryContext(ctx, p)
		if err == nil {
			for rows.Next() {
			}
			err = errors.Join(rows.Err(), rows.Close())
		}
		if err != nil {
			err = classify(err)
			if sqliteCode(err) != 0 && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrReadOnly) {
				// "no such table/column": a schema this package did not write.
				return fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			return err
		}
	}
	return nil
}

// probeWritable takes and releases the write lock to tell a read-only file
// from other reasons WAL mode was refused.
func probeWritable(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE; CREATE TABLE flemma_probe (x); ROLLBACK"); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return classify(err)
	}
	return nil
}

// openReadOnly opens an existing journal for queries only.
func openReadOnly(ctx context.Context, path string, o Options) (*Journal, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("journal: %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	j := openPools(path, o, true)
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	version, err := identifyVersion(rctx, j.r)
	switch {
	case err != nil && ctx.Err() != nil:
		err = fmt.Errorf("journal: %s: %w", path, ctx.Err())
	case err != nil:
		err = fmt.Errorf("journal: %s: %w", path, err)
	case version < schemaVersion:
		err = fmt.Errorf("journal: %s: schema version %d is older than %d; let a flemma host open it once to upgrade it", path, version, schemaVersion)
	default:
		if perr := runProbes(rctx, j.r, schemaVersion); perr != nil {
			err = fmt.Errorf("journal: %s: %w", path, perr)
		}
	}
	if err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}
