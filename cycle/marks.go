package cycle

import (
	"fmt"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/preview"
)

// Highlight groups of the extmarks (linked in plugin/flemma.lua).
const (
	hlPreview = "FlemmaToolPreview"
	hlRunning = "FlemmaToolRunning"
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// marks computes every extmark of a buffer text: a preview line inside each
// empty pending or approved placeholder that is not running yet, and a
// running indicator on the header of each executing call. They are always
// computed from the text they will be placed on, and replace the previous
// set, so they are never duplicated or stale.
func (sess *session) marks(s *Snapshot, doc *buffer.Document) []Mark {
	h := sess.h
	out := []Mark{}
	sess.mu.Lock()
	var started map[string]time.Time
	var running map[string]bool
	started = make(map[string]time.Time, len(sess.started))
	for id, t := range sess.started {
		started[id] = t
	}
	running = make(map[string]bool, len(sess.running))
	for id := range sess.running {
		running[id] = true
	}
	sess.mu.Unlock()
	now := time.Now()
	var eff *options.Effective // the buffer's options, for the previews' time limits (read once, if needed)
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil || r.Status == "" {
			continue
		}
		if running[tu.ID] {
			text := "⧗ queued"
			if t, ok := started[tu.ID]; ok {
				el := now.Sub(t)
				text = fmt.Sprintf("%s running %.1fs", spinner[int(el/(100*time.Millisecond))%len(spinner)], el.Seconds())
			}
			out = append(out, Mark{Line: r.HeaderLine - 1, Kind: "status", Text: text, HL: hlRunning})
			continue
		}
		if (r.Status == buffer.StatusPending || r.Status == buffer.StatusApproved) && r.Content == "" && r.FenceLine > 0 {
			if eff == nil {
				e := sess.effective(nil)
				eff = &e
			}
			out = append(out, Mark{Line: r.FenceLine - 1, Kind: "preview", Text: h.previewText(tu, s, h.timeoutNote(tu, *eff)), HL: hlPreview, Lines: sess.diffLines(tu, s)})
		}
	}
	return out
}

// previewText formats one call's preview for the window width; a Lua tool's
// own format_preview is called back in Neovim.
//
// note, when set, ends the line after two spaces (a call's time limit): it
// is kept whole, the summary is cut to make room for it.
func (h *Engine) previewText(tu *buffer.ToolUse, s *Snapshot, note string) string {
	width := s.Width
	if width <= 0 {
		width = 80
	}
	if note != "" {
		note = "  (" + note + ")"
		if width-len(note) >= 20 { // the summary keeps room
			width -= len(note)
		} else {
			note = ""
		}
	}
	opts := preview.Options{EOL: s.EOL, AmbiguousWide: s.Ambiwidth == "double"}
	if t, ok := h.Registry.Get(tu.Name); ok {
		if ct, ok := t.(*chainTool); ok {
			o := opts
			opts.Custom = func(maxLen int) (string, bool) { return ct.chainPreview(tu.Input(), maxLen, o), true }
		}
		if lt, ok := t.(*luaTool); ok && lt.hasPreview {
			opts.Custom = func(maxLen int) (string, bool) {
				input := tu.Input()
				if input == nil {
					input = map[string]any{}
				}
				out, err := h.lua.Preview(tu.Name, input, maxLen)
				if err != nil {
					h.logf("format_preview of %s: %v", tu.Name, err)
					return "", false
				}
				if out == nil {
					return "", false
				}
				return *out, true
			}
		}
	}
	return preview.Format(tu.Name, tu.Input(), width, opts) + note
}

// refreshMarks recomputes the extmarks of a buffer (after a resize, an edit
// by the user, or a tick of a running tool's timer).
func (sess *session) refreshMarks() {
	h, bufnr := sess.h, sess.bufnr
	err := sess.step(func(*Snapshot, *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		return nil, ApplyOpts{}, nil
	})
	if err != nil {
		h.logf("refresh marks of buffer %d: %v", bufnr, err)
	}
}

// refresher coalesces refresh requests per buffer: while one is pending,
// more requests are dropped.
type refresher struct {
	mu      sync.Mutex
	pending map[int]bool
}

// onRefresh is the flemma.refresh notification (resize, text changed). It
// does nothing while a response streams into the buffer: its text changes
// at every flush, previews do not, and a refresh would read the whole
// buffer each time (the stream's writes do not update the host's copy).
func (h *Engine) onRefresh(bufnr int) {
	streaming := false
	if st := h.lookup(bufnr); st != nil {
		st.mu.Lock()
		streaming = st.streaming != nil
		st.mu.Unlock()
	}
	if streaming {
		return
	}
	h.refresh.mu.Lock()
	if h.refresh.pending == nil {
		h.refresh.pending = map[int]bool{}
	}
	if h.refresh.pending[bufnr] {
		h.refresh.mu.Unlock()
		return
	}
	h.refresh.pending[bufnr] = true
	h.refresh.mu.Unlock()
	// The requests of the next 30 ms coalesce into this one (a timer,
	// not a sleeping goroutine).
	time.AfterFunc(30*time.Millisecond, func() {
		h.refresh.mu.Lock()
		delete(h.refresh.pending, bufnr)
		h.refresh.mu.Unlock()
		h.session(bufnr).refreshMarks()
	})
}
