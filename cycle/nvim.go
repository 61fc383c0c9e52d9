package cycle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/internal/secrets"
)

// snapshot is one consistent read of a buffer (flemma.buf.snapshot). With
// Delta, Lines holds only the window [First, Count-Tail) and the rest comes
// from the host's mirror; snapshot() always returns whole lines.
type Snapshot struct {
	Valid      bool     `msgpack:"valid"`
	Tick       int      `msgpack:"tick"`
	Delta      bool     `msgpack:"delta"`
	First      int      `msgpack:"first"`
	Tail       int      `msgpack:"tail"`
	Count      int      `msgpack:"count"`
	Lines      []string `msgpack:"lines"`
	Name       string   `msgpack:"name"`
	Cwd        string   `msgpack:"cwd"`
	Modifiable bool     `msgpack:"modifiable"`
	Width      int      `msgpack:"width"`       // text area of the window showing it (80 if none)
	EOL        string   `msgpack:"eol"`         // 'listchars' eol, or ↵
	Ambiwidth  string   `msgpack:"ambiwidth"`   // "single" | "double"
	TrustGen   int      `msgpack:"trust_gen"`   // flemma.trust's load counter of the buffer
	Trusted    bool     `msgpack:"trusted"`     // the user trusts the buffer
	TrustVouch int      `msgpack:"trust_vouch"` // flemma.trust's count of :Flemma trust/untrust in this load

	// The host's parse of a text whose first same lines are Lines' (the
	// mirror's, for ParseFrom), and the Document once parsed (see parse).
	base *buffer.Document
	same int
	doc  *buffer.Document
}

// parse returns the Document of the snapshot's lines, parsed once: only
// the messages below the lines it shares with the host's mirror are
// parsed again (buffer.ParseFrom). The mirror keeps it for the next read.
func (sess *session) parse(s *Snapshot) *buffer.Document {
	if s.doc != nil {
		return s.doc
	}
	s.doc = buffer.ParseFrom(s.base, s.Lines, s.same)
	sess.mu.Lock()
	if sess.mirror != nil && sess.mirror.tick == s.Tick && sameLines(sess.mirror.lines, s.Lines) {
		sess.mirror = &mirror{tick: s.Tick, lines: s.Lines, doc: s.doc}
	}
	sess.mu.Unlock()
	return s.doc
}

