package cycle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/shlex"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/trust"
)

// flushEvery bounds buffer updates while a response streams in.
const flushEvery = 16 * time.Millisecond

// progressEvery bounds the progress updates of a request (the editor
// animates the spinner and the elapsed time by itself in between).
const progressEvery = 250 * time.Millisecond

// usageTotal sums the token accounting of responses, and their cost where
// the model's prices are known.
type usageTotal struct {
	Requests int
	provider.Usage
	Cost     float64 // US dollars, of the responses whose prices are known
	Priced   int     // responses with usage and known prices
	Unpriced int     // responses with usage but no known prices
}

func (u *usageTotal) add(x *provider.Usage, cost float64, known bool) {
	u.Requests++
	if x == nil {
		return
	}
	if known {
		u.Cost += cost
		u.Priced++
	} else {
		u.Unpriced++
	}
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.CacheReadTokens += x.CacheReadTokens
	u.CacheWriteTokens += x.CacheWriteTokens
	u.ThinkingTokens += x.ThinkingTokens
	u.WebSearches += x.WebSearches
}

func (u usageTotal) String() string {
	s := fmt.Sprintf("%d responses · %s input · %s output tokens", u.Requests, thousands(u.InputTokens), thousands(u.OutputTokens))
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(" · cache %s read, %s written", thousands(u.CacheReadTokens), thousands(u.CacheWriteTokens))
	}
	if u.ThinkingTokens > 0 {
		s += fmt.Sprintf(" · %s reasoning", thousands(u.ThinkingTokens))
	}
	if u.WebSearches > 0 {
		s += fmt.Sprintf(" · %s web searches", thousands(u.WebSearches))
	}
	switch {
	case u.Priced > 0 && u.Unpriced == 0:
		s += " · " + dollars(u.Cost)
	case u.Priced > 0:
		s += fmt.Sprintf(" · %s (%d responses without known prices)", dollars(u.Cost), u.Unpriced)
	}
	return s
}

// dollars writes a cost: cents under a dollar keep four decimals ($0.0123).
func dollars(c float64) string {
	if c < 1 {
		return fmt.Sprintf("$%.4f", c)
	}
	return fmt.Sprintf("$%.2f", c)
}

// thousands writes n with a comma every three digits (1,204).
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func usageEvent(u *provider.Usage) *UsageEvent {
	if u == nil {
		return nil
	}
	return &UsageEvent{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ThinkingTokens, WebSearches: u.WebSearches}
}

// progress reports a request's progress to the editor.
func (h *Engine) progress(bufnr int, p Progress) {
	if err := h.ed.Progress(bufnr, p); err != nil {
		h.logf("progress: %v", err)
	}
}

// request is the provider, model and parameters of one send, from the
// buffer's effective options.
func (h *Engine) request(e options.Effective) (string, provider.Params, provider.Config) {
	p := provider.Params{Model: e.Model, MaxTokens: e.MaxTokens, Temperature: e.Temperature,
		CacheRetention: e.CacheRetention, Thinking: e.Thinking, Extra: e.Extra}
	pc := provider.Config{BaseURL: e.Endpoint.BaseURL, ReplayFile: e.Endpoint.ReplayFile, Project: e.Endpoint.Project, Location: e.Endpoint.Location}
	// send.timeouts: 0 is no limit, which the provider spells negative.
	noLimit := func(d time.Duration) time.Duration {
		if d <= 0 {
			return -1
		}
		return d
	}
	pc.FirstByteTimeout, pc.IdleTimeout, pc.Timeout = noLimit(e.Timeouts.FirstByte), noLimit(e.Timeouts.Idle), noLimit(e.Timeouts.Total)
	endpointConfig(&pc, e.Provider, e.Endpoint)
	pc.Copilot = copilotConfig(e.DataDir, e.Endpoint)
	return e.Provider, p, pc
}

// retrying wraps a buffer's provider with send.retries: each retry is told
// to the user (with the wait and the attempt), and <C-c> ends the wait.
func (h *Engine) retrying(prov provider.Provider, e options.Effective) provider.Provider {
	return provider.WithRetry(prov, provider.Retry{
		Retries: e.Retry.Retries, Delay: e.Retry.Delay, MaxDelay: e.Retry.MaxDelay,
		Jitter: h.jitter, Sleep: h.sleep,
		OnRetry: func(n provider.RetryNotice) {
			h.logf("send: %s", n)
			h.notify(n.String()+"; <C-c> cancels", levelWarn)
		},
	})
}

