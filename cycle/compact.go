package cycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// Compaction (issue 30): :Flemma compact asks the buffer's model to
// summarize the conversation so far and writes the answer into the buffer
// as a summary block (buffer.Summary), which every later send sends
// instead of the turns above it. The turns stay in the file; `u` undoes
// the compaction, deleting the block sends them again. See docs/design.md,
// "Compaction".

// DefaultCompactThreshold is send.compact_threshold's default: a send that
// would fill this share of the model's context window offers compaction.
const DefaultCompactThreshold = 0.8

// compactPlace is where a compaction's summary block goes: Lines are
// inserted before the 0-based line At. The conversation it summarizes is
// the buffer's lines before At; what follows At (the user's draft) stays
// below the block and is sent after it.
type compactPlace struct {
	At        int
	Pre, Post []string // lines around the block: a blank separator, a new @You:
}

// placeSummary decides where the summary block of a compaction goes: at
// the start of the user's draft — the text of the last @You: message after
// its tool results and summary, if any — or, when the buffer does not end
// with a @You: message, in a new one at the end. Pure: the tests pin it.
func placeSummary(doc *buffer.Document, lines []string) compactPlace {
	var last *buffer.Message
	if n := len(doc.Messages); n > 0 {
		last = doc.Messages[n-1]
	}
	if last == nil || last.Role != "You" {
		p := compactPlace{At: len(lines), Pre: []string{"@You:"}, Post: []string{""}}
		if len(lines) > 0 && !isBlankLine(lines[len(lines)-1]) {
			p.Pre = []string{"", "@You:"}
		}
		return p
	}
	p := compactPlace{At: last.StartLine} // right below the @You: line
	for _, s := range last.Segments {
		if _, ok := s.(*buffer.Text); !ok {
			_, end := s.Lines()
			p.At, p.Pre = end, []string{""}
		}
	}
	if p.At >= len(lines) || !isBlankLine(lines[p.At]) {
		p.Post = []string{""}
	}
	return p
}

func isBlankLine(s string) bool { return strings.TrimSpace(s) == "" }

// compactNote is the summary marker's note: who wrote it.
func compactNote(name, model string) string {
	return "written by " + name + "/" + model + "; the conversation above is not sent, this summary goes in its place"
}

