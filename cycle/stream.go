package cycle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/trust"
)

// streamWrite replaces the response region [r, r+prev) of a buffer,
// checking changedtick: the buffer is locked while streaming, so a change
// means something else edited it. A response's region is the end of the
// buffer; a compaction summary's has the user's text after it (tail).
type streamWrite struct {
	h     *Engine
	bufnr int
	base  []string // the buffer before the response
	tail  []string // the lines after the region (a compaction's; nil for a response)
	tick  int
	r     int
	prev  int      // lines of the region now
	last  []string // what the region holds since the last write
	model string   // the model the request goes to (the provider's default named), for the progress
}

func (sw *streamWrite) write(lines []string, final, first bool, records ...WireRecord) error {
	// Windows on the last line follow the answer; the first write brings
	// it into view where the user has not moved the cursor since the press
	// (docs/design.md, "flemma never takes the cursor").
	opts := ApplyOpts{Join: !first, UndoBreak: first, Records: records, Follow: true}
	locked := final
	opts.Modifiable = &locked
	for attempt := 0; attempt < 5; attempt++ {
		if first {
			opts.Cursor = sw.r + len(lines)
		}
		edit := buffer.Edit{Start: sw.r, End: sw.r + sw.prev, Lines: lines}
		res, err := sw.h.apply(sw.bufnr, sw.tick, []buffer.Edit{edit}, opts)
		if err != nil {
			return err
		}
		if res.OK {
			sw.h.session(sw.bufnr).commit(records, res.Tick, res.Seq)
			sw.tick, sw.prev, sw.last = res.Tick, len(lines), lines
			if final {
				all := append(append(append([]string{}, sw.base...), lines...), sw.tail...)
				sw.h.remember(sw.bufnr, res.Tick, all, nil)
			}
			return nil
		}
		// Something changed the buffer although it is locked (another
		// plugin, :set modifiable): find the response region again rather
		// than cut the response.
		s, err := sw.h.session(sw.bufnr).snapshot()
		if err != nil {
			return err
		}
		if err := sw.reanchor(s.Lines); err != nil {
			return err
		}
		sw.tick = s.Tick
	}
	return errors.New("the buffer kept changing while the response was streaming")
}

