package journal

import (
	"context"
	"database/sql"
	"strconv"
	"time"
)

// Event is one decision in the audit log: an approval resolver's verdict, the
// user's edit of a status fence, a resume or discard after a crash.
type Event struct {
	ID int64
	// Time is set by Record when zero.
	Time time.Time
	// Buffer, CallID, Tool and InputHash identify the call as in Call.
	Buffer    string
	CallID    string
	Tool      string
	InputHash string
	// Decision is what was decided ("approve", "deny", "require_approval",
	// "rejected", "resumed", …) and DecidedBy who or why ("user",
	// "urn:flemma:approval:config ($default)", …), in the caller's words.
	Decision  string
	DecidedBy string
	// PID is the process that recorded the event (set by Record).
	PID int
	// Input is the call's arguments (redacted by the caller; at most
	// MaxInputBytes are kept), Detail what else the decision says: the
	// reason of a rejection, what a trust covers. Both may be "".
	Input  string
	Detail string
}

// eventColumns lists the events columns in scanEvent's order.
const eventColumns = `id, time, buffer, call_id, tool, input_hash, decision, decided_by, pid, input, detail`

func scanEvent(s scanner) (Event, error) {
	var (
		e             Event
		t             int64
		input, detail sql.NullString
	)
	if err := s.Scan(&e.ID, &t, &e.Buffer, &e.CallID, &e.Tool, &e.InputHash, &e.Decision, &e.DecidedBy, &e.PID, &input, &detail); err != nil {
		return Event{}, err
	}
	e.Input, e.Detail = input.String, detail.String
	e.Time = time.UnixMicro(t)
	return e, nil
}

// Record appends e to the audit log. Like Start, it is durable when it returns
// nil, and waits for the database like every write (see Journal).
func (j *Journal) Record(ctx context.Context, e Event) error {
	return j.RecordAll(ctx, []Event{e})
}

// RecordAll appends events in one transaction (one sync): the decisions of
// one key press, which may be hundreds, cost one commit.
func (j *Journal) RecordAll(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	op := "record " + events[0].Decision + " of " + events[0].CallID
	if len(events) > 1 {
		op = "record " + strconv.Itoa(len(events)) + " decisions"
	}
	now := j.now()
	return j.write(ctx, op, func(ctx context.Context, tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (time, buffer, call_id, tool, input_hash, decision, decided_by, pid, input, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, e := range events {
			t := now
			if !e.Time.IsZero() {
				t = e.Time.UnixMicro()
			}
			input, _ := boundInput(e.Input)
			detail, _ := boundInput(e.Detail)
			if _, err := stmt.ExecContext(ctx, t, e.Buffer, e.CallID, e.Tool, e.InputHash, e.Decision, e.DecidedBy, j.pid, input, detail); err != nil {
				return err
			}
		}
		return nil
	})
}