// onCompact is :Flemma compact: the conversation so far goes to the buffer's
// provider and model with a fixed instruction to summarize it, and the
// answer streams into a summary block (locked, as a response; <C-c>
// cancels and leaves the buffer as it was). The reply is at once; the
// result is told when the summary is written.
func (h *Engine) onCompact(bufnr int) (Reply, error) {
	sess := h.session(bufnr)
	h.ensureMCP()
	return sess.withStep(true, func() (Reply, error) {
		s, err := sess.snapshot()
		if err != nil {
			return Reply{}, err
		}
		doc := parse(s.Lines)
		fm := sess.evalFrontmatter(doc)
		if fm.Blocking() {
			return sess.blocked(diagnostics(doc, fm, sess.notesCopy()))
		}
		place := placeSummary(doc, s.Lines)
		// The conversation to summarize: everything before the block.
		before := parse(s.Lines[:place.At])
		eff := sess.effective(fm)
		name, params, pcfg := h.request(eff)
		system, msgs, err := provider.FromDocument(before, provider.Signer(name, pcfg.Wire))
		if err != nil {
			if strings.Contains(err.Error(), "no messages") {
				return reply("compact", "Nothing to compact: the conversation is empty.", levelWarn), nil
			}
			return reply("compact", "Cannot compact: "+err.Error(), levelError), nil
		}
		if before.Summary != nil && len(msgs) == 1 && len(msgs[0].Parts) == 1 {
			return reply("compact", "Nothing to compact: nothing was said since the last summary.", levelInfo), nil
		}
		if work := len(provider.Files(msgs)) > 0 || hasExprs(msgs); work || sess.hadAttachDiags() {
			r, stop := sess.attach(before, fm, s, msgs, work)
			if stop {
				sess.mu.Lock()
				sess.attachCompact = true // :Flemma attach:allow compacts again
				sess.mu.Unlock()
				r.Phase, r.Message = "compact", strings.Replace(strings.Replace(r.Message, "Cannot send", "Cannot compact", 1), "Nothing was sent.", "Nothing was sent; :Flemma attach:allow allows them and compacts.", 1)
				return r, nil
			}
		}
		prov, err := h.providers(name, pcfg)
		if err != nil {
			return reply("compact", err.Error(), levelError), nil
		}
		prov = h.retrying(prov, eff)
		if ok, src := provider.CredentialStatus(name, pcfg); !ok {
			return reply("compact", fmt.Sprintf("%s: no credential (%s). Nothing was sent.", name, src), levelError), nil
		}
		info := h.modelInfo(name, params.Model)
		tools := h.toolDefs(eff) // the same as a send's: a history with tool calls needs them, and the cache prefix stays
		req := provider.Request{System: system, Messages: provider.ForSummary(msgs), Tools: tools, Params: params, ModelInfo: &info}
		whole := provider.EstimateTokens(system, msgs, tools)
		sess.mu.Lock()
		ctx, cancel := context.WithCancel(sess.ctx)
		if sess.streaming != nil {
			sess.mu.Unlock()
			cancel()
			return reply("busy", "A request is already in progress. Use <C-c> to cancel it first.", levelWarn), nil
		}
		sess.streaming = cancel
		sess.move(evStream)
		sess.attachCompact = false
		sess.mu.Unlock()
		sess.setModifiable(false) // locked from now, as during a response

		sw := &streamWrite{h: h, bufnr: bufnr, base: s.Lines[:place.At], tail: append([]string{}, s.Lines[place.At:]...), tick: s.Tick, r: place.At, last: []string{}}
		model := h.modelName(name, params.Model)
		job := &compaction{h: h, sw: sw, prov: prov, req: req, place: place, note: compactNote(name, model),
			model: model, window: info.ContextWindow, whole: whole, messages: len(msgs)}
		h.logf("compact: buffer %d, %s model=%q, %d messages (about %d tokens) summarized, the block at line %d", bufnr, name, model, len(msgs), whole, place.At+1)
		h.event("FlemmaRequestStart", RequestEvent{Bufnr: bufnr, Provider: prov.Name(), Model: params.Model})
		sess.progress(Progress{Phase: "waiting", Provider: prov.Name(), Model: params.Model})
		sess.spawn(func() { job.run(ctx) })
		return reply("compact", "Compacting: the model is summarizing the conversation (<C-c> cancels).", levelInfo), nil
	})
}

// compaction is one summary being received and written.
type compaction struct {
	h     *Engine
	sw    *streamWrite
	prov  provider.Provider
	req   provider.Request
	place compactPlace
	note  string
	model string

	window   int // the model's context window (0: unknown)
	whole    int // the estimated tokens of the conversation summarized
	messages int // its messages
}

// lines is the region for the summary text so far.
func (c *compaction) lines(text string, closed bool) []string {
	out := append([]string{}, c.place.Pre...)
	out = append(out, buffer.RenderSummary(c.note, text, closed)...)
	if closed {
		out = append(out, c.place.Post...)
	}
	return out
}

// run receives the summary and writes it as it comes, at most one write
// per flushEvery; the block is closed (and so counts) only when the whole
// answer is in. Anything else — <C-c>, an error, an answer cut short or
// with a tool call — leaves the buffer as it was.
// summaryVerdict says whether a compaction's answer is a summary to keep,
// and if not why: the stream failed (streamErr: cancelled, an error, the
// buffer could not be written), pieces were lost, the model called a tool,
// it stopped before the end, or it wrote nothing.
func summaryVerdict(streamErr error, lost, calls int, stop, summary string) (why string, accepted bool) {
	switch {
	case errors.Is(streamErr, context.Canceled):
		return "cancelled", false
	case streamErr != nil:
		return streamErr.Error(), false
	case lost > 0:
		return fmt.Sprintf("%d piece(s) of the answer could not be read (the raw text is in :Flemma log)", lost), false
	case calls > 0:
		return "the model called a tool instead of writing the summary", false
	case stop != "" && stop != "end_turn":
		why = fmt.Sprintf("the summary was not finished (stop reason %q", stop)
		if stop == "max_tokens" {
			why += ": it reached the output limit, max_tokens"
		}
		return why + ")", false
	case summary == "":
		return "the model's answer was empty", false
	}
	return "", true
}