// endpointConfig adds a provider's wire, credential source, headers and
// extra body (setup's providers.<name>, never a frontmatter's) to pc.
func endpointConfig(pc *provider.Config, name string, ep options.Endpoint) {
	pc.Wire, pc.KeyHeader, pc.Headers, pc.ExtraBody, pc.Reasoning = ep.Wire, ep.APIKeyHeader, ep.Headers, ep.ExtraBody, ep.Reasoning
	if ep.KeySet {
		pc.Key = &provider.KeySource{Env: ep.APIKeyEnv, Cmd: ep.APIKeyCmd, CacheTTL: ep.APIKeyCache, Timeout: ep.APIKeyTimeout}
	} else if len(ep.APIKeyCmd) > 0 || ep.APIKeyCache != 0 || ep.APIKeyTimeout != 0 {
		src := provider.DefaultKeySource(name)
		if len(ep.APIKeyCmd) > 0 {
			src.Cmd = ep.APIKeyCmd
		}
		pc.Key = &src
	}
	if pc.Key != nil {
		if ep.APIKeyCache != 0 {
			pc.Key.CacheTTL = ep.APIKeyCache
		}
		if ep.APIKeyTimeout != 0 {
			pc.Key.Timeout = ep.APIKeyTimeout
		}
	}
}

// toolDefs are the definitions of the tools a buffer sends.
func (h *Engine) toolDefs(e options.Effective) []provider.ToolDef {
	var out []provider.ToolDef
	for _, n := range e.Tools {
		t, ok := h.Registry.Lookup(n)
		if !ok {
			continue
		}
		s := t.Spec()
		out = append(out, provider.ToolDef{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema, Strict: s.Strict})
	}
	return out
}