// reanchor finds the response region in the buffer as it is now. With the
// text before it intact, the region is everything after it (the response
// owns the end of the buffer; what was typed into it is replaced). Else,
// when the region's lines are still at the end of the buffer, the text
// before them is the new base.
func (sw *streamWrite) reanchor(now []string) error {
	if sw.tail != nil {
		// Between the same text before and after: the region is what
		// lies between them.
		if n := len(now) - len(sw.tail); n >= sw.r && equal(now[:sw.r], sw.base) && equal(now[n:], sw.tail) {
			sw.prev = n - sw.r
			return nil
		}
		return errors.New("the buffer was changed around the summary being written; the rest of it was not written")
	}
	if len(now) >= sw.r && equal(now[:sw.r], sw.base) {
		sw.prev = len(now) - sw.r
		return nil
	}
	if n := len(sw.last); len(now) >= n && equal(now[len(now)-n:], sw.last) {
		sw.r = len(now) - n
		sw.base = append([]string(nil), now[:sw.r]...)
		sw.prev = n
		return nil
	}
	return errors.New("the buffer was changed where the response was being written; the rest of the response was not written")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// stream runs the request and writes the response as it arrives, at most
// one buffer update per flushEvery.
func (h *Engine) stream(ctx context.Context, prov provider.Provider, req provider.Request, w *provider.Writer, sw *streamWrite) {
	var (
		dirty      bool
		writeErr   error
		toolUses   int
		usage      *provider.Usage
		unreadable int
		flushes    int
		started    = time.Now()
		received   = map[string]bool{} // ids of the structured tool calls of this response
		prog       = newProgressMeter(h.session(sw.bufnr), prov.Name(), sw.model, started)
	)
	flush := func() {
		if !dirty || writeErr != nil {
			return
		}
		dirty = false
		flushes++
		if err := sw.write(w.Lines(), false, false); err != nil {
			writeErr = err
			h.session(sw.bufnr).cancelStream()
		}
	}
	add := func(e provider.Event) {
		w.Add(e)
		dirty = true
		switch e.Kind {
		case provider.EventThinking:
			prog.thinking(e.Text)
		case provider.EventText, provider.EventToolUse:
			prog.answering(e.Text)
		}
		switch e.Kind {
		case provider.EventToolUse:
			toolUses++
			if e.ToolUse != nil {
				received[e.ToolUse.ID] = true
			}
			flush()
		case provider.EventUsage:
			usage = e.Usage
		case provider.EventUnreadable:
			// Never dropped in silence: the raw text goes to the log, the
			// user is told once, and the Writer marks the answer cut.
			unreadable++
			h.logf("send: %s: piece %d of the stream could not be read (%s): %s", prov.Name(), unreadable, e.Detail, logCut(e.Text, 4096))
			if unreadable == 1 {
				h.notify(prov.Name()+": a piece of the response could not be read; the answer is marked incomplete and its raw text is in the log (:Flemma log).", levelWarn)
			}
		}
	}
	streamErr := h.pump(ctx, sw.bufnr, prov, req, add, func() { flush(); prog.report() })
	var final []string
	switch {
	case writeErr != nil:
		final = w.FinishError(writeErr)
		streamErr = writeErr
	case streamErr == nil:
		final = w.Finish(false)
	case errors.Is(streamErr, context.Canceled):
		final = w.Finish(true)
	default:
		final = w.FinishError(streamErr)
	}
	if err := sw.write(final, true, false, h.session(sw.bufnr).receivedRecords(final, received)...); err != nil {
		h.logf("send: final write: %v", err)
		h.notify("could not write the end of the response: "+err.Error(), levelError)
		h.session(sw.bufnr).setModifiable(true)
	}
	h.logf("send: done in %s, %d buffer updates, %d tool calls, usage %+v, err %v", time.Since(started), flushes+2, toolUses, usage, streamErr)
	cost, costKnown := responseCost(usage, req.ModelInfo)
	st := h.session(sw.bufnr)
	st.mu.Lock()
	st.lastUsage = usage
	st.lastFlushes = flushes + 2
	st.usage.add(usage, cost, costKnown)
	st.mu.Unlock()
	h.addUsage(usage, cost, costKnown)
	h.session(sw.bufnr).progress(Progress{Provider: prov.Name(), Model: sw.model})
	end := requestEnd(RequestEvent{Bufnr: sw.bufnr, Provider: prov.Name(), Model: req.Params.Model,
		StopReason: w.StopReason(), Usage: usageEvent(usage), DurationMS: time.Since(started).Milliseconds()}, cost, costKnown, streamErr)
	switch {
	case end.Status != "ok":
	case w.Cut() != "":
		end.Status = "cut"
	case len(final) == 0:
		// Nothing written: the model's answer was empty.
		end.Status = "empty"
	}
	h.session(sw.bufnr).endStream()
	h.event("FlemmaRequestEnd", end)
	switch {
	case errors.Is(streamErr, context.Canceled):
		h.notify("Response interrupted.", levelWarn)
		return
	case streamErr != nil:
		h.notify(streamErr.Error(), levelError)
		return
	}
	if usage != nil {
		h.notify(h.usageLine(prov.Name(), usage, cost, costKnown), levelInfo)
	}
	if end.Status == "empty" {
		out := 0
		if usage != nil {
			out = usage.OutputTokens
		}
		h.notify(fmt.Sprintf("%s: the model's answer was empty (stop reason %q, %d output tokens); nothing was written. Press <C-]> to ask again.", prov.Name(), w.StopReason(), out), levelWarn)
		return
	}
	if cut := w.Cut(); cut != "" {
		// Cut at the output limit, filtered, or ended inside a tool call:
		// its calls get error results on the next press, and autopilot
		// does not go on by itself.
		h.notify(cut+" Autopilot stops here: press <C-]> to go on.", levelWarn)
		return
	}
	if toolUses > 0 {
		h.session(sw.bufnr).autopilotContinue()
	}
}

// receivedRecords are the records of the tool calls a response brought as
// structured calls: their content as the buffer will show it (the final
// lines of the response), so that exactly these calls count as the
// provider's (trust.Ledger.FromProvider).
func (sess *session) receivedRecords(final []string, ids map[string]bool) []WireRecord {
	if len(ids) == 0 {
		return nil
	}
	var out []WireRecord
	sess.mu.Lock()
	defer sess.mu.Unlock()
	l := sess.trustOf().ledger
	for _, u := range parse(final).ToolUses() {
		if ids[u.ID] {
			r := l.Get(u.ID)
			r.Received = trust.CallHash(u)
			out = append(out, toWire(r))
		}
	}
	return out
}

// requestEnd is the FlemmaRequestEnd event of a response that ended with
// streamErr: its status "cancelled", "error" or (for the caller to refine)
// "ok", and its cost when known.
func requestEnd(end RequestEvent, cost float64, costKnown bool, streamErr error) RequestEvent {
	if costKnown {
		end.CostUSD = &cost
	}
	switch {
	case errors.Is(streamErr, context.Canceled):
		end.Status = "cancelled"
	case streamErr != nil:
		end.Status, end.Error = "error", streamErr.Error()
	default:
		end.Status = "ok"
	}
	return end
}

// progressMeter is a response's progress as it streams: what the events
// add, and when to tell the user (report).
type progressMeter struct {
	sess        *session
	started, at time.Time
	now, sent   Progress
}

func newProgressMeter(sess *session, provider, model string, started time.Time) *progressMeter {
	p := Progress{Phase: "waiting", Provider: provider, Model: model}
	return &progressMeter{sess: sess, started: started, at: started, now: p, sent: p}
}

// thinking counts reasoning text; the first makes the phase "thinking".
func (m *progressMeter) thinking(text string) {
	m.now.ThinkingChars += len([]rune(text))
	if m.now.Phase == "waiting" {
		m.now.Phase = "thinking"
	}
}

// answering counts answer text (or a call's); the phase is "answering".
func (m *progressMeter) answering(text string) {
	m.now.TextChars += len([]rune(text))
	m.now.Phase = "answering"
}

// report sends the progress when its phase changed, or when its counts
// did and progressEvery passed.
func (m *progressMeter) report() {
	if m.now == m.sent || (m.now.Phase == m.sent.Phase && time.Since(m.at) < progressEvery) {
		return
	}
	m.sent, m.at = m.now, time.Now()
	p := m.now
	p.ElapsedMS = time.Since(m.started).Milliseconds()
	m.sess.progress(p)
}

// cancelStream cancels the response being received, if any.
func (st *session) cancelStream() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.streaming == nil {
		return false
	}
	st.streaming()
	return true
}

