package cycle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// onExecuteAt executes or resolves the one tool block under the cursor.
func (h *Engine) onExecuteAt(bufnr, line int) (Reply, error) {
	sess := h.session(bufnr)
	// Other calls of the buffer may be running: <M-CR> runs this one too.
	return h.withBlock(bufnr, line, stepOne, func(doc *buffer.Document, id string) (Reply, error) {
		sess.mu.Lock()
		isRunning := sess.running[id] != nil
		kept, hasKept := sess.kept[id]
		sess.mu.Unlock()
		if isRunning {
			return reply("busy", fmt.Sprintf("Tool %s is already executing.", id), levelWarn), nil
		}
		if hasKept {
			// The call ran; its result could not be written then. Write it now
			// rather than run the call again.
			if err := sess.placeResult(id, kept.Content, kept.IsError, kept.Lang); err != nil {
				return reply("none", fmt.Sprintf("Could not write the kept result of %s: %v", id, err), levelError), nil
			}
			sess.mu.Lock()
			delete(sess.kept, id)
			sess.mu.Unlock()
			return reply("result", fmt.Sprintf("Wrote the result %s produced earlier (it was not run again).", id), levelInfo), nil
		}
		r := doc.Result(id)
		if r != nil && r.Status == "" {
			return reply("none", fmt.Sprintf("Tool %s already has a result.", id), levelInfo), nil
		}
		if r == nil || (r.Status == buffer.StatusPending || r.Status == buffer.StatusApproved) && strings.TrimSpace(r.Content) == "" {
			// <M-CR> on an undecided or approved call is the user's approval of it.
			if err := sess.setStatus(id, buffer.StatusApproved, ""); err != nil {
				return Reply{}, err
			}
		}
		return sess.execute(id)
	})
}

// setStatus writes a placeholder with status st for id (creating it when the
// call has no result block yet); msg, when set, becomes the block's body.
func (sess *session) setStatus(id string, st buffer.Status, msg string) error {
	h, bufnr := sess.h, sess.bufnr
	created := false
	err := sess.step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		var opts ApplyOpts
		if tu := doc.Use(id); tu != nil {
			sess := h.session(bufnr)
			sess.mu.Lock()
			opts.Records = []WireRecord{decided(sess.trustOf().ledger, tu, st, trust.ByUser)}
			sess.mu.Unlock()
		}
		r := doc.Result(id)
		if r == nil {
			created = true
			edits, err := buffer.PlacePlaceholders(doc, s.Lines, []buffer.Placement{{ID: id, Status: st}})
			return edits, opts, err
		}
		created = false
		if r.Status == "" {
			return nil, ApplyOpts{}, fmt.Errorf("tool %s already has a result", id)
		}
		if msg == "" {
			if r.Status == st {
				return nil, opts, nil // the same status, now decided by the user
			}
			e, err := buffer.SetStatus(doc, s.Lines, id, st)
			return []buffer.Edit{e}, opts, err
		}
		return []buffer.Edit{{Start: r.HeaderLine - 1, End: r.EndLine, Lines: buffer.RenderPlaceholderBody(id, st, msg)}}, opts, nil
	})
	if err == nil && created && msg != "" {
		return sess.setStatus(id, st, msg)
	}
	return err
}

func (h *Engine) SetStatus(bufnr, line int, status, msg string) (Reply, error) {
	return h.withBlock(bufnr, line, stepAll, func(_ *buffer.Document, id string) (Reply, error) {
		if err := h.session(bufnr).setStatus(id, buffer.Status(status), msg); err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		return reply("status", "", 0), nil
	})
}

// Cancel cancels every running tool of the buffer (<C-c>).
func (h *Engine) Cancel(bufnr int) (Reply, error) {
	st := h.session(bufnr)
	st.mu.Lock()
	n := len(st.running)
	streaming := st.streaming != nil
	st.stop() // the running calls and the response
	st.renew()
	wasArmed := !st.disarmed
	st.disarmed = true // <C-c> also stops autopilot until the next press
	st.mu.Unlock()
	if h.cancelWaiting(bufnr) && n == 0 && !streaming {
		return reply("cancel", "Cancelled the step that waited for the tool definitions to load.", levelInfo), nil
	}
	if streaming {
		return reply("cancel", "", 0), nil // the stream reports "Response interrupted."
	}
	if n == 0 {
		if wasArmed {
			return reply("cancel", "Nothing is running in this buffer; autopilot is paused until your next <C-]>.", levelInfo), nil
		}
		return reply("cancel", "Nothing is running in this buffer.", levelInfo), nil
	}
	return reply("cancel", fmt.Sprintf("Cancelled %d running tool(s).", n), levelWarn), nil
}

