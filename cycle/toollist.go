package cycle

import (
	"context"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/trust"
)

// userDecisions is, per call of doc, the user's latest decision on it as the
// audit log keeps it (approved, rejected, … by a command, <M-CR> or an
// edit of the status), for the calls whose input is still the one decided:
// :Flemma tool:list says "by you" for them once the session's ledger has
// dropped the record (a finished call). Nil without a journal. The
// decisions of the latest step are written after it (recordDecisions):
// they are waited for, at most a second.
func (h *Engine) userDecisions(bufnr int, name string, doc *buffer.Document) map[string]journal.Event {
	jr := h.journal()
	uses := doc.ToolUses()
	if jr == nil || len(uses) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h.waitDecisions(ctx)
	ids := make([]string, len(uses))
	for i, tu := range uses {
		ids[i] = tu.ID
	}
	got, err := jr.LatestDecidedBy(ctx, journalKey(bufnr, name), ids, trust.ByUser, trust.ByUserEdit)
	if err != nil {
		h.logf("tool:list: %v", err)
		return nil
	}
	for _, tu := range uses {
		if e, ok := got[tu.ID]; ok && e.InputHash != "" && e.InputHash != trust.CallHash(tu) {
			delete(got, tu.ID) // decided for another input
		}
	}
	return got
}