// endStream marks the response done (written, or failed).
func (st *session) endStream() {
	st.mu.Lock()
	if st.streaming != nil {
		st.streaming() // release the request's context (a no-op once it ended)
		st.streaming = nil
		st.move(evStreamDone)
	}
	st.mu.Unlock()
}

// logCut bounds a raw piece of a stream for the log.
func logCut(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// pump runs one streaming request: its events go to add, in order, and
// onTick runs every flushEvery while it streams; once the request ended
// (its error returned), the events still queued are added and the buffer's
// press waits for the end instead of being told a request is in progress
// (the user may already see the answer). send and compact stream through it.
func (h *Engine) pump(ctx context.Context, bufnr int, prov provider.Provider, req provider.Request, add func(provider.Event), onTick func()) error {
	events := make(chan provider.Event, 1024)
	done := make(chan error, 1)
	go func() { done <- prov.Stream(ctx, req, func(e provider.Event) { events <- e }) }()
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	var streamErr error
loop:
	for {
		select {
		case e := <-events:
			add(e)
		case <-tick.C:
			onTick()
		case streamErr = <-done:
			break loop
		}
	}
	for len(events) > 0 {
		add(<-events)
	}
	st := h.session(bufnr)
	st.mu.Lock()
	st.move(evStreamEnds)
	st.mu.Unlock()
	return streamErr
}
