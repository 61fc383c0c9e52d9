package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ID identifies one journaled run of a call (a row). A call that is resumed
// and run again gets a new ID.
type ID int64

// Call is one run of a tool call: the fields the caller gives to Start, and
// those Finish and Resolve fill in.
type Call struct {
	ID ID
	// Buffer is the buffer key: the .chat file's resolved path (see
	// BufferKey), or for an unnamed buffer a key the caller makes up, such as
	// "unnamed:<pid>:<bufnr>".
	Buffer string
	// CallID is the tool-use id from the buffer (toolu_01…).
	CallID string
	// Tool is the tool's name.
	Tool string
	// InputHash identifies the input (see HashInput).
	InputHash string
	// Input is the call's arguments as the caller gives them to Start
	// (redacted by the caller), at most MaxInputBytes of them; InputBytes
	// is their whole size ("" and 0 for a call recorded before schema 4).
	Input      string
	InputBytes int64
	// Decision is the approval decision ("approve", …) and DecidedBy who or
	// what made it ("urn:flemma:approval:config ($default)", "user", …), in
	// the caller's words.
	Decision  string
	DecidedBy string
	// PID is the process that started the call (set by Start).
	PID int
	// StartedAt is set by Start.
	StartedAt time.Time

	// FinishedAt is zero while the call is unfinished.
	FinishedAt time.Time
	// Status is the caller's word for how it ended: ok, error, canceled,
	// timeout, ….
	Status  string
	IsError bool
	// Duration is the run time the caller measured (or, if it gave none,
	// the time from Start to Finish).
	Duration time.Duration
	// OutputBytes is the size of the tool's whole output.
	OutputBytes int64
	// Result is the result text as written to the buffer, at most
	// Options.MaxResultBytes of it; ResultTruncated says it was cut.
	Result          string
	ResultTruncated bool
	// Changes are the files the call changed, as the caller recorded them
	// (Outcome.Changes).
	Changes string
	// ErrorKind says why a call failed (Outcome.ErrorKind); "" when it
	// did not, or when it was recorded before schema version 3.
	ErrorKind string

	// Resolution is set when an unfinished call (after a crash) was dealt
	// with: Resumed or Discarded, at ResolvedAt, by ResolvedBy.
	Resolution Resolution
	ResolvedAt time.Time
	ResolvedBy string
}

// Finished reports whether Finish was recorded for the call.
func (c Call) Finished() bool { return !c.FinishedAt.IsZero() }

// Outcome is what Finish records.
type Outcome struct {
	Status  string
	IsError bool
	// Duration: zero means the time since Start.
	Duration time.Duration
	// OutputBytes: zero means len(Result).
	OutputBytes int64
	// Result is the text written to the buffer; the journal keeps at most
	// Options.MaxResultBytes of it.
	Result string
	// Changes describe the files the call changed (the caller's JSON, for
	// undoing them); "" for none.
	Changes string
	// ErrorKind is the kind of failure of an error result:
	// "ToolValidationError", "ToolError", "Timeout", "Canceled",
	// "InternalError"; "" for a success.
	ErrorKind string
}

// Resolution is how an unfinished call was dealt with.
type Resolution string

// Resolutions.
const (
	// Resumed: the user chose to run the call again (it gets a new row).
	Resumed Resolution = "resumed"
	// Discarded: the user chose to write an "interrupted" error result.
	Discarded Resolution = "discarded"
)

// callColumns lists the calls columns in scanCall's order.
const callColumns = `id, buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at,
	finished_at, status, is_error, duration_us, output_bytes, result, result_truncated,
	resolution, resolved_at, resolved_by, changes, error_kind, input, input_bytes`

type scanner interface{ Scan(dest ...any) error }

func scanCall(s scanner) (Call, error) {
	var (
		c                                 Call
		started                           int64
		finished, dur, outBytes, resolved sql.NullInt64
		isErr                             sql.NullBool
		status, result, res, resBy        sql.NullString
		changes, kind, input              sql.NullString
		inBytes                           sql.NullInt64
	)
	err := s.Scan(&c.ID, &c.Buffer, &c.CallID, &c.Tool, &c.InputHash, &c.Decision, &c.DecidedBy, &c.PID, &started,
		&finished, &status, &isErr, &dur, &outBytes, &result, &c.ResultTruncated,
		&res, &resolved, &resBy, &changes, &kind, &input, &inBytes)
	if err != nil {
		return Call{}, err
	}
	c.StartedAt = time.UnixMicro(started)
	if finished.Valid {
		c.FinishedAt = time.UnixMicro(finished.Int64)
	}
	c.Status, c.IsError, c.Result, c.Changes, c.ErrorKind = status.String, isErr.Bool, result.String, changes.String, kind.String
	c.Input, c.InputBytes = input.String, inBytes.Int64
	c.Duration = time.Duration(dur.Int64) * time.Microsecond
	c.OutputBytes = outBytes.Int64
	c.Resolution, c.ResolvedBy = Resolution(res.String), resBy.String
	if resolved.Valid {
		c.ResolvedAt = time.UnixMicro(resolved.Int64)
	}
	return c, nil
}