// startSend is phase 3: the conversation goes to the provider and the
// response streams into the buffer. auto is true when autopilot sends.
func (h *Engine) startSend(bufnr int, auto bool) (Reply, error) {
	s, err := h.snapshot(bufnr)
	if err != nil {
		return Reply{}, err
	}
	doc := h.parse(bufnr, s)
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil {
			return reply("send", fmt.Sprintf("Cannot send: the tool call %s (%s) on line %d has no result yet. Press <C-]> to categorize it.", tu.Name, tu.ID, tu.HeaderLine), levelError), nil
		}
		if r.Status != "" {
			h.mu.Lock()
			running := h.state(bufnr).running[tu.ID] != nil
			h.mu.Unlock()
			if running {
				return reply("send", fmt.Sprintf("Cannot send yet: the tool call %s (%s) on line %d is running; its result comes first (<C-c> cancels it).", tu.Name, tu.ID, tu.HeaderLine), levelWarn), nil
			}
			return reply("send", fmt.Sprintf("Cannot send: the tool call %s (%s) on line %d is still %s.", tu.Name, tu.ID, r.HeaderLine, r.Status), levelError), nil
		}
	}
	fm := h.evalFrontmatter(bufnr, doc)
	if fm.Blocking() {
		return h.blocked(bufnr, diagnostics(doc, fm, h.notesOf(bufnr)))
	}
	eff := h.effective(bufnr, fm)
	h.logRefused(bufnr, eff)
	name, params, pcfg := h.request(eff)
	// Whose thinking signatures the request may carry: the wire's, or the
	// Chat Completions server's own.
	system, msgs, err := provider.FromDocument(doc, provider.Signer(name, pcfg.Wire))
	if err != nil {
		return reply("send", "Cannot send: "+err.Error(), levelError), nil
	}
	if len(msgs) == 0 {
		return reply("send", "Nothing to send: write a message under @You: first.", levelWarn), nil
	}
	if work := len(provider.Files(msgs)) > 0 || hasExprs(msgs); work || h.hadAttachDiags(bufnr) {
		r, stop := h.attach(bufnr, doc, fm, s, msgs, work)
		if stop {
			return r, nil
		}
	}
	prov, err := h.providers(name, pcfg)
	if err != nil {
		return reply("send", err.Error(), levelError), nil
	}
	prov = h.retrying(prov, eff)
	if ok, src := provider.CredentialStatus(name, pcfg); !ok {
		// Say so before touching the buffer.
		if strings.HasPrefix(src, "$") && !strings.Contains(src, "command") {
			return reply("send", fmt.Sprintf("%s: no credential: set %s in the environment Neovim starts from. Nothing was sent.", name, strings.ReplaceAll(strings.TrimPrefix(src, "$"), " or $", " or ")), levelError), nil
		}
		return reply("send", fmt.Sprintf("%s: no credential: %s. Nothing was sent.", name, src), levelError), nil
	}
	info := h.modelInfo(name, params.Model)
	req := provider.Request{System: system, Messages: msgs, Tools: h.toolDefs(eff), Params: params, ModelInfo: &info,
		Web: provider.WebTools{Search: eff.WebSearch, Fetch: eff.WebFetch, SearchUses: eff.WebSearchUses, FetchUses: eff.WebFetchUses}}
	if offer := h.offerCompact(bufnr, s.Tick, provider.EstimateRequest(req), h.modelName(name, params.Model), info.ContextWindow); offer != "" {
		return reply("offer", offer, levelWarn), nil // told, never done silently: the next press sends
	}
	h.noteWeb(name, req.Web)

	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	st := h.state(bufnr)
	if st.streaming != nil {
		h.mu.Unlock()
		cancel()
		return reply("busy", "A request is already in progress. Use <C-c> to cancel it first.", levelWarn), nil
	}
	st.streaming = cancel
	if !auto {
		st.turns = 0
		st.disarmed = false
	}
	h.mu.Unlock()

	last := s.Lines
	if len(last) > 3 {
		last = last[len(last)-3:]
	}
	w := provider.NewWriter(last)
	sw := &streamWrite{h: h, bufnr: bufnr, base: s.Lines, tick: s.Tick, r: len(s.Lines), last: []string{}, model: h.modelName(name, params.Model)}
	if err := sw.write(w.Lines(), false, true); err != nil {
		h.endStream(bufnr)
		return Reply{}, err
	}
	h.logf("send: %s model=%q (catalogue: %s, known %v), %d messages, %d tools", name, h.modelName(name, params.Model), info.Name, info.Known, len(msgs), len(req.Tools))
	h.noteModel(name, params, info)
	h.event("FlemmaRequestStart", RequestEvent{Bufnr: bufnr, Provider: prov.Name(), Model: params.Model})
	h.progress(bufnr, Progress{Phase: "waiting", Provider: prov.Name(), Model: sw.model})
	h.background(bufnr, func() { h.stream(ctx, prov, req, w, sw) })
	return reply("send", "", 0), nil
}

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
			sw.h.commit(sw.bufnr, records, res.Tick, res.Seq)
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
		s, err := sw.h.snapshot(sw.bufnr)
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
		prog       = Progress{Phase: "waiting", Provider: prov.Name(), Model: sw.model}
		progSent   = prog
		progAt     = started
	)
	// report sends the progress when its phase changed, or when its
	// counts did and progressEvery passed.
	report := func() {
		if prog == progSent || (prog.Phase == progSent.Phase && time.Since(progAt) < progressEvery) {
			return
		}
		progSent, progAt = prog, time.Now()
		p := prog
		p.ElapsedMS = time.Since(started).Milliseconds()
		h.progress(sw.bufnr, p)
	}
	flush := func() {
		if !dirty || writeErr != nil {
			return
		}
		dirty = false
		flushes++
		if err := sw.write(w.Lines(), false, false); err != nil {
			writeErr = err
			h.cancelStream(sw.bufnr)
		}
	}
	add := func(e provider.Event) {
		w.Add(e)
		dirty = true
		switch e.Kind {
		case provider.EventThinking:
			prog.ThinkingChars += len([]rune(e.Text))
			if prog.Phase == "waiting" {
				prog.Phase = "thinking"
			}
		case provider.EventText, provider.EventToolUse:
			prog.TextChars += len([]rune(e.Text))
			prog.Phase = "answering"
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
	streamErr := h.pump(ctx, sw.bufnr, prov, req, add, func() { flush(); report() })
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
	if err := sw.write(final, true, false, h.receivedRecords(sw.bufnr, final, received)...); err != nil {
		h.logf("send: final write: %v", err)
		h.notify("could not write the end of the response: "+err.Error(), levelError)
		h.setModifiable(sw.bufnr, true)
	}
	h.logf("send: done in %s, %d buffer updates, %d tool calls, usage %+v, err %v", time.Since(started), flushes+2, toolUses, usage, streamErr)
	var cost float64
	costKnown := false
	if usage != nil && req.ModelInfo != nil {
		cost, costKnown = req.ModelInfo.Prices.Cost(*usage)
	}
	h.mu.Lock()
	st := h.state(sw.bufnr)
	st.lastUsage = usage
	st.lastFlushes = flushes + 2
	st.usage.add(usage, cost, costKnown)
	h.usage.add(usage, cost, costKnown)
	h.mu.Unlock()
	h.progress(sw.bufnr, Progress{Provider: prov.Name(), Model: sw.model})
	end := RequestEvent{Bufnr: sw.bufnr, Provider: prov.Name(), Model: req.Params.Model, Status: "ok",
		StopReason: w.StopReason(), Usage: usageEvent(usage), DurationMS: time.Since(started).Milliseconds()}
	if costKnown {
		end.CostUSD = &cost
	}
	switch {
	case errors.Is(streamErr, context.Canceled):
		end.Status = "cancelled"
	case streamErr != nil:
		end.Status, end.Error = "error", streamErr.Error()
	case w.Cut() != "":
		end.Status = "cut"
	case len(final) == 0:
		// Nothing written: the model's answer was empty.
		end.Status = "empty"
	}
	h.endStream(sw.bufnr)
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
		msg := fmt.Sprintf("%s: %d input · %d output tokens", prov.Name(), usage.InputTokens, usage.OutputTokens)
		if usage.CacheReadTokens > 0 || usage.CacheWriteTokens > 0 {
			// The statusline's "in" counts the cache reads too: say them.
			msg += fmt.Sprintf(" · cache %d read, %d written", usage.CacheReadTokens, usage.CacheWriteTokens)
		}
		if usage.WebSearches > 0 {
			msg += fmt.Sprintf(" · %d web searches", usage.WebSearches)
		}
		if costKnown {
			msg += " · " + dollars(cost)
		}
		h.notify(msg, levelInfo)
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
		h.autopilotContinue(sw.bufnr)
	}
}

