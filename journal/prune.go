package journal

import (
	"context"
	"database/sql"
	"time"
)

// Retention bounds the journal. Whichever bound is reached first drops the
// oldest entries. Zero fields take the defaults; negative fields disable a
// bound.
type Retention struct {
	// MaxAge drops entries older than this. Calls that never finished and
	// were never resolved are kept past MaxAge (they are what stops a call
	// from running twice); the row bounds still apply to them.
	MaxAge time.Duration
	// MaxCalls and MaxEvents bound the rows of each table.
	MaxCalls  int
	MaxEvents int
	// MaxBytes bounds the space the rows use in the file (pages in use, not
	// the file size: freed pages are reused, not returned to the system).
	MaxBytes int64
}

// DefaultRetention: 30 days, 50,000 calls, 200,000 events, 256 MiB.
func DefaultRetention() Retention {
	return Retention{MaxAge: 30 * 24 * time.Hour, MaxCalls: 50_000, MaxEvents: 200_000, MaxBytes: 256 << 20}
}

func (r Retention) withDefaults() Retention { return r.or(DefaultRetention()) }

// or fills r's zero fields from d.
func (r Retention) or(d Retention) Retention {
	if r.MaxAge == 0 {
		r.MaxAge = d.MaxAge
	}
	if r.MaxCalls == 0 {
		r.MaxCalls = d.MaxCalls
	}
	if r.MaxEvents == 0 {
		r.MaxEvents = d.MaxEvents
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = d.MaxBytes
	}
	return r
}

// Pruned counts the rows Prune deleted.
type Pruned struct {
	Calls, Events int64
}

// pruneBatch bounds the rows one pruning transaction deletes from each
// table, so the write lock is never held long enough to push another
// host's Start past its timeout.
const pruneBatch = 500

// Prune deletes entries beyond the retention bounds r (zero fields: those of
// Options.Retention), in short transactions, until none are left or ctx
// ends. Open does a bounded amount of the same work.
//
// Prune never runs VACUUM: freed pages are reused by later writes, so the
// file stops growing at the size the bounds allow.
func (j *Journal) Prune(ctx context.Context, r Retention) (Pruned, error) {
	return j.prune(ctx, r.or(j.opts.Retention), -1)
}

// prune runs at most maxBatches transactions (-1: no limit).
func (j *Journal) prune(ctx context.Context, r Retention, maxBatches int) (Pruned, error) {
	var total Pruned
	for i := 0; maxBatches < 0 || i < maxBatches; i++ {
		var p Pruned
		err := j.write(ctx, "prune", func(ctx context.Context, tx *sql.Tx) error {
			var err error
			p, err = j.pruneStep(ctx, tx, r)
			return err
		})
		total.Calls += p.Calls
		total.Events += p.Events
		if err != nil || p == (Pruned{}) {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
	return total, nil
}

// pruneStep deletes at most pruneBatch rows per bound and table.
func (j *Journal) pruneStep(ctx context.Context, tx *sql.Tx, r Retention) (Pruned, error) {
	var p Pruned
	exec := func(n *int64, q string, args ...any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		*n += k
		return err
	}
	if r.MaxAge > 0 {
		cutoff := j.opts.Now().Add(-r.MaxAge).UnixMicro()
		if err := exec(&p.Calls, `DELETE FROM calls WHERE id IN (SELECT id FROM calls
			WHERE started_at < ? AND (finished_at IS NOT NULL OR resolution IS NOT NULL)
			ORDER BY started_at LIMIT ?)`, cutoff, pruneBatch); err != nil {
			return p, err
		}
		if err := exec(&p.Events, `DELETE FROM events WHERE id IN (SELECT id FROM events
			WHERE time < ? ORDER BY time LIMIT ?)`, cutoff, pruneBatch); err != nil {
			return p, err
		}
	}
	// Ids only grow (rows are deleted oldest first), so "id <= max - N"
	// keeps at most N rows without counting them.
	if r.MaxCalls > 0 {
		if err := exec(&p.Calls, `DELETE FROM calls WHERE id IN (SELECT id FROM calls
			WHERE id <= (SELECT max(id) FROM calls) - ? ORDER BY id LIMIT ?)`, r.MaxCalls, pruneBatch); err != nil {
			return p, err
		}
	}
	if r.MaxEvents > 0 {
		if err := exec(&p.Events, `DELETE FROM events WHERE id IN (SELECT id FROM events
			WHERE id <= (SELECT max(id) FROM events) - ? ORDER BY id LIMIT ?)`, r.MaxEvents, pruneBatch); err != nil {
			return p, err
		}
	}
	if r.MaxBytes > 0 && p == (Pruned{}) {
		var pages, free, size int64
		for q, dst := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
			if err := tx.QueryRowContext(ctx, q).Scan(dst); err != nil {
				return p, err
			}
		}
		if used := (pages - free) * size; used > r.MaxBytes {
			// Results dominate the size: drop the oldest calls first (as
			// many as the excess needs, at the average row size), and
			// events only once no call is left.
			var rows int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM calls").Scan(&rows); err != nil {
				return p, err
			}
			n := int64(pruneBatch)
			if rows > 0 {
				n = min(n, (used-r.MaxBytes)/max(used/rows, 1)+1)
			}
			if err := exec(&p.Calls, `DELETE FROM calls WHERE id IN (SELECT id FROM calls ORDER BY id LIMIT ?)`, n); err != nil {
				return p, err
			}
			if p.Calls == 0 {
				if err := exec(&p.Events, `DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?)`, pruneBatch); err != nil {
					return p, err
				}
			}
		}
	}
	return p, nil
}