// Start records that a call is about to run and returns its ID. When Start
// returns nil the row is committed and the WAL is fsync'd (synchronous=FULL):
// it survives a crash of the host, of Neovim, or of the machine. Run the tool
// only after Start returns; if it returns an error, nothing was recorded.
//
// Start uses Buffer, CallID, Tool, InputHash, Input, Decision and DecidedBy
// of c (Input is kept up to MaxInputBytes, with its whole size); Buffer,
// CallID and Tool must not be empty.
func (j *Journal) Start(ctx context.Context, c Call) (ID, error) {
	if c.Buffer == "" || c.CallID == "" || c.Tool == "" {
		return 0, fmt.Errorf("journal: start: buffer, call id and tool are required (got %q, %q, %q)", c.Buffer, c.CallID, c.Tool)
	}
	var id ID
	input, inBytes := boundInput(c.Input)
	err := j.write(ctx, "start "+c.CallID, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO calls
			(buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at, input, input_bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.Buffer, c.CallID, c.Tool, c.InputHash, c.Decision, c.DecidedBy, j.pid, j.now(), input, inBytes)
		if err != nil {
			return err
		}
		n, err := res.LastInsertId()
		id = ID(n)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Finish records how the call id ended. It returns an error matching
// ErrNotFound if there is no such call or it was already finished.
func (j *Journal) Finish(ctx context.Context, id ID, o Outcome) error {
	result, truncated := truncateUTF8(o.Result, j.opts.MaxResultBytes)
	outBytes := o.OutputBytes
	if outBytes == 0 {
		outBytes = int64(len(o.Result))
	}
	var dur sql.NullInt64
	if o.Duration > 0 {
		dur = sql.NullInt64{Int64: o.Duration.Microseconds(), Valid: true}
	}
	now := j.now()
	return j.write(ctx, fmt.Sprintf("finish call %d", id), func(ctx context.Context, tx *sql.Tx) error {
		var changes, kind sql.NullString
		if o.Changes != "" {
			changes = sql.NullString{String: o.Changes, Valid: true}
		}
		if o.ErrorKind != "" {
			kind = sql.NullString{String: o.ErrorKind, Valid: true}
		}
		res, err := tx.ExecContext(ctx, `UPDATE calls SET
			finished_at = ?, status = ?, is_error = ?, duration_us = coalesce(?, ? - started_at),
			output_bytes = ?, result = ?, result_truncated = ?, changes = ?, error_kind = ?
			WHERE id = ? AND finished_at IS NULL`,
			now, o.Status, o.IsError, dur, now, outBytes, result, truncated, changes, kind, int64(id))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return fmt.Errorf("%w: call %d is not journaled or already finished", ErrNotFound, id)
	})
}

// Resolve marks the unfinished call id as dealt with (Resumed or Discarded)
// and records the decision, made by by (for instance "user"), in the audit
// log. It returns an error matching ErrNotFound if the call is not both
// unfinished and unresolved.
func (j *Journal) Resolve(ctx context.Context, id ID, r Resolution, by string) error {
	if r != Resumed && r != Discarded {
		return fmt.Errorf("journal: resolve call %d: unknown resolution %q (want %q or %q)", id, r, Resumed, Discarded)
	}
	now := j.now()
	return j.write(ctx, fmt.Sprintf("resolve call %d", id), func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE calls SET resolution = ?, resolved_at = ?, resolved_by = ?
			WHERE id = ? AND finished_at IS NULL AND resolution IS NULL`, string(r), now, by, int64(id))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err == nil {
				err = fmt.Errorf("%w: call %d is not journaled, or finished, or already resolved", ErrNotFound, id)
			}
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO events (time, buffer, call_id, tool, input_hash, decision, decided_by, pid, input)
			SELECT ?, buffer, call_id, tool, input_hash, ?, ?, ?, input FROM calls WHERE id = ?`,
			now, string(r), by, j.pid, int64(id))
		return err
	})
}