// receivedRecords are the records of the tool calls a response brought as
// structured calls: their content as the buffer will show it (the final
// lines of the response), so that exactly these calls count as the
// provider's (trust.Ledger.FromProvider).
func (h *Engine) receivedRecords(bufnr int, final []string, ids map[string]bool) []WireRecord {
	if len(ids) == 0 {
		return nil
	}
	var out []WireRecord
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.trustOf(bufnr).ledger
	for _, u := range parse(final).ToolUses() {
		if ids[u.ID] {
			r := l.Get(u.ID)
			r.Received = trust.CallHash(u)
			out = append(out, toWire(r))
		}
	}
	return out
}

// autopilotContinue chains the next cycle after a response with tool calls.
func (h *Engine) autopilotContinue(bufnr int) {
	eff := h.effective(bufnr, nil)
	on, max := eff.Autopilot, eff.MaxTurns
	h.mu.Lock()
	st := h.state(bufnr)
	if !on || st.disarmed {
		h.mu.Unlock()
		return
	}
	if st.turns >= max {
		h.mu.Unlock()
		h.notify(fmt.Sprintf("Autopilot stopped after %d consecutive turns (tools.autopilot.max_turns = %d). Press <C-]> to go on.", st.turns, max), levelWarn)
		return
	}
	st.turns++
	h.mu.Unlock()
	h.autoCycle(bufnr)
}

// autoCycle runs the next phase on autopilot's behalf and shows its message.
func (h *Engine) autoCycle(bufnr int) { h.autoCycleAs(bufnr, true) }

// autoCycleAs runs the next phase in the background (autopilot's, or a
// queued press of the user's) and shows its message.
func (h *Engine) autoCycleAs(bufnr int, auto bool) {
	if h.closingNow() {
		return // a host that is stopping starts nothing new
	}
	res, err := h.cycle(bufnr, auto)
	if err != nil {
		h.notify(err.Error(), levelError)
		return
	}
	if res.Message != "" {
		h.notify(res.Message, res.Level)
	}
}

func (h *Engine) cancelStream(bufnr int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(bufnr)
	if st.streaming == nil {
		return false
	}
	st.streaming()
	return true
}

func (h *Engine) endStream(bufnr int) {
	h.mu.Lock()
	if st := h.bufs[bufnr]; st != nil && st.streaming != nil {
		st.streaming() // release the request's context (a no-op once it ended)
		st.streaming = nil
		st.streamEnds = false
	}
	h.mu.Unlock()
}

