package cycle

import (
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// Batch decisions (issue 28 item 7; seed 001's approve-all / deny-all):
// :Flemma tool:approve-all and :Flemma tool:reject-all set the status of
// every call of the message under the cursor that waits for a decision —
// a pending placeholder with nothing typed in it, or a call not yet
// categorized — in one write (one undo step), each recorded as the user's
// own decision, exactly as :Flemma tool:approve records one. Like
// :Flemma tool:approve, approving does not run anything: the next <C-]>
// runs what is approved. Calls already decided, running, holding the
// user's text or with a result are left alone.

// onSetStatusAll is :Flemma tool:approve-all (status "approved") and
// :Flemma tool:reject-all (status "rejected", msg the optional reason
// written into each block).
func (h *Engine) onSetStatusAll(bufnr, line int, status, msg string) (Reply, error) {
	st := buffer.Status(status)
	if st != buffer.StatusApproved && st != buffer.StatusRejected {
		return reply("none", fmt.Sprintf("tool:%s-all: only approve and reject act on a whole message", status), levelError), nil
	}
	return h.session(bufnr).withStep(true, func() (Reply, error) {
		var ids []string
		var where string
		err := h.session(bufnr).step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
			ids, where = nil, ""
			uses, w := callsOfMessageAt(doc, line)
			where = w
			sess := h.session(bufnr)
			sess.mu.Lock()
			running := sess.running
			var opts ApplyOpts
			var place []buffer.Placement
			var edits []buffer.Edit
			for _, tu := range uses {
				r := doc.Result(tu.ID)
				if running[tu.ID] != nil || doc.Use(tu.ID) != tu {
					continue
				}
				switch {
				case r == nil:
					place = append(place, buffer.Placement{ID: tu.ID, Status: st, Body: msg})
				case r.Status == buffer.StatusPending && strings.TrimSpace(r.Content) == "":
					if msg != "" {
						edits = append(edits, buffer.Edit{Start: r.HeaderLine - 1, End: r.EndLine, Lines: buffer.RenderPlaceholderBody(tu.ID, st, msg)})
					} else {
						e, err := buffer.SetStatus(doc, s.Lines, tu.ID, st)
						if err != nil {
							sess.mu.Unlock()
							return nil, ApplyOpts{}, err
						}
						edits = append(edits, e)
					}
				default:
					continue
				}
				ids = append(ids, tu.ID)
				opts.Records = append(opts.Records, decided(sess.trustOf().ledger, tu, st, trust.ByUser))
			}
			sess.mu.Unlock()
			if len(place) > 0 {
				pe, err := buffer.PlacePlaceholders(doc, s.Lines, place)
				if err != nil {
					return nil, ApplyOpts{}, err
				}
				edits = append(edits, pe...)
			}
			if len(ids) == 0 {
				return nil, ApplyOpts{}, nil
			}
			opts.UndoBreak = true
			return edits, opts, nil
		})
		if err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		if where == "" {
			return reply("none", "The cursor is not in a message with tool calls.", levelWarn), nil
		}
		if len(ids) == 0 {
			return reply("none", fmt.Sprintf("No call of %s waits for a decision.", where), levelInfo), nil
		}
		verb, next := "Approved", "<C-]> runs them."
		if st == buffer.StatusRejected {
			verb, next = "Rejected", "<C-]> sends the rejections to the model."
		}
		h.logf("tool:%s-all: %s %s by the user", map[bool]string{true: "approve", false: "reject"}[st == buffer.StatusApproved], strings.ToLower(verb), strings.Join(ids, ", "))
		return reply("status", fmt.Sprintf("%s %d call(s) of %s: %s. %s", verb, len(ids), where, strings.Join(ids, ", "), next), levelInfo), nil
	})
}

// callsOfMessageAt returns the tool calls of the message under line: an
// @Assistant: message's own calls, or for an @You: message the calls its
// results answer (the assistant message before it). where names the
// message for the user ("" when it has no calls).
func callsOfMessageAt(doc *buffer.Document, line int) (uses []*buffer.ToolUse, where string) {
	m := doc.MessageAt(line)
	if m == nil {
		return nil, ""
	}
	idx := -1
	for i, x := range doc.Messages {
		if x == m {
			idx = i
		}
	}
	if m.Role == "You" && idx > 0 && doc.Messages[idx-1].Role == "Assistant" {
		m = doc.Messages[idx-1]
	}
	if m.Role != "Assistant" {
		return nil, ""
	}
	for _, seg := range m.Segments {
		if u, ok := seg.(*buffer.ToolUse); ok {
			uses = append(uses, u)
		}
	}
	if len(uses) == 0 {
		return nil, ""
	}
	return uses, fmt.Sprintf("the @Assistant: message of line %d", m.StartLine)
}