// Unfinished returns the calls of buffer that started and never finished and
// were not resolved, oldest first. After a crash these are the calls that may
// have partly run. The list also holds calls that are still running — in
// this host or in another live one (compare PID and the host's own running
// calls).
func (j *Journal) Unfinished(ctx context.Context, buffer string) ([]Call, error) {
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	rows, err := j.r.QueryContext(rctx, `SELECT `+callColumns+` FROM calls
		WHERE buffer = ? AND finished_at IS NULL AND resolution IS NULL ORDER BY id`, buffer)
	if err != nil {
		return nil, j.readErr(ctx, "unfinished calls", err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, j.readErr(ctx, "unfinished calls", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, j.readErr(ctx, "unfinished calls", err)
	}
	return out, nil
}

// LatestOf is Latest for several calls of a buffer in one query (a press
// looks up every call without a result): the most recent run of each id
// that was journaled; ids never journaled (or pruned) are not in the map.
func (j *Journal) LatestOf(ctx context.Context, buffer string, ids []string) (map[string]Call, error) {
	out := make(map[string]Call, len(ids))
	const chunk = 500 // well under SQLite's limit of bound parameters
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		part := ids[:n]
		ids = ids[n:]
		if len(part) == 1 {
			c, ok, err := j.Latest(ctx, buffer, part[0])
			if err != nil {
				return nil, err
			}
			if ok {
				out[part[0]] = c
			}
			continue
		}
		args := make([]any, 0, len(part)+1)
		args = append(args, buffer)
		for _, id := range part {
			args = append(args, id)
		}
		q := `SELECT ` + callColumns + ` FROM calls WHERE buffer = ? AND call_id IN (?` +
			strings.Repeat(", ?", len(part)-1) + `) ORDER BY id DESC`
		if err := j.latestOf(ctx, q, args, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (j *Journal) latestOf(ctx context.Context, q string, args []any, out map[string]Call) error {
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	rows, err := j.r.QueryContext(rctx, q, args...)
	if err != nil {
		return j.readErr(ctx, "latest calls", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return j.readErr(ctx, "latest calls", err)
		}
		if _, seen := out[c.CallID]; !seen { // the rows come newest first
			out[c.CallID] = c
		}
	}
	if err := rows.Err(); err != nil {
		return j.readErr(ctx, "latest calls", err)
	}
	return nil
}

const latestQuery = `SELECT ` + callColumns + ` FROM calls
		WHERE buffer = ? AND call_id = ? ORDER BY id DESC LIMIT 1`

// latestStmt is Latest's query, prepared once (a press looks up each call
// of the buffer without a result: SQLite compiling the query each time was
// most of it), or nil when it cannot be prepared (Latest then runs the
// query as such).
func (j *Journal) latestStmt() *sql.Stmt {
	j.latestOnce.Do(func() {
		st, err := j.r.Prepare(latestQuery)
		if err == nil {
			j.latest = st
		}
	})
	return j.latest
}

// Latest returns the most recent run of (buffer, callID); ok is false if it
// was never journaled (or was pruned).
func (j *Journal) Latest(ctx context.Context, buffer, callID string) (c Call, ok bool, err error) {
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	var row *sql.Row
	if st := j.latestStmt(); st != nil {
		row = st.QueryRowContext(rctx, buffer, callID)
	} else {
		row = j.r.QueryRowContext(rctx, latestQuery, buffer, callID)
	}
	c, err = scanCall(row)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Call{}, false, nil
	case err != nil:
		return Call{}, false, j.readErr(ctx, "latest call", err)
	}
	return c, true, nil
}

// Started reports whether the call (buffer, callID) with this input ever
// started, finished or not. Ask before every run: a call that started must not
// run again without the user's word.
func (j *Journal) Started(ctx context.Context, buffer, callID, inputHash string) (bool, error) {
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	var one int
	err := j.r.QueryRowContext(rctx, `SELECT 1 FROM calls
		WHERE buffer = ? AND call_id = ? AND input_hash = ? LIMIT 1`, buffer, callID, inputHash).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, j.readErr(ctx, "started", err)
	}
	return true, nil
}

// truncateUTF8 cuts s to at most max bytes without splitting a UTF-8
// sequence.
func truncateUTF8(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && cut > max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
