package journal

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Filter selects what Export writes. The zero value selects everything.
type Filter struct {
	// Buffer keeps only entries of this buffer key ("" for all).
	Buffer string
	// Since keeps only entries at or after this time (for a call: its start).
	Since time.Time
	// Limit keeps only the newest Limit entries (0 for all).
	Limit int
	// Results adds each call's stored result text (field "result").
	Results bool
	// Text writes the readable form (ExportText) instead of JSON lines.
	Text bool
}

// TimeFormat is the format of every time in exported lines: UTC, fixed
// width, so lines sort as text.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// callLine and eventLine are the exported JSON objects. Their field names are
// a stable interface (`:Flemma tool:log`, `flemma-host journal`, scripts):
// add fields, never rename them. Fields of a call that are not known yet
// (an unfinished call) are null.
type callLine struct {
	Kind      string `json:"kind"` // "call"
	ID        int64  `json:"id"`
	Time      string `json:"time"` // when it started
	Buffer    string `json:"buffer"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	InputHash string `json:"input_hash"`
	Decision  string `json:"decision"`
	DecidedBy string `json:"decided_by"`
	PID       int    `json:"pid"`
	// Input is the call's arguments (redacted, at most MaxInputBytes) and
	// InputBytes their whole size: absent for calls of older journals.
	Input           *string  `json:"input,omitempty"`
	InputBytes      *int64   `json:"input_bytes,omitempty"`
	FinishedAt      *string  `json:"finished_at"`
	Status          *string  `json:"status"`
	IsError         *bool    `json:"is_error"`
	ErrorKind       string   `json:"error_kind,omitempty"`
	DurationMS      *float64 `json:"duration_ms"`
	OutputBytes     *int64   `json:"output_bytes"`
	ResultTruncated bool     `json:"result_truncated"`
	Resolution      *string  `json:"resolution"`
	ResolvedAt      *string  `json:"resolved_at"`
	ResolvedBy      *string  `json:"resolved_by"`
	Result          *string  `json:"result,omitempty"` // only with Filter.Results
	// Changes are the files the call changed (see Outcome.Changes), when
	// it changed any.
	Changes json.RawMessage `json:"changes,omitempty"`
}

type eventLine struct {
	Kind      string `json:"kind"` // "event"
	ID        int64  `json:"id"`
	Time      string `json:"time"`
	Buffer    string `json:"buffer"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	InputHash string `json:"input_hash"`
	Decision  string `json:"decision"`
	DecidedBy string `json:"decided_by"`
	PID       int    `json:"pid"`
	Input     string `json:"input,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// Export writes calls and events as JSON lines, one object per line, oldest
// first (newest last), calls before events at the same microsecond. Each
// object has "kind": "call" or "event". Export reads one consistent snapshot
// and does not block writers; it is bounded by ctx only, not by
// Options.ReadTimeout.
func (j *Journal) Export(ctx context.Context, w io.Writer, f Filter) error {
	if f.Text {
		return j.exportText(ctx, w, f)
	}
	var where []string
	var args []any
	add := func(col string) {
		var conds []string
		if f.Buffer != "" {
			conds = append(conds, "buffer = ?")
			args = append(args, f.Buffer)
		}
		if !f.Since.IsZero() {
			conds = append(conds, col+" >= ?")
			args = append(args, f.Since.UnixMicro())
		}
		if len(conds) == 0 {
			where = append(where, "")
			return
		}
		where = append(where, " WHERE "+strings.Join(conds, " AND "))
	}
	resultArg := []any{f.Results}
	add("started_at")
	callArgs := append(resultArg, args...)
	args = nil
	add("time")
	limit := -1 // no limit, to SQLite
	if f.Limit > 0 {
		limit = f.Limit
	}
	q := `SELECT * FROM (
		SELECT 0 AS k, id, buffer, call_id, tool, input_hash, decision, decided_by, pid, started_at,
			finished_at, status, is_error, duration_us, output_bytes, CASE WHEN ? THEN result END, result_truncated,
			resolution, resolved_at, resolved_by, changes, error_kind, input, input_bytes, started_at AS t FROM calls` + where[0] + `
		UNION ALL
		SELECT 1, ` + eventColumns + `, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, time FROM events` + where[1] + `
		ORDER BY t DESC, k DESC, id DESC LIMIT ?
	) ORDER BY t, k, id`
	all := append(append(callArgs, args...), limit)
	rows, err := j.r.QueryContext(ctx, q, all...)
	if err != nil {
		return j.readErr(ctx, "export", err)
	}
	defer rows.Close()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for rows.Next() {
		line, err := scanLine(rows)
		if err != nil {
			return j.readErr(ctx, "export", err)
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("journal: export: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return j.readErr(ctx, "export", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	return nil
}

// scanLine reads one row of Export's union: kind, the 23 call columns (an
// event fills the first 11 of them in its own order and the rest with
// NULLs), and the sort time.
func scanLine(rows *sql.Rows) (any, error) {
	var (
		kind int
		t    int64
		cols [23]any
	)
	dest := []any{&kind}
	for i := range cols {
		dest = append(dest, &cols[i])
	}
	dest = append(dest, &t)
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	src := rowValues(cols[:])
	if kind == 1 {
		e, err := scanEvent(src)
		if err != nil {
			return nil, err
		}
		return eventLine{Kind: "event", ID: e.ID, Time: formatTime(e.Time), Buffer: e.Buffer, CallID: e.CallID,
			Tool: e.Tool, InputHash: e.InputHash, Decision: e.Decision, DecidedBy: e.DecidedBy, PID: e.PID,
			Input: e.Input, Detail: e.Detail}, nil
	}
	c, err := scanCall(src)
	if err != nil {
		return nil, err
	}
	l := callLine{Kind: "call", ID: int64(c.ID), Time: formatTime(c.StartedAt), Buffer: c.Buffer, CallID: c.CallID,
		Tool: c.Tool, InputHash: c.InputHash, Decision: c.Decision, DecidedBy: c.DecidedBy, PID: c.PID,
		ResultTruncated: c.ResultTruncated}
	if c.Finished() {
		fin, status, isErr := formatTime(c.FinishedAt), c.Status, c.IsError
		ms, out := float64(c.Duration.Microseconds())/1000, c.OutputBytes
		l.FinishedAt, l.Status, l.IsError, l.DurationMS, l.OutputBytes = &fin, &status, &isErr, &ms, &out
		l.ErrorKind = c.ErrorKind
	}
	if c.Resolution != "" {
		res, at, by := string(c.Resolution), formatTime(c.ResolvedAt), c.ResolvedBy
		l.Resolution, l.ResolvedAt, l.ResolvedBy = &res, &at, &by
	}
	if cols[14] != nil {
		r := c.Result
		l.Result = &r
	}
	if c.Changes != "" {
		l.Changes = json.RawMessage(c.Changes)
	}
	if cols[21] != nil {
		in, n := c.Input, c.InputBytes
		l.Input, l.InputBytes = &in, &n
	}
	return l, nil
}

// rowValues replays already-scanned values into scanCall and scanEvent, so
// the conversions live in one place.
type rowValues []any

func (v rowValues) Scan(dest ...any) error {
	for i, d := range dest {
		if err := convertAssign(d, v[i]); err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	return nil
}

// convertAssign covers the destination types scanCall and scanEvent use.
func convertAssign(dest, src any) error {
	switch d := dest.(type) {
	case *ID:
		n, err := asInt(src)
		*d = ID(n)
		return err
	case *int64:
		n, err := asInt(src)
		*d = n
		return err
	case *int:
		n, err := asInt(src)
		*d = int(n)
		return err
	case *bool:
		n, err := asInt(src)
		*d = n != 0
		return err
	case *string:
		s, ok := src.(string)
		if !ok && src != nil {
			return fmt.Errorf("want text, got %T", src)
		}
		*d = s
		return nil
	case sql.Scanner:
		return d.Scan(src)
	}
	return fmt.Errorf("unsupported destination %T", dest)
}

func asInt(src any) (int64, error) {
	switch s := src.(type) {
	case int64:
		return s, nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("want integer, got %T", src)
}

func formatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }
