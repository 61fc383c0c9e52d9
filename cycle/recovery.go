package cycle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/trust"
)

// recoverResults writes the recorded results of calls that finished but
// whose results never reached the buffer (Neovim or flemma stopped first),
// before anything else of a press, and returns their ids. It leaves alone a
// result this session wrote (the user removed it: undo, an edit), a block
// holding the user's text or decision, and a result kept for <M-CR>.
func (sess *session) recoverResults(s *Snapshot, doc *buffer.Document) []string {
	h, bufnr := sess.h, sess.bufnr
	j := h.journal()
	if j == nil {
		return nil
	}
	key := journalKey(bufnr, s.Name)
	var done []string
	var cands []*buffer.ToolUse
	for _, u := range doc.Incomplete() {
		sess.mu.Lock()
		rec := sess.trustOf().ledger.Get(u.ID)
		_, kept := sess.kept[u.ID]
		sess.mu.Unlock()
		if rec.Wrote || kept {
			continue // this session wrote (or keeps) the result: the user removed it, or it waits for <M-CR>
		}
		if r := doc.Result(u.ID); r != nil && (strings.TrimSpace(r.Content) != "" || r.Status == buffer.StatusRejected || r.Status == buffer.StatusDenied) {
			continue // the user's text or decision is in the block: never overwrite it
		}
		cands = append(cands, u)
	}
	if len(cands) == 0 {
		return nil
	}
	// One look-up for all of them (a query each was most of this step).
	ids := make([]string, len(cands))
	for i, u := range cands {
		ids[i] = u.ID
	}
	runs, err := j.LatestOf(context.Background(), key, ids)
	if err != nil {
		h.journalFailed("look up "+strings.Join(ids, ", "), err)
		return nil
	}
	for _, u := range cands {
		run, ok := runs[u.ID]
		c, p := sess.pastOf(u, run, ok)
		if p != pastFinished {
			continue
		}
		content := c.Result
		if c.ResultTruncated {
			content += "\n\n[flemma: the journal kept only the start of this result]"
		}
		if err := sess.placeResult(u.ID, content, c.IsError, ""); err != nil {
			h.logf("recover the result of %s: %v", u.ID, err)
			continue
		}
		h.logf("recovered the result of %s from the journal (it finished %s)", u.ID, c.FinishedAt.Format(time.RFC3339))
		done = append(done, u.ID)
	}
	return done
}