func (h *Engine) Autopilot(action string) (Reply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch action {
	case "enable", "disable":
		on := action == "enable"
		h.rt.Autopilot = &on
	case "status":
	default:
		return reply("none", "usage: :Flemma autopilot:enable|disable|status", levelWarn), nil
	}
	e := options.Resolve(h.cfg, h.rt, options.Buffer{})
	state := map[bool]string{true: "enabled", false: "disabled"}[e.Autopilot]
	return reply("autopilot", fmt.Sprintf("Autopilot %s (max_turns %d; a buffer's flemma.opt.tools.autopilot overrides this).", state, e.MaxTurns), levelInfo), nil
}

// Switch is :Flemma switch <provider> [model] [key=value…].
func (h *Engine) Switch(args string) (Reply, error) {
	words, err := shlex.Split(args)
	if err != nil {
		return reply("none", "switch: "+err.Error(), levelError), nil
	}
	if len(words) == 0 {
		h.mu.Lock()
		names := h.cfg.ProviderNames()
		h.mu.Unlock()
		return reply("none", "usage: :Flemma switch <provider> [model] [key=value…] (providers: "+strings.Join(names, ", ")+")", levelWarn), nil
	}
	name := words[0]
	h.mu.Lock()
	defer h.mu.Unlock()
	names := h.cfg.ProviderNames()
	known := false
	for _, n := range names {
		known = known || n == name
	}
	if !known {
		return reply("none", fmt.Sprintf("unknown provider %q (known: %s)", name, strings.Join(names, ", ")), levelError), nil
	}
	model := ""
	rest := words[1:]
	if len(rest) > 0 && !strings.Contains(rest[0], "=") {
		model = rest[0]
		rest = rest[1:]
	}
	if s := provider.SuggestModel(h.cfg.Wire(name), model, toOverrides(h.cfg.Models), h.cfg.Providers[name].Model); s != "" {
		return reply("none", fmt.Sprintf("switch: unknown model %q for %s — did you mean %s? (Nothing was changed. A model flemma does not know is taken when its name is not this close to a known one; models = { [%q] = {…} } in setup() declares it.)", model, name, s, model), levelError), nil
	}
	rt := h.rt
	rt.Provider = name
	rt.Model = &model
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return reply("none", fmt.Sprintf("switch: %q is not key=value", kv), levelError), nil
		}
		switch k {
		case "max_tokens":
			n, err := strconv.Atoi(v)
			if err != nil {
				return reply("none", "switch: max_tokens must be a number", levelError), nil
			}
			rt.MaxTokens = &n
		case "temperature":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return reply("none", "switch: temperature must be a number", levelError), nil
			}
			rt.Temperature = &f
		case "thinking":
			rt.Thinking = &v
		case "cache_retention":
			rt.CacheRetention = &v
		default:
			return reply("none", fmt.Sprintf("switch: unknown parameter %q (max_tokens, temperature, thinking, cache_retention)", k), levelError), nil
		}
	}
	h.rt = rt
	return reply("switch", fmt.Sprintf("Provider %s, model %s.", name, modelLabel(h.cfg, name, model)), levelInfo), nil
}

// Send is phase 3 on the user's word (:Flemma send).
func (h *Engine) Send(bufnr int) (Reply, error) {
	if r, ok := h.sourcesGate(bufnr, waitSend, false); !ok {
		return r, nil // it sends when the tool sources are ready (sources.go)
	}
	return h.startSend(bufnr, false)
}

// logCut bounds a raw piece of a stream for the log.
func logCut(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// noteWeb says once per provider when web tools are on but its wire has
// none (Chat Completions servers, the replay script).
func (h *Engine) noteWeb(name string, w provider.WebTools) {
	if !w.Search && !w.Fetch {
		return
	}
	wire := h.wire(name)
	if search, fetch := provider.WireWeb(wire); search {
		if w.Fetch && !fetch && !w.Search {
			h.noteOnce("webfetch "+name, name+": tools.web_fetch is Anthropic's only (flemma's fetch tool works with every provider).")
		}
		return
	}
	h.noteOnce("web "+name, name+": the provider's web search is not available on "+wire+"; tools.web_search is ignored here (flemma's fetch tool works with every provider).")
}

// noteOnce tells the user msg once per host and key.
func (h *Engine) noteOnce(key, msg string) {
	h.mu.Lock()
	if h.noted == nil {
		h.noted = map[string]bool{}
	}
	seen := h.noted[key]
	h.noted[key] = true
	h.mu.Unlock()
	if !seen {
		h.notify(msg, levelInfo)
	}
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
	h.mu.Lock()
	h.state(bufnr).streamEnds = true
	h.mu.Unlock()
	return streamErr
}
