package journal

import (
	"context"
	"strings"
)

// LatestDecidedBy returns, per call id of a buffer, the most recent event of
// the audit log that one of by decided (by: DecidedBy values, such as
// "user"); ids without such an event (or pruned) are not in the map. It is
// how :Flemma tool:list tells the user's own decisions once the session no
// longer holds them.
func (j *Journal) LatestDecidedBy(ctx context.Context, buffer string, ids []string, by ...string) (map[string]Event, error) {
	out := make(map[string]Event, len(ids))
	if len(by) == 0 {
		return out, nil
	}
	const chunk = 500 // well under SQLite's limit of bound parameters
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		part := ids[:n]
		ids = ids[n:]
		args := make([]any, 0, 1+len(part)+len(by))
		args = append(args, buffer)
		for _, id := range part {
			args = append(args, id)
		}
		for _, b := range by {
			args = append(args, b)
		}
		q := `SELECT ` + eventColumns + ` FROM events WHERE buffer = ? AND call_id IN (?` + strings.Repeat(", ?", len(part)-1) +
			`) AND decided_by IN (?` + strings.Repeat(", ?", len(by)-1) + `) ORDER BY id DESC`
		if err := j.latestEvents(ctx, q, args, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (j *Journal) latestEvents(ctx context.Context, q string, args []any, out map[string]Event) error {
	rctx, cancel := j.readCtx(ctx)
	defer cancel()
	rows, err := j.r.QueryContext(rctx, q, args...)
	if err != nil {
		return j.readErr(ctx, "latest decisions", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return j.readErr(ctx, "latest decisions", err)
		}
		if _, seen := out[e.CallID]; !seen { // newest first
			out[e.CallID] = e
		}
	}
	if err := rows.Err(); err != nil {
		return j.readErr(ctx, "latest decisions", err)
	}
	return nil
}