// sameLines reports whether a and b are the same slice (not only equal).
func sameLines(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// commonPrefix returns how many leading lines a and b share. Lines taken
// from the mirror are the same strings, which compare at once.
func commonPrefix(a, b []string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Diag is a diagnostic as flemma.buf.set_diagnostics takes it.
type Diag struct {
	Lnum     int    `msgpack:"lnum"`
	Col      int    `msgpack:"col"`
	Severity string `msgpack:"severity"`
	Message  string `msgpack:"message"`
}

// Mark is an extmark as flemma.buf.set_marks takes it.
type Mark struct {
	Line int    `msgpack:"line"` // 0-based
	Kind string `msgpack:"kind"` // "preview" (virtual line below) | "status" (end of line)
	Text string `msgpack:"text"`
	HL   string `msgpack:"hl"`
	// Lines are more virtual lines under a "preview" (a write/edit's diff).
	Lines []MarkLine `msgpack:"lines,omitempty"`
}

// MarkLine is one more virtual line of a Mark.
type MarkLine struct {
	Text string `msgpack:"text"`
	HL   string `msgpack:"hl"`
}

// ApplyOpts travel with the edits in the same call.
type ApplyOpts struct {
	Cursor      int          `msgpack:"cursor,omitempty"`     // 1-based line; 0 = leave (only windows whose cursor the user has not moved since their last action move)
	CursorCol   int          `msgpack:"cursor_col,omitempty"` // 0-based byte column with Cursor
	Follow      bool         `msgpack:"follow,omitempty"`     // windows whose cursor is on the last line keep it there (a streaming answer)
	CursorID    string       `msgpack:"-"`                    // move to this call's result: a placeholder's status word, else its header (resolved by step)
	CursorAtEnd bool         `msgpack:"-"`                    // with CursorID: to the end of the message holding it ("next")
	Modifiable  *bool        `msgpack:"modifiable,omitempty"`
	Join        bool         `msgpack:"join,omitempty"`
	UndoBreak   bool         `msgpack:"undo_break,omitempty"` // start a new undo step (a new phase)
	Diagnostics []Diag       `msgpack:"diagnostics"`          // nil = leave as is
	Marks       []Mark       `msgpack:"marks"`                // nil = leave as is
	Records     []WireRecord `msgpack:"records,omitempty"`    // decisions of this step, kept by flemma.trust with the edit

	fm *frontmatter.Result // with Diagnostics: they are recomputed on the text after the edits
	// after is the text once the edits are applied and its parse, when the
	// plan has them already (buffer.Place): the step does not redo them.
	after buffer.Placed
}

type ApplyResult struct {
	OK    bool   `msgpack:"ok"`
	Stale bool   `msgpack:"stale"`
	Tick  int    `msgpack:"tick"`
	Seq   int    `msgpack:"seq"` // the undo state after the write (undotree() seq_cur)
	Err   string `msgpack:"err"`
}

type LineEdit struct {
	Start int      `msgpack:"start"`
	Stop  int      `msgpack:"stop"`
	Lines []string `msgpack:"lines"`
}

// mirror is the host's copy of a buffer as of a changedtick.
type mirror struct {
	tick  int
	lines []string         // never modified in place
	doc   *buffer.Document // the parse of lines, or nil
}

func (h *Engine) remember(bufnr, tick int, lines []string, doc *buffer.Document) {
	st := h.session(bufnr)
	st.mu.Lock()
	if st.mirror == nil || tick >= st.mirror.tick {
		st.mirror = &mirror{tick: tick, lines: lines, doc: doc}
	}
	st.mu.Unlock()
}

// snapshot reads a buffer. When the host's mirror is current as of the
// tracker's base, Neovim sends only the changed window.
func (sess *session) snapshot() (*Snapshot, error) {
	h, bufnr := sess.h, sess.bufnr
	var m *mirror
	sess.mu.Lock()
	m = sess.mirror
	sess.mu.Unlock()
	have := -1
	if m != nil {
		have = m.tick
	}
	for try := 0; try < 2; try++ {
		s, err := h.ed.Snapshot(bufnr, have)
		if err != nil {
			return nil, fmt.Errorf("read buffer %d: %w", bufnr, err)
		}
		if !s.Valid {
			return nil, fmt.Errorf("buffer %d is no longer valid", bufnr)
		}
		sess.mu.Lock()
		sess.linesRead += len(s.Lines)
		sess.mu.Unlock()
		if s.Delta {
			if m == nil || s.First > len(m.lines) || s.Tail > len(m.lines)-s.First {
				have = -1
				continue
			}
			lines := make([]string, 0, s.Count)
			lines = append(lines, m.lines[:s.First]...)
			lines = append(lines, s.Lines...)
			lines = append(lines, m.lines[len(m.lines)-s.Tail:]...)
			if len(lines) != s.Count {
				h.logf("buffer %d: mirror out of step (%d lines, want %d); full read", bufnr, len(lines), s.Count)
				have = -1
				continue
			}
			s.Lines = lines
		}
		if m != nil && m.doc != nil {
			s.base, s.same = m.doc, commonPrefix(m.lines, s.Lines)
		}
		h.remember(bufnr, s.Tick, s.Lines, nil)
		if err := sess.syncTrust(&s); err != nil {
			return nil, err
		}
		return &s, nil
	}
	return nil, fmt.Errorf("read buffer %d: could not get a consistent copy", bufnr)
}

// apply sends all edits of one step and its cursor/diagnostics/marks in a
// single call that checks changedtick.
func (h *Engine) apply(bufnr, tick int, edits []buffer.Edit, opts ApplyOpts) (ApplyResult, error) {
	w := make([]LineEdit, 0, len(edits))
	for _, e := range edits {
		lines := e.Lines
		if lines == nil {
			lines = []string{}
		}
		w = append(w, LineEdit{Start: e.Start, Stop: e.End, Lines: lines})
	}
	res, err := h.ed.Apply(bufnr, tick, w, opts)
	if err != nil {
		return res, fmt.Errorf("write buffer %d: %w", bufnr, err)
	}
	if !res.OK && !res.Stale {
		return res, errors.New(res.Err)
	}
	return res, nil
}

// step reads, parses, plans and applies one atomic edit, retrying from a
// fresh read when the user changed the buffer in between. plan returns the
// edits and options (no edits: only the extmarks and options are sent).
func (sess *session) step(plan func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error)) error {
	return sess.stepFrom(nil, nil, plan)
}

// stepFrom is step whose first attempt uses a snapshot (and its parse) the
// caller already has.
func (sess *session) stepFrom(s *Snapshot, doc *buffer.Document, plan func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error)) error {
	h, bufnr := sess.h, sess.bufnr
	for attempt := 0; attempt < 8; attempt++ {
		if s == nil || attempt > 0 {
			var err error
			if s, err = sess.snapshot(); err != nil {
				return err
			}
			doc = sess.parse(s)
		}
		edits, opts, err := plan(s, doc)
		if err != nil {
			return err
		}
		// Extmarks and the cursor travel with the edits, computed on the
		// text they land on.
		after, afterLines := doc, s.Lines
		switch {
		case len(edits) > 0 && opts.after.Doc != nil:
			after, afterLines = opts.after.Doc, opts.after.Lines
		case len(edits) > 0:
			if afterLines, err = buffer.Apply(s.Lines, edits); err != nil {
				return err
			}
			after = buffer.ParseFrom(doc, afterLines, buffer.FirstChange(edits))
		}
		if opts.Diagnostics != nil && len(edits) > 0 {
			// Placed on the lines they will be on once the edits are in.
			opts.Diagnostics = diagnostics(after, opts.fm, sess.notesCopy())
		}
		if opts.CursorID != "" {
			if r := after.Result(opts.CursorID); r != nil {
				opts.Cursor, opts.CursorCol = statusWord(r, afterLines)
				if m := after.MessageAt(r.HeaderLine); opts.CursorAtEnd && m != nil {
					opts.Cursor, opts.CursorCol = m.EndLine, 0
				}
			}
		}
		opts.Marks = sess.marks(s, after)
		res, err := h.apply(bufnr, s.Tick, edits, opts)
		if err != nil {
			return err
		}
		if res.OK {
			if len(edits) > 0 {
				h.remember(bufnr, res.Tick, afterLines, after)
			}
			sess.commit(opts.Records, res.Tick, res.Seq)
			sess.recordDecisions(journalKey(bufnr, s.Name), after, opts.Records)
			return nil
		}
		h.logf("buffer %d changed during a step (tick %d → %d); re-reading", bufnr, s.Tick, res.Tick)
	}
	return errors.New("the buffer kept changing while flemma tried to write; nothing was written, try again")
}