func (c *compaction) run(ctx context.Context) {
	h, sw := c.h, c.sw
	bufnr := sw.bufnr
	var (
		text           strings.Builder
		dirty, written bool
		writeErr       error
		calls, lost    int
		stop           string
		usage          *provider.Usage
		started        = time.Now()
		prog           = newProgressMeter(h.session(bufnr), c.prov.Name(), c.req.Params.Model, started)
		streamErr      error
	)
	flush := func() {
		if !dirty || writeErr != nil {
			return
		}
		dirty = false
		if err := sw.write(c.lines(text.String(), false), false, !written); err != nil {
			writeErr = err
			h.session(bufnr).cancelStream()
			return
		}
		written = true
	}
	add := func(e provider.Event) {
		switch e.Kind {
		case provider.EventText:
			text.WriteString(e.Text)
			dirty = true
			prog.answering(e.Text)
		case provider.EventThinking:
			prog.thinking(e.Text)
		case provider.EventToolUse:
			calls++
		case provider.EventUnreadable:
			lost++
			h.logf("compact: %s: piece %d of the stream could not be read (%s): %s", c.prov.Name(), lost, e.Detail, logCut(e.Text, 4096))
		case provider.EventUsage:
			usage = e.Usage
		case provider.EventDone:
			stop = e.StopReason
		}
	}
	streamErr = h.pump(ctx, bufnr, c.prov, c.req, add, func() { flush(); prog.report() })

	if writeErr != nil {
		streamErr = writeErr
	}
	summary := strings.TrimSpace(text.String())
	why, summaryAccepted := summaryVerdict(streamErr, lost, calls, stop, summary)
	var err error
	switch {
	case writeErr != nil:
		// The region could not be found again: nothing more is written.
		h.session(bufnr).setModifiable(true)
	case summaryAccepted:
		err = sw.write(c.lines(text.String(), true), true, !written)
	case written:
		err = sw.write(nil, true, false) // the buffer as it was
	default:
		h.session(bufnr).setModifiable(true)
	}
	left := writeErr != nil && written // lines of the summary may be left in the buffer
	if err != nil {
		h.logf("compact: final write: %v", err)
		h.session(bufnr).setModifiable(true)
		left = written
		if summaryAccepted {
			why, summaryAccepted = "the buffer could not be written: "+err.Error(), false
		}
	}
	cost, costKnown := responseCost(usage, c.req.ModelInfo)
	st := h.session(bufnr)
	st.mu.Lock()
	st.usage.add(usage, cost, costKnown)
	if summaryAccepted {
		st.compactDeclined = 0 // the next crossing offers again
	}
	st.mu.Unlock()
	h.addUsage(usage, cost, costKnown)
	h.session(bufnr).progress(Progress{Provider: c.prov.Name(), Model: c.req.Params.Model})
	end := requestEnd(RequestEvent{Bufnr: bufnr, Provider: c.prov.Name(), Model: c.req.Params.Model,
		StopReason: stop, Usage: usageEvent(usage), DurationMS: time.Since(started).Milliseconds()}, cost, costKnown, streamErr)
	if end.Status == "ok" && !summaryAccepted {
		end.Status = "cut"
	}
	h.session(bufnr).endStream()
	h.event("FlemmaRequestEnd", end)
	h.logf("compact: done in %s, usage %+v, accepted %v (%s)", time.Since(started), usage, summaryAccepted, why)
	if !summaryAccepted {
		if left {
			h.notify("Compaction failed: "+why+". What was written of the summary has no closing marker, so it is text and the whole conversation is still sent; delete it.", levelError)
			return
		}
		if why == "cancelled" {
			h.notify("Compaction cancelled; the buffer is as it was.", levelWarn)
			return
		}
		h.notify("Compaction failed: "+why+". The buffer is as it was.", levelError)
		return
	}
	h.notify(c.done(summary), levelInfo)
}