func (h *Engine) onCancelAt(bufnr, line int) (Reply, error) {
	_, id, err := h.blockUnder(bufnr, line)
	if err != nil {
		return noBlock(err)
	}
	st := h.session(bufnr)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running[id] != nil {
		st.running[id]()
		return reply("cancel", fmt.Sprintf("Cancelled %s.", id), levelWarn), nil
	}
	return reply("cancel", "No running tool under the cursor.", levelInfo), nil
}

// onSetResult writes a result the user supplies (:Flemma tool:result and
// tool:error), creating the block when the call has none.
func (h *Engine) onSetResult(bufnr int, id, text string, isError bool) (Reply, error) {
	sess := h.session(bufnr)
	return sess.withStep(true, func() (Reply, error) {
		if err := sess.placeResult(id, text, isError, ""); err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		decision := "result given"
		if isError {
			decision = "error given"
		}
		sess.auditUser(id, decision, text)
		return reply("result", "", 0), nil
	})
}

// placeResult writes a result for id whatever its block holds (the user's
// own result, or a kept one), creating the block when the call has none.
func (sess *session) placeResult(id, text string, isError bool, lang string) error {
	for pass := 0; pass < 2; pass++ {
		created := false
		err := sess.step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
			if doc.Use(id) == nil {
				return nil, ApplyOpts{}, fmt.Errorf("no tool call with id %s in this buffer", id)
			}
			if doc.Result(id) == nil {
				created = true
				edits, err := buffer.PlacePlaceholders(doc, s.Lines, []buffer.Placement{{ID: id, Status: buffer.StatusPending}})
				return edits, ApplyOpts{}, err
			}
			created = false
			e, err := buffer.ReplaceResult(doc, s.Lines, id, text, isError, lang)
			return []buffer.Edit{e}, ApplyOpts{CursorID: id}, err
		})
		if err != nil || !created {
			return err
		}
	}
	return errors.New("could not write the result")
}

// blockUnder returns the buffer's document and the id of the tool call whose
// use or result block covers line ("" when none does).
func (h *Engine) blockUnder(bufnr, line int) (*buffer.Document, string, error) {
	sess := h.session(bufnr)
	s, err := sess.snapshot()
	if err != nil {
		return nil, "", err
	}
	doc := sess.parse(s)
	id, err := blockIn(doc, line)
	return doc, id, err
}

// blockIn is the id of the call whose use or result block covers line in
// doc, "" when none; a block above a compaction summary is an
// *aboveSummary error (the calls there are not the conversation's now).
func blockIn(doc *buffer.Document, line int) (string, error) {
	switch tu, r := doc.BlockAt(line); {
	case tu != nil:
		return tu.ID, nil
	case r != nil:
		return r.ToolUseID, nil
	}
	if doc.Compacted(line) {
		if tu, r := doc.Whole().BlockAt(line); tu != nil || r != nil {
			return "", &aboveSummary{line: doc.Summary.StartLine}
		}
	}
	return "", nil
}

// aboveSummary: the block under the cursor lies above the compaction
// summary in force, so it is not part of the conversation: nothing acts
// on it (noBlock tells the user).
type aboveSummary struct{ line int }

func (e *aboveSummary) Error() string {
	return fmt.Sprintf("This tool call is above the compaction summary on line %d: it is not part of the conversation any more, and nothing runs or changes it (delete the summary block to bring it back).", e.line)
}

func noBlock(err error) (Reply, error) {
	var above *aboveSummary
	if errors.As(err, &above) {
		return reply("none", above.Error(), levelWarn), nil
	}
	if err != nil {
		return Reply{}, err
	}
	return reply("none", "No tool block under the cursor.", levelWarn), nil
}