func (h *Engine) notify(msg string, level int) {
	msg = secrets.Default.Redact(msg)
	if err := h.ed.Notify(msg, level); err != nil {
		h.logf("notify: %v", err)
	}
}

func (h *Engine) event(pattern string, data any) {
	if err := h.ed.Event(pattern, data); err != nil {
		h.logf("event %s: %v", pattern, err)
	}
}

func (sess *session) setModifiable(on bool) {
	h, bufnr := sess.h, sess.bufnr
	if err := h.ed.SetModifiable(bufnr, on); err != nil {
		h.logf("set modifiable: %v", err)
	}
}

// Notification levels, as vim.log.levels.
const (
	levelInfo  = 2
	levelWarn  = 3
	levelError = 4
)

// statusWord is where the cursor goes for a call's result: on the status
// word of a placeholder's fence (`status=pending`: the word to change),
// else on the result's header (1-based line, 0-based byte column).
func statusWord(r *buffer.ToolResult, lines []string) (line, col int) {
	if r.Status == "" || r.HeaderForm || r.FenceLine < 1 || r.FenceLine > len(lines) {
		return r.HeaderLine, 0
	}
	if i := strings.Index(lines[r.FenceLine-1], "status="); i >= 0 {
		return r.FenceLine, i + len("status=")
	}
	return r.HeaderLine, 0
}