// done is what the user is told once the summary is in: its effect on
// what the next send costs.
func (c *compaction) done(summary string) string {
	after := provider.EstimateTokens(c.req.System, []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: provider.SummaryPreface + "\n\n" + summary}}}}, c.req.Tools)
	msg := fmt.Sprintf("Compacted %d messages (about %s tokens) into a summary: the next send is about %s tokens", c.messages, thousands(c.whole), thousands(after))
	if c.window > 0 {
		msg += fmt.Sprintf(" of %s's %s", c.model, thousands(c.window))
	}
	return msg + ". u undoes it; deleting the summary block sends the whole conversation again."
}

// onEstimate is flemma.estimate: what the next send of the buffer would cost
// of its model's context window.
func (h *Engine) onEstimate(bufnr int) (Estimate, error) {
	sess := h.session(bufnr)
	s, err := sess.snapshot()
	if err != nil {
		return Estimate{}, err
	}
	doc := parse(s.Lines)
	fm := sess.evalFrontmatter(doc)
	return h.estimate(bufnr, doc, sess.effective(fm)), nil
}

// estimate is Estimate for a parsed buffer and its options.
func (h *Engine) estimate(_ int, doc *buffer.Document, eff options.Effective) Estimate {
	name, params, pcfg := h.request(eff)
	signer := provider.Signer(name, pcfg.Wire)
	tools := h.toolDefs(eff)
	info := h.modelInfo(name, params.Model)
	e := Estimate{Provider: name, Model: h.modelName(name, params.Model), Window: info.ContextWindow,
		Tokens: provider.EstimateDocument(doc, signer, tools), Threshold: h.compactThreshold()}
	if doc.Summary != nil {
		e.SummaryLine = doc.Summary.StartLine
		e.WholeTokens = provider.EstimateDocument(doc.Whole(), signer, tools)
		for _, m := range doc.Messages {
			if doc.Compacted(m.EndLine) && (m.Role == "You" || m.Role == "Assistant") {
				e.Omitted++
			}
		}
	}
	return e
}

// String is the estimate as :Flemma status shows it.
func (e Estimate) String() string {
	s := "next send: about " + thousands(e.Tokens) + " tokens"
	if e.Window > 0 {
		s += fmt.Sprintf(" (%d%% of %s's %s-token window)", e.Tokens*100/e.Window, e.Model, thousands(e.Window))
	}
	if e.SummaryLine > 0 {
		s += fmt.Sprintf("; compacted: the summary on line %d replaces %d messages (about %s tokens without it)", e.SummaryLine, e.Omitted, thousands(e.WholeTokens))
	}
	return s
}

// compactThreshold is send.compact_threshold (0: never offer).
func (h *Engine) compactThreshold() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.cfg.Send.CompactThreshold; t != nil {
		return max(*t, 0)
	}
	return DefaultCompactThreshold
}

// offerCompact decides whether a send of tokens (estimated) is held once
// to offer compaction: when it reaches send.compact_threshold of the
// model's window. Holding is said, never done silently, and never twice
// for the same text: pressing again without a change sends as it is, and
// then the buffer is not asked again until the send would overflow the
// window itself (or a compaction starts over). "" when the send goes.
func (h *Engine) offerCompact(bufnr, tick, tokens int, model string, window int) string {
	thr := h.compactThreshold()
	if window <= 0 || thr <= 0 {
		return ""
	}
	level := 0
	switch {
	case tokens >= window:
		level = 2
	case float64(tokens) >= thr*float64(window):
		level = 1
	default:
		return ""
	}
	st := h.session(bufnr)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.compactDeclined >= level {
		return ""
	}
	if st.compactOffered == tick && tick != 0 {
		st.compactDeclined = level // asked about this very text: the user sends anyway
		return ""
	}
	st.compactOffered = tick
	pct := tokens * 100 / window
	if level == 2 {
		return overWindow(tokens, model, window)
	}
	return fmt.Sprintf("This send is about %s tokens, %d%% of %s's %s-token window (send.compact_threshold = %g). :Flemma compact summarizes the conversation first; <C-]> again sends it as it is.", thousands(tokens), pct, model, thousands(window), thr)
}