// onUndo is :Flemma tool:undo: the files the call under the cursor changed
// go back to what they were, each only while it still holds exactly what
// the call wrote; the call's result then says so, for the model.
func (h *Engine) onUndo(bufnr, line int) (Reply, error) {
	sess := h.session(bufnr)
	return sess.withStep(true, func() (Reply, error) {
		s, err := sess.snapshot()
		if err != nil {
			return Reply{}, err
		}
		doc := parse(s.Lines)
		id, err := blockIn(doc, line)
		if err != nil {
			return noBlock(err)
		}
		tu, r := doc.Use(id), doc.Result(id)
		if tu == nil || r == nil || r.Status != "" {
			return reply("none", "No finished tool call under the cursor.", levelWarn), nil
		}
		jr := h.journal()
		if jr == nil {
			return reply("none", "Nothing to undo: the crash-recovery journal, which records what tools change, is not available (see :checkhealth flemma).", levelWarn), nil
		}
		c, ok, err := jr.Latest(context.Background(), journalKey(bufnr, s.Name), tu.ID)
		if err != nil {
			return Reply{}, fmt.Errorf("tool:undo: %w", err)
		}
		var changes []tools.Change
		if ok && c.Changes != "" {
			if err := json.Unmarshal([]byte(c.Changes), &changes); err != nil {
				return Reply{}, fmt.Errorf("tool:undo: the journal's record of %s: %w", tu.ID, err)
			}
		}
		if len(changes) == 0 {
			return reply("none", fmt.Sprintf("%s changed no file that flemma recorded.", tu.ID), levelInfo), nil
		}
		var done, restored, removed, failed []string
		for i := len(changes) - 1; i >= 0; i-- {
			ch := changes[i]
			if err := h.proposer.Undo(ch, h.backupDir()); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", ch.Path, err))
				continue
			}
			done = append(done, ch.Path)
			// A file the call created is removed, not restored.
			if ch.Before == tools.BackupAbsent {
				removed = append(removed, ch.Path)
			} else {
				restored = append(restored, ch.Path)
			}
		}
		if len(done) > 0 {
			var what []string
			if len(restored) > 0 {
				what = append(what, fmt.Sprintf("%s %s as before the call", strings.Join(restored, ", "), map[bool]string{true: "is", false: "are"}[len(restored) == 1]))
			}
			if len(removed) > 0 {
				what = append(what, fmt.Sprintf("%s, which the call created, %s removed", strings.Join(removed, ", "), map[bool]string{true: "was", false: "were"}[len(removed) == 1]))
			}
			note := fmt.Sprintf("[The user undid this call's changes on disk: %s.]", strings.Join(what, "; "))
			if err := sess.placeResult(tu.ID, r.Content+"\n\n"+note, r.IsError, r.Language); err != nil {
				h.logf("tool:undo: note in the result of %s: %v", tu.ID, err)
			}
			sess.recordDecisions(journalKey(bufnr, s.Name), doc, []WireRecord{{ID: tu.ID, Status: "undone", By: trust.ByUser, Hash: c.InputHash}})
		}
		if len(failed) > 0 {
			return reply("undo", fmt.Sprintf("Not undone: %s", strings.Join(failed, "; ")), levelWarn), nil
		}
		var said []string
		if len(restored) > 0 {
			said = append(said, "Restored "+strings.Join(restored, ", "))
		}
		if len(removed) > 0 {
			said = append(said, "Removed "+strings.Join(removed, ", ")+" (the call created it)")
		}
		return reply("undo", strings.Join(said, "; ")+".", levelInfo), nil
	})
}

// onResume is :Flemma tool:resume: the interrupted call under the cursor
// runs again, as the user's decision.
func (h *Engine) onResume(bufnr, line int) (Reply, error) {
	return h.withBlock(bufnr, line, noStep, func(doc *buffer.Document, id string) (Reply, error) {
		if r := doc.Result(id); r != nil && r.Status == "" {
			return reply("none", fmt.Sprintf("Tool %s already has a result.", id), levelInfo), nil
		}
		return h.onExecuteAt(bufnr, line)
	})
}

// onDiscard is :Flemma tool:discard: the call under the cursor gets an
// error result saying it was interrupted, and is resolved in the journal.
func (h *Engine) onDiscard(bufnr, line int) (Reply, error) {
	sess := h.session(bufnr)
	return sess.withStep(true, func() (Reply, error) {
		s, err := sess.snapshot()
		if err != nil {
			return Reply{}, err
		}
		doc := parse(s.Lines)
		id, err := blockIn(doc, line)
		tu, r := doc.Use(id), doc.Result(id)
		if err != nil || tu == nil {
			return noBlock(err)
		}
		if r != nil && r.Status == "" {
			return reply("none", fmt.Sprintf("Tool %s already has a result.", tu.ID), levelInfo), nil
		}
		key := journalKey(bufnr, s.Name)
		c, p := sess.history(key, tu)
		msg := "The call was discarded by the user without running."
		if p == pastInterrupted || p == pastElsewhere {
			msg = fmt.Sprintf("The call was interrupted: it started %s, and flemma or Neovim stopped before it finished. It may have partly run; check before repeating it.",
				c.StartedAt.Format(time.RFC3339))
		}
		if err := sess.placeResult(tu.ID, msg, true, ""); err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		if jr := h.journal(); jr != nil && c.ID != 0 && !c.Finished() && c.Resolution == "" {
			if err := jr.Resolve(context.Background(), c.ID, journal.Discarded, "user"); err != nil {
				h.journalFailed("discard "+tu.ID, err)
			}
		} else {
			// Never journaled as started (the user discards a call that did
			// not run): the decision is recorded all the same.
			sess.recordDecisions(key, doc, []WireRecord{{ID: tu.ID, Status: string(journal.Discarded), By: trust.ByUser, Hash: trust.CallHash(tu)}})
		}
		return reply("discard", "", 0), nil
	})
}
