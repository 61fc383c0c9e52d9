package cycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

func parse(lines []string) *buffer.Document { return buffer.Parse(lines) }

// errBlocked stops a step whose buffer must not be acted on; the
// diagnostics explaining why have been published already.
var errBlocked = errors.New("blocked")

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func (h *Engine) running(bufnr int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.bufs[bufnr]; st != nil {
		return len(st.running)
	}
	return 0
}

// evalFrontmatter evaluates (cached) the buffer's frontmatter and remembers
// the result for the approval chain.
func (h *Engine) evalFrontmatter(bufnr int, doc *buffer.Document) *frontmatter.Result {
	var src frontmatter.Source
	if fm := doc.Frontmatter; fm != nil {
		src = frontmatter.Source{Language: fm.Language, Code: fm.Code, StartLine: fm.StartLine}
	}
	h.mu.Lock()
	cfg, presets := h.cfg, h.presets
	h.mu.Unlock()
	// The built-in presets and the user's (presets.Names), and the alias.
	setup := frontmatter.Setup{KnownTools: h.Registry.Names(), Presets: append(presets.Names(), approval.PresetStandard), Providers: cfg.ProviderNames()}
	setup.Tools = h.usableTools()
	if list, ok := cfg.AutoApproveList(); ok {
		setup.AutoApprove = list
	}
	res := h.fm.Evaluate(src, setup)
	h.mu.Lock()
	h.state(bufnr).fm = res
	h.mu.Unlock()
	return res
}

// diagnostics merges parser and frontmatter diagnostics for vim.diagnostic.
func diagnostics(doc *buffer.Document, fm *frontmatter.Result, notes map[string]string) []Diag {
	out := []Diag{}
	for _, d := range doc.Diagnostics {
		out = append(out, Diag{Lnum: d.Line, Col: d.Col, Severity: strings.ToLower(fmt.Sprint(d.Severity)), Message: d.Message})
	}
	if fm != nil {
		for _, d := range fm.Diagnostics {
			out = append(out, Diag{Lnum: d.Line, Severity: d.Severity, Message: "frontmatter: " + d.Message})
		}
	}
	for id, note := range notes {
		u := doc.Use(id)
		if r := doc.Result(id); u == nil || r != nil && r.Status == "" {
			continue // the call has its result now
		}
		out = append(out, Diag{Lnum: u.HeaderLine, Severity: "warning", Message: note})
	}
	return out
}

// notesOf returns a copy of the buffer's notes on calls (shown as
// diagnostics on their headers until they have a result).
func (h *Engine) notesOf(bufnr int) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for id, n := range h.state(bufnr).notes {
		out[id] = n
	}
	return out
}

// note attaches a note to a call of the buffer.
func (h *Engine) note(bufnr int, id, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(bufnr)
	if st.notes == nil {
		st.notes = map[string]string{}
	}
	st.notes[id] = text
}

// Cycle runs the next phase of the cycle that applies (<C-]>): the
// user's press, which resets the autopilot counter.
func (h *Engine) Cycle(bufnr int) (Reply, error) {
	return h.cycle(bufnr, false)
}

func (h *Engine) cycle(bufnr int, auto bool) (Reply, error) {
	// The request this press may send, and the calls it categorizes, need
	// every tool source ready: the MCP servers' tools (the first press
	// starts them) and the async Lua sources (the step waits for them).
	if r, ok := h.sourcesGate(bufnr, waitCycle, auto); !ok {
		return r, nil
	}
	if !auto {
		// A press while a step is being planned and written (a moment)
		// runs when that step ends: one queued press per buffer, repeats
		// coalesce. Presses while tools run or a response streams are
		// answered at once.
		h.mu.Lock()
		st := h.state(bufnr)
		if st.cycling && st.streaming == nil && len(st.running) == 0 {
			st.queued = true
			h.mu.Unlock()
			return reply("queued", "", 0), nil
		}
		h.mu.Unlock()
	}
	if busy, release := h.acquire(bufnr); busy != nil {
		return *busy, nil
	} else {
		defer release()
	}
	if !auto {
		// Only a press that is going to act resets autopilot.
		h.mu.Lock()
		st := h.state(bufnr)
		st.turns, st.disarmed = 0, false
		h.mu.Unlock()
	}
	s, err := h.snapshot(bufnr)
	if err != nil {
		return Reply{}, err
	}
	doc := h.parse(bufnr, s)
	h.prune(bufnr, s.Tick, doc)
	if got := h.recoverResults(bufnr, s, doc); len(got) > 0 {
		// Results recorded by the journal but lost from the buffer: written
		// back, not run again. This press stops here, so the user sees them.
		return reply("recovered", fmt.Sprintf("Recovered the result(s) of %s from the crash-recovery journal (they were not run again). Press <C-]> to go on.", strings.Join(got, ", ")), levelInfo), nil
	}
	if len(doc.Unresolved()) > 0 {
		return h.categorize(bufnr, s, doc, auto)
	}
	return h.executeFrom(bufnr, "", s, doc, auto, false)
}

// approvesAny reports whether a step's records approve a call.
func approvesAny(recs []WireRecord) bool {
	for _, r := range recs {
		if r.Status == string(buffer.StatusApproved) {
			return true
		}
	}
	return false
}

func statusFor(d approval.Decision) buffer.Status {
	switch d {
	case approval.Approve:
		return buffer.StatusApproved
	case approval.Deny:
		return buffer.StatusDenied
	default:
		return buffer.StatusPending
	}
}

func (h *Engine) approvalCall(bufnr int, tu *buffer.ToolUse, fm *frontmatter.Result) approval.Call {
	c := approval.Call{Tool: h.Registry.ApprovalName(tu.Name), ID: tu.ID, Input: tu.Input, Bufnr: bufnr}
	if c.Input == nil {
		c.Input = map[string]any{}
	}
	if t, ok := h.Registry.Lookup(tu.Name); ok {
		c.Capabilities = t.Spec().Capabilities
	}
	c.Tags = h.Registry.ApprovalTags(tu.Name) // hidden tools too, as a name list approved them
	sc := h.sandboxConfig(fm)
	c.Env.SandboxEnabled = sc.Enabled
	if sc.Enabled {
		_, ok, _ := sandbox.DetectBackend()
		c.Env.SandboxAvailable = ok && sc.Backend != "none"
	}
	if fm == nil {
		return c
	}
	o := fm.Opts
	c.Env.Exclusions = o.AutoApproveExclusions
	h.mu.Lock()
	c.Env.FrontmatterTrusted = h.trustOf(bufnr).trusted
	h.mu.Unlock()
	c.Env.FrontmatterReplaces = o.AutoApproveFunc != nil || o.AutoApproveAssigned
	switch {
	case o.AutoApproveFunc != nil:
		c.Env.FrontmatterSet = true
		fn := o.AutoApproveFunc
		c.Env.FrontmatterFunc = func(ctx context.Context, c approval.Call) (approval.Decision, string, error) {
			d, err := fn.Call(ctx, c.Tool, c.Input, map[string]any{"bufnr": c.Bufnr, "tool_id": c.ID})
			if err != nil {
				return approval.Pass, "", err
			}
			return approval.Decision(d), "function", nil
		}
	case o.AutoApprove != nil:
		c.Env.FrontmatterSet = true
		h.mu.Lock()
		presets := h.presets
		h.mu.Unlock()
		c.Env.FrontmatterPolicy = presets.Expand(o.AutoApprove, o.AutoApproveExclusions)
	}
	return c
}

// abortedMessage returns the abort marker of the assistant message holding
// tu, if that response was interrupted.
func abortedMessage(doc *buffer.Document, tu *buffer.ToolUse) (string, bool) {
	m := doc.MessageAt(tu.HeaderLine)
	if m == nil {
		return "", false
	}
	for _, seg := range m.Segments {
		if a, ok := seg.(*buffer.Aborted); ok {
			return a.Message, true
		}
	}
	return "", false
}

// blockProblem names the first tool block of doc that could not be read
// (a header edited out of shape, a fence left open), which the press just
// answered with a new placeholder: without it the user sees the block they
// approved ignored, and no word why. "" when every block reads.
func blockProblem(doc *buffer.Document) string {
	n, first := 0, ""
	for _, d := range doc.Diagnostics {
		if (d.Kind == buffer.KindToolUse || d.Kind == buffer.KindToolResult) && d.Severity <= buffer.SeverityWarning {
			if n == 0 {
				first = fmt.Sprintf("Line %d: %s", d.Line, d.Message)
			}
			n++
		}
	}
	if n > 1 {
		first += fmt.Sprintf(" (%d more in the diagnostics)", n-1)
	}
	return first
}

// categorize is phase 1: a placeholder for every tool use without a result,
// its status from the approval chain (planCategorize). With nothing
// pending, phase 2 follows at once.
func (h *Engine) categorize(bufnr int, s0 *Snapshot, doc0 *buffer.Document, auto bool) (Reply, error) {
	var p categorizePlan
	var diags []Diag
	var uses []*buffer.ToolUse // the calls of the buffer, for pruneCalls
	parsed := false            // uses is the buffer's (the step planned on it)
	err := h.stepFrom(bufnr, s0, doc0, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		uses, parsed = doc.ToolUses(), true
		fm := h.evalFrontmatter(bufnr, doc)
		diags = diagnostics(doc, fm, h.notesOf(bufnr))
		opts := ApplyOpts{Diagnostics: diags, UndoBreak: true, fm: fm}
		if fm.Blocking() {
			return nil, opts, errBlocked
		}
		var err error
		if p, err = planCategorize(doc, s.Lines, h.categorizeFacts(bufnr, s, doc, fm)); err != nil {
			return nil, opts, err
		}
		h.logAll(p.Log)
		for id, o := range p.Outcomes {
			if o.Decision == approval.RequireApproval && (o.Resolver == approval.ReadRootsResolver || o.Resolver == approval.ProtectedResolver) {
				h.note(bufnr, id, "flemma: "+o.Rule) // why it asks, on its header (a diagnostic)
			}
		}
		opts.Records, opts.CursorID, opts.after = p.Records, p.FirstPending, p.After
		if p.Pending == 0 && approvesAny(p.Records) {
			// Execute follows at once: the calls approved here wait to run
			// from this write on, so the lock comes with it (issue 26: a
			// user typing between this write and execute's met approved
			// calls in an unlocked buffer). Execute unlocks when it starts
			// nothing.
			locked := false
			opts.Modifiable = &locked
		}
		return p.Edits, opts, nil
	})
	if errors.Is(err, errBlocked) {
		return h.blocked(bufnr, diags)
	}
	if err != nil {
		return Reply{}, err
	}
	h.mu.Lock()
	st := h.state(bufnr)
	if st.outcomes == nil {
		st.outcomes = map[string]approval.Outcome{}
	}
	maps.Copy(st.outcomes, p.Outcomes)
	if parsed {
		st.pruneCalls(uses)
	}
	h.mu.Unlock()
	if p.Pending > 0 {
		h.event("FlemmaApprovalPending", PendingEvent{Bufnr: bufnr, Pending: p.Pending, First: p.FirstPending, Auto: auto})
		if msg := journalHeld(doc0, p, !auto); msg != "" {
			// Interrupted calls say so, whoever pressed: the user must
			// choose between resuming and discarding them.
			return reply("categorize", msg, levelWarn), nil
		}
		if auto {
			// Autopilot stops here: say so, once, in a line short
			// enough for the message area (no hit-enter prompt).
			return reply("categorize", autopilotPaused(doc0, p), levelInfo), nil
		}
		if msg := blockProblem(doc0); msg != "" {
			return reply("categorize", msg, levelWarn), nil
		}
		return reply("categorize", "", 0), nil
	}
	// Calls that could not run got their error results in this step: with
	// autopilot off the press stops after execute, as when it writes them.
	return h.executeFrom(bufnr, "", nil, nil, auto, len(p.Failed) > 0)
}

// journalHeld tells about the calls of a categorize that the journal holds
// back (interrupted, or running in another flemma) or, with reads, that
// read outside the project: "" when none.
func journalHeld(doc *buffer.Document, p categorizePlan, reads bool) string {
	var held []string
	for _, tu := range doc.ToolUses() {
		if o, ok := p.Outcomes[tu.ID]; ok && o.Decision == approval.RequireApproval && (o.Resolver == approval.JournalResolver || reads && o.Resolver == approval.ReadRootsResolver) {
			held = append(held, fmt.Sprintf("%s %s (line %d): %s", tu.Name, tu.ID, tu.HeaderLine, o.Rule))
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%d call(s) wait for you: %s.", len(held), strings.Join(held, "; "))
}

// autopilotPaused is what the user is told when autopilot stops at calls
// that wait for approval.
func autopilotPaused(doc *buffer.Document, p categorizePlan) string {
	name := p.FirstPending
	for _, tu := range doc.ToolUses() {
		if tu.ID == p.FirstPending {
			name = tu.Name
		}
	}
	if p.Pending == 1 {
		return fmt.Sprintf("Autopilot paused: %s waits for your approval.", name)
	}
	return fmt.Sprintf("Autopilot paused: %d calls wait for your approval (%s first).", p.Pending, name)
}

// categorizeFacts gathers what planCategorize needs: the chain's decision
// on each call it decides, and for an approval the gates' inputs (the
// journal, the ledger, the protected paths).
func (h *Engine) categorizeFacts(bufnr int, s *Snapshot, doc *buffer.Document, fm *frontmatter.Result) categorizeFacts {
	f := categorizeFacts{Mode: h.mode(), Calls: map[string]chainCall{}, Fail: map[string]string{}}
	key := journalKey(bufnr, s.Name)
	eff := h.effective(bufnr, fm)
	// One budget for the frontmatter's approval function over the whole
	// press: a file with 500 calls and a function that spins costs the
	// budget, not 500 deadlines (issue 11, class 10). A call the function
	// could not decide in time asks.
	ctx := frontmatter.WithBudget(context.Background(), h.fm.NewBudget())
	rules := h.pathRules(bufnr, fm, s.Cwd, s.Name) // the sandbox, built when a call writes or reads a path
	over := overCap(doc, eff.MaxCallsPerResponse)
	for _, tu := range doc.Unresolved() {
		if _, _, fixed := fixedStatus(doc, tu, f.Mode); fixed {
			continue
		}
		if why := over[tu.ID]; why != "" {
			f.Fail[tu.ID] = why
			continue
		}
		if why := h.cannotRun(tu, eff); why != "" {
			f.Fail[tu.ID] = why // its error result at once: no approval asked
			continue
		}
		c := chainCall{Chain: h.chain.Decide(ctx, h.approvalCall(bufnr, tu, fm))}
		if c.Chain.Decision == approval.Approve {
			c.Gate = h.gateFacts(bufnr, key, tu)
			// The sandbox answers only for an approval the other gates let
			// through (it is built on the first such call).
			h.pathGates(&c, tu, rules)
		}
		if ct, ok := h.chainOf(tu.Name); ok {
			c.Steps = h.chainSteps(ctx, bufnr, key, tu, fm, ct, rules)
		}
		f.Calls[tu.ID] = c
	}
	h.mu.Lock()
	f.Ledger = cloneLedger(h.trustOf(bufnr).ledger)
	h.mu.Unlock()
	return f
}

// blocked publishes the diagnostics that stopped a step (no edit carried
// them) and tells the user.
func (h *Engine) blocked(bufnr int, diags []Diag) (Reply, error) {
	if err := h.ed.SetDiagnostics(bufnr, diags); err != nil {
		h.logf("publish diagnostics: %v", err)
	}
	return reply("blocked", "This buffer's frontmatter has errors (see the diagnostics): nothing was done. Fix them and press <C-]> again.", levelError), nil
}

type job struct {
	id, name string
	input    json.RawMessage
	byUser   bool   // the user approved it (a policy approval gets the protected-path rules)
	hash     string // trust.CallHash of the call
	by       string // who approved it, for the journal
}

// execute is phase 2: every placeholder is handled by its status. only, when
// set, restricts it to one tool id (<M-CR>).
func (h *Engine) execute(bufnr int, only string) (Reply, error) {
	return h.executeFrom(bufnr, only, nil, nil, false, false)
}

// wrote: the step before (categorize) already wrote results.
func (h *Engine) executeFrom(bufnr int, only string, s0 *Snapshot, doc0 *buffer.Document, auto, wrote bool) (Reply, error) {
	var p executePlan
	var diags []Diag
	err := h.stepFrom(bufnr, s0, doc0, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		fm := h.evalFrontmatter(bufnr, doc)
		diags = diagnostics(doc, fm, h.notesOf(bufnr))
		opts := ApplyOpts{Diagnostics: diags, UndoBreak: true, fm: fm}
		if fm.Blocking() {
			return nil, opts, errBlocked
		}
		p = planExecute(doc, s.Lines, h.executeFacts(bufnr, s, doc, fm, only), only)
		h.logAll(p.Log)
		for id, n := range p.Notes {
			h.note(bufnr, id, n) // before the write: its diagnostics show them
		}
		opts.Records = p.Records
		if len(p.Jobs) > 0 {
			locked := false
			opts.Modifiable = &locked
		} else {
			opts.CursorID = p.FirstPending
			if h.running(bufnr) == 0 {
				// Nothing runs: the buffer is the user's again (categorize
				// may have locked it for calls that did not start).
				unlocked := true
				opts.Modifiable = &unlocked
			}
		}
		return p.Edits, opts, nil
	})
	if errors.Is(err, errBlocked) {
		return h.blocked(bufnr, diags)
	}
	if err != nil {
		return Reply{}, err
	}
	if len(p.Jobs) > 0 {
		// One call run by the user (<M-CR>, tool:resume) goes on like a press:
		// with autopilot on, the cycle continues once it is done (issue 27
		// item 8; the Lua Flemma re-arms a paused autopilot the same way).
		h.startJobs(bufnr, p.Jobs, true)
	}
	if r, final := p.reply(only); final {
		return r, nil
	}
	if (len(p.Edits) > 0 || wrote) && !auto && !h.effective(bufnr, nil).Autopilot {
		// The results are in: the user may want to add a word before the
		// conversation goes on (phase 3 is the next press).
		return reply("resolved", "All tool calls have results. Press <C-]> again to send.", levelInfo), nil
	}
	return h.startSend(bufnr, auto)
}

// executeFacts gathers what planExecute needs: the buffer's options, the
// calls running now, the ledger, and what the journal knows of each
// approved placeholder still empty.
func (h *Engine) executeFacts(bufnr int, s *Snapshot, doc *buffer.Document, fm *frontmatter.Result, only string) executeFacts {
	f := executeFacts{Mode: h.mode(), Running: map[string]bool{}, Off: map[string]bool{}, Held: map[string]journalHold{}}
	eff := h.effective(bufnr, fm)
	h.logRefused(bufnr, eff)
	for _, tu := range doc.ToolUses() {
		if _, known := h.Registry.Get(tu.Name); known && !eff.HasTool(tu.Name) {
			f.Off[tu.Name] = true
		}
	}
	h.mu.Lock()
	for id := range h.state(bufnr).running {
		f.Running[id] = true
	}
	f.Ledger = cloneLedger(h.trustOf(bufnr).ledger)
	h.mu.Unlock()
	f.Descends = h.descends(bufnr, s.Tick, doc, f.Ledger)
	key := journalKey(bufnr, s.Name)
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil || r.Status != buffer.StatusApproved || r.Content != "" || only != "" && tu.ID != only || f.Running[tu.ID] {
			continue
		}
		if c, p := h.history(bufnr, key, tu); p == pastInterrupted || p == pastElsewhere {
			f.Held[tu.ID] = journalHold{Elsewhere: p == pastElsewhere, Rule: interruptedRule(c, p)}
		}
	}
	return f
}

// startJobs runs approved tools in the background, at most max_concurrent
// at a time, with the buffer locked until the last one finishes.
func (h *Engine) startJobs(bufnr int, jobs []job, continueCycle bool) {
	eff := h.effective(bufnr, nil)
	limit, cursorMode := eff.MaxConcurrent, eff.CursorAfterResult
	h.mu.Lock()
	st := h.state(bufnr)
	ctxs := make([]context.Context, len(jobs))
	for i, j := range jobs {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i] = ctx
		st.running[j.id] = cancel
	}
	st.jobsPending++ // until the jobs' goroutine decided whether autopilot goes on
	h.mu.Unlock()
	if limit <= 0 {
		limit = len(jobs)
	}
	if n := len(jobs); n > limit {
		// The calls max_concurrent holds back are not stuck: say so.
		// One short line: it fits 80 columns and never asks for Enter.
		h.notify(fmt.Sprintf("%d calls, %d at a time (tools.max_concurrent): %d queued.", n, limit, n-limit), levelInfo)
	}

	h.background(bufnr, func() {
		sem := make(chan struct{}, limit)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		go func() { // keep the running indicators ticking
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					h.refreshMarks(bufnr)
				case <-stop:
					return
				}
			}
		}()
		for i, j := range jobs {
			// Taken here, in buffer order, before the worker starts: with
			// max_concurrent = 1 the calls run first to last.
			sem <- struct{}{}
			wg.Add(1)
			go func(ctx context.Context, j job) {
				defer wg.Done()
				defer func() { <-sem }()
				h.runOne(ctx, bufnr, j, cursorMode, toolTimeouts(eff))
			}(ctxs[i], j)
		}
		wg.Wait()
		close(stop)
		h.mu.Lock()
		remaining := len(st.running)
		h.mu.Unlock()
		if remaining == 0 {
			h.setModifiable(bufnr, true)
		}
		// Decided now, not at the start: <C-c> or :Flemma autopilot may have
		// changed it while the tools ran.
		autopilot := h.effective(bufnr, nil).Autopilot
		h.mu.Lock()
		disarmed := st.disarmed
		st.jobsPending--
		h.mu.Unlock()
		if continueCycle && autopilot && !disarmed {
			h.autoCycle(bufnr)
		}
	})
}

func (h *Engine) runOne(ctx context.Context, bufnr int, j job, cursorMode string, timeouts tools.Timeouts) {
	defer func() {
		h.mu.Lock()
		if st := h.bufs[bufnr]; st != nil {
			if cancel := st.running[j.id]; cancel != nil {
				cancel()
			}
			delete(st.running, j.id)
			delete(st.started, j.id)
			delete(st.ended, j.id)
		}
		h.mu.Unlock()
	}()
	h.mu.Lock()
	if st := h.bufs[bufnr]; st != nil {
		st.started[j.id] = time.Now()
	}
	h.mu.Unlock()
	// The event first: whenever Neovim shows a call as running, it knows
	// the call runs (a host that goes then leaves it shown interrupted).
	info := ToolEvent{Bufnr: bufnr, ToolName: j.name, ToolID: j.id, Status: "executing"}
	h.event("FlemmaToolExecuting", info)
	h.refreshMarks(bufnr)
	s, err := h.snapshot(bufnr)
	call := tools.Call{ID: j.id, Tool: j.name, Bufnr: bufnr}
	if err != nil {
		// Without the buffer there is no sandbox to build: do not run.
		h.logf("tool %s (%s): %v", j.name, j.id, err)
		h.writeFailure(bufnr, j.id, "The call could not start: the buffer could not be read.")
		return
	}
	{
		call.Cwd, call.Buffer = s.Cwd, s.Name
		var fm *frontmatter.Result
		h.mu.Lock()
		if st := h.bufs[bufnr]; st != nil {
			fm = st.fm
		}
		h.mu.Unlock()
		if env, err := h.callEnv(bufnr, fm, s.Cwd, s.Name, !j.byUser); err == nil {
			call.Env = env
		} else {
			// A sandbox that cannot be built must not mean "no sandbox".
			h.logf("tool %s (%s): sandbox: %v", j.name, j.id, err)
			h.writeFailure(bufnr, j.id, "The sandbox could not be set up: "+err.Error())
			return
		}
	}
	h.limitCall(&call, timeouts)
	h.mu.Lock()
	ran := h.trustOf(bufnr).ledger.Get(j.id)
	h.mu.Unlock()
	// Known to have started before it starts: a restarted host or a
	// reloaded buffer must not run it again silently.
	ran.Ran = true
	if err := h.record(bufnr, ran); err != nil {
		h.logf("tool %s (%s): %v; not started", j.name, j.id, err)
		h.writeFailure(bufnr, j.id, "The call could not start: flemma could not record it.")
		return
	}
	jid := h.journalStart(bufnr, s.Name, j)
	// A tool chain's steps need to know whether the user approved it.
	res := h.exec.Run(context.WithValue(ctx, chainRunKey{}, chainRunInfo{byUser: j.byUser}), call, j.input)
	h.mu.Lock()
	if st := h.bufs[bufnr]; st != nil && st.reviewed[j.id] {
		res.Content = reviewedNote + res.Content
	}
	h.mu.Unlock()
	h.markEnded(bufnr, j.id)
	h.logf("tool %s (%s) finished in %s, error=%v kind=%s", j.name, j.id, res.Duration, res.IsError, res.Kind)
	if h.closingNow() {
		h.logf("tool %s (%s) stopped by the host's shutdown: left unfinished (interrupted) in the journal", j.name, j.id)
		return
	}
	h.journalFinish(jid, outcomeStatus(ctx, res), res)
	// How the run ended is kept before the result is written, so that
	// whoever sees the result (:Flemma tool:list right after) sees it too.
	h.mu.Lock()
	st := h.state(bufnr)
	if st.ran == nil {
		st.ran = map[string]ranCall{}
	}
	st.ran[j.id] = ranCall{duration: res.Duration, isError: res.IsError, kind: res.Kind}
	h.mu.Unlock()
	err = h.writeResult(bufnr, j.id, res, cursorMode)
	status := "success"
	if res.IsError {
		status = "error"
	}
	if err != nil {
		h.logf("write result %s: %v (content: %q)", j.id, err, res.Content)
		h.notify(fmt.Sprintf("The result of %s was not written: %v. It is kept: <M-CR> on the call writes it.", j.id, err), levelWarn)
		status = "error"
	}
	info.Status = status
	h.mu.Lock()
	h.state(bufnr).lastResult = time.Now()
	h.mu.Unlock()
	h.event("FlemmaToolFinished", info)
}

// userApproved reports whether a record is the user's own approval.
func userApproved(r trust.Record) bool {
	return r.Status == buffer.StatusApproved && (r.By == trust.ByUser || r.By == trust.ByUserEdit)
}

// outcomeStatus names how a call ended, for the journal.
func outcomeStatus(ctx context.Context, res tools.Result) string {
	switch {
	case ctx.Err() != nil:
		return "canceled"
	case !res.IsError:
		return "ok"
	case res.Kind != "":
		return "error: " + string(res.Kind)
	}
	return "error"
}

// errBlockChanged: the block a result was going to replace is not the
// empty approved placeholder the call started from.
var errBlockChanged = errors.New("its block was changed while it ran")

// writeResult writes a finished call's result into its placeholder. Writes
// of one buffer go one at a time (concurrent calls would otherwise make
// each other's changedtick stale until one gave up), and a result is
// never dropped: when its block was removed or changed while the call ran
// (a status edit, text typed in), the result is kept for <M-CR> instead of
// overwriting the user's text, and the call is not run again.
func (h *Engine) writeResult(bufnr int, id string, res tools.Result, cursorMode string) error {
	mu := h.writeLock(bufnr)
	mu.Lock()
	defer mu.Unlock()
	err := h.step(bufnr, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		r := doc.Result(id)
		switch {
		case r == nil:
			return nil, ApplyOpts{}, errors.New("its block was removed while it ran")
		case r.Status != buffer.StatusApproved || strings.TrimSpace(r.Content) != "":
			return nil, ApplyOpts{}, errBlockChanged
		}
		e, err := buffer.ReplaceResult(doc, s.Lines, id, res.Content, res.IsError, res.Lang)
		if err != nil {
			return nil, ApplyOpts{}, err
		}
		// The buffer stays locked while other calls run; the last result
		// unlocks it in the same write, so text the user sees appear can
		// be typed after at once (the step's own unlock comes a moment
		// later, after its bookkeeping).
		modifiable := h.running(bufnr) <= 1
		opts := ApplyOpts{Join: true, Modifiable: &modifiable}
		if cursorMode != "stay" {
			opts.CursorID = id
			opts.CursorAtEnd = cursorMode == "next"
		}
		h.mu.Lock()
		wrote := h.trustOf(bufnr).ledger.Get(id)
		h.mu.Unlock()
		wrote.Wrote = true
		opts.Records = []WireRecord{toWire(wrote)}
		return []buffer.Edit{e}, opts, nil
	})
	if err != nil {
		h.mu.Lock()
		st := h.state(bufnr)
		if st.kept == nil {
			st.kept = map[string]tools.Result{}
		}
		st.kept[id] = res
		h.mu.Unlock()
	}
	return err
}

// markEnded notes that a running call ended: only its result is left to
// write (an exclusive action waits for that instead of refusing).
func (h *Engine) markEnded(bufnr int, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.bufs[bufnr]; st != nil && st.running[id] != nil {
		if st.ended == nil {
			st.ended = map[string]bool{}
		}
		st.ended[id] = true
	}
}

// writeLock is the buffer's result-write mutex.
func (h *Engine) writeLock(bufnr int) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(bufnr)
	if st.writeMu == nil {
		st.writeMu = &sync.Mutex{}
	}
	return st.writeMu
}

// ExecuteAt executes or resolves the one tool block under the cursor.
func (h *Engine) ExecuteAt(bufnr, line int) (Reply, error) {
	// Other calls of the buffer may be running: <M-CR> runs this one too.
	if busy, release := h.acquireOne(bufnr); busy != nil {
		return *busy, nil
	} else {
		defer release()
	}
	doc, id, err := h.blockUnder(bufnr, line)
	if err != nil || id == "" {
		return noBlock(err)
	}
	h.mu.Lock()
	isRunning := h.state(bufnr).running[id] != nil
	kept, hasKept := h.state(bufnr).kept[id]
	h.mu.Unlock()
	if isRunning {
		return reply("busy", fmt.Sprintf("Tool %s is already executing.", id), levelWarn), nil
	}
	if hasKept {
		// The call ran; its result could not be written then. Write it now
		// rather than run the call again.
		if err := h.placeResult(bufnr, id, kept.Content, kept.IsError, kept.Lang); err != nil {
			return reply("none", fmt.Sprintf("Could not write the kept result of %s: %v", id, err), levelError), nil
		}
		h.mu.Lock()
		delete(h.state(bufnr).kept, id)
		h.mu.Unlock()
		return reply("result", fmt.Sprintf("Wrote the result %s produced earlier (it was not run again).", id), levelInfo), nil
	}
	r := doc.Result(id)
	if r != nil && r.Status == "" {
		return reply("none", fmt.Sprintf("Tool %s already has a result.", id), levelInfo), nil
	}
	if r == nil || (r.Status == buffer.StatusPending || r.Status == buffer.StatusApproved) && strings.TrimSpace(r.Content) == "" {
		// <M-CR> on an undecided or approved call is the user's approval of it.
		if err := h.setStatus(bufnr, id, buffer.StatusApproved, ""); err != nil {
			return Reply{}, err
		}
	}
	return h.execute(bufnr, id)
}

// setStatus writes a placeholder with status st for id (creating it when the
// call has no result block yet); msg, when set, becomes the block's body.
func (h *Engine) setStatus(bufnr int, id string, st buffer.Status, msg string) error {
	created := false
	err := h.step(bufnr, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		var opts ApplyOpts
		if tu := doc.Use(id); tu != nil {
			h.mu.Lock()
			opts.Records = []WireRecord{decided(h.trustOf(bufnr).ledger, tu, st, trust.ByUser)}
			h.mu.Unlock()
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
		return h.setStatus(bufnr, id, st, msg)
	}
	return err
}

func (h *Engine) SetStatus(bufnr, line int, status, msg string) (Reply, error) {
	if busy, release := h.acquire(bufnr); busy != nil {
		return *busy, nil
	} else {
		defer release()
	}
	_, id, err := h.blockUnder(bufnr, line)
	if err != nil || id == "" {
		return noBlock(err)
	}
	if err := h.setStatus(bufnr, id, buffer.Status(status), msg); err != nil {
		return reply("none", err.Error(), levelError), nil
	}
	return reply("status", "", 0), nil
}

// Cancel cancels every running tool of the buffer (<C-c>).
func (h *Engine) Cancel(bufnr int) (Reply, error) {
	h.mu.Lock()
	n := 0
	st := h.state(bufnr)
	for _, cancel := range st.running {
		cancel()
		n++
	}
	streaming := st.streaming != nil
	if streaming {
		st.streaming()
	}
	wasArmed := !st.disarmed
	st.disarmed = true // <C-c> also stops autopilot until the next press
	h.mu.Unlock()
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

func (h *Engine) CancelAt(bufnr, line int) (Reply, error) {
	_, id, err := h.blockUnder(bufnr, line)
	if err != nil {
		return noBlock(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.bufs[bufnr]; st != nil && st.running[id] != nil {
		st.running[id]()
		return reply("cancel", fmt.Sprintf("Cancelled %s.", id), levelWarn), nil
	}
	return reply("cancel", "No running tool under the cursor.", levelInfo), nil
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// mode is tools.mode: "enabled", "parse_only" or "disabled".
func (h *Engine) mode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.Tools.Mode == "" {
		return "enabled"
	}
	return h.cfg.Tools.Mode
}

// SetResult writes a result the user supplies (:Flemma tool:result and
// tool:error), creating the block when the call has none.
func (h *Engine) SetResult(bufnr int, id, text string, isError bool) (Reply, error) {
	if busy, release := h.acquire(bufnr); busy != nil {
		return *busy, nil
	} else {
		defer release()
	}
	if err := h.placeResult(bufnr, id, text, isError, ""); err != nil {
		return reply("none", err.Error(), levelError), nil
	}
	decision := "result given"
	if isError {
		decision = "error given"
	}
	h.auditUser(bufnr, id, decision, text)
	return reply("result", "", 0), nil
}

// placeResult writes a result for id whatever its block holds (the user's
// own result, or a kept one), creating the block when the call has none.
func (h *Engine) placeResult(bufnr int, id, text string, isError bool, lang string) error {
	for pass := 0; pass < 2; pass++ {
		created := false
		err := h.step(bufnr, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
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

// writeFailure writes an error result for a call that could not start.
func (h *Engine) writeFailure(bufnr int, id, msg string) {
	h.markEnded(bufnr, id)
	err := h.step(bufnr, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		if doc.Result(id) == nil {
			return nil, ApplyOpts{}, fmt.Errorf("result block of %s not found", id)
		}
		e, err := buffer.ReplaceResult(doc, s.Lines, id, msg, true, "")
		return []buffer.Edit{e}, ApplyOpts{Join: true}, err
	})
	if err != nil {
		h.logf("write failure of %s: %v", id, err)
	}
}

// blockUnder returns the buffer's document and the id of the tool call whose
// use or result block covers line ("" when none does).
func (h *Engine) blockUnder(bufnr, line int) (*buffer.Document, string, error) {
	s, err := h.snapshot(bufnr)
	if err != nil {
		return nil, "", err
	}
	doc := h.parse(bufnr, s)
	switch tu, r := doc.BlockAt(line); {
	case tu != nil:
		return doc, tu.ID, nil
	case r != nil:
		return doc, r.ToolUseID, nil
	}
	if doc.Compacted(line) {
		if tu, r := doc.Whole().BlockAt(line); tu != nil || r != nil {
			return doc, "", &aboveSummary{line: doc.Summary.StartLine}
		}
	}
	return doc, "", nil
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

// acquire gives one cycle (or one <M-CR>, status or result edit) at a time
// to a buffer, and none while a response streams or tools run: two steps
// planned on the same text would run the same approved call twice. It
// returns a "busy" reply, or the release function.
func (h *Engine) acquire(bufnr int) (*Reply, func()) {
	return h.take(bufnr, true)
}

// acquireOne is acquire for a step on a single call (<M-CR>), which may run
// while other calls of the buffer do.
func (h *Engine) acquireOne(bufnr int) (*Reply, func()) {
	return h.take(bufnr, false)
}

// stepWait bounds how long a user's action waits for another step of the
// buffer to be written (a few milliseconds, usually) before it is refused.
const stepWait = 3 * time.Second

func (h *Engine) take(bufnr int, exclusive bool) (*Reply, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state(bufnr)
	// Another step is being planned and written (autopilot's, or a queued
	// press): wait for it rather than refuse the user's action.
	// So are calls that ended and are writing their results: a user who
	// acts on the result they just saw must not be told it still runs.
	finishing := func() bool {
		for id := range st.running {
			if !st.ended[id] {
				return false
			}
		}
		return len(st.running) > 0 || st.jobsPending > 0
	}
	for deadline := time.Now().Add(stepWait); (st.cycling && st.streaming == nil || st.streaming != nil && st.streamEnds || exclusive && finishing()) && time.Now().Before(deadline); {
		h.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		h.mu.Lock()
	}
	switch {
	case st.streaming != nil:
		return ptr(reply("busy", "A request is already in progress. Use <C-c> to cancel it first.", levelWarn)), nil
	case exclusive && len(st.running) > 0:
		return ptr(reply("busy", fmt.Sprintf("%d tool(s) still running in this buffer: wait, or press <C-c> to cancel them.", len(st.running)), levelWarn)), nil
	case st.cycling:
		return ptr(reply("busy", "flemma is already working on this buffer; try again in a moment.", levelWarn)), nil
	}
	st.cycling = true
	return nil, func() {
		h.mu.Lock()
		st.cycling = false
		queued := st.queued
		st.queued = false
		h.idle.Broadcast()
		h.mu.Unlock()
		if queued {
			h.background(bufnr, func() { h.autoCycleAs(bufnr, false) })
		}
	}
}

// gateFacts are the inputs of approval.Gate for a call the chain approved,
// from what the host knows of it: whether the journal says it was
// interrupted (a note on the call says so), whether it already ran in this
// session, whether it arrived from the provider (a call found in a file,
// typed or pasted, or changed since, did not), whether the user lets the
// policy decide the file's calls, and the path it writes, if any.
// Protected is left nil (categorizeFacts asks the sandbox).
func (h *Engine) gateFacts(bufnr int, key string, tu *buffer.ToolUse) approval.Facts {
	f := approval.Facts{Writes: h.writesPath(tu)}
	if c, p := h.history(bufnr, key, tu); p == pastInterrupted || p == pastElsewhere {
		f.Interrupted = interruptedRule(c, p)
		h.note(bufnr, tu.ID, "flemma: "+f.Interrupted)
	}
	h.mu.Lock()
	bt := h.trustOf(bufnr)
	f.Ran = bt.ledger.Ran(tu.ID)
	f.FromProvider = bt.ledger.FromProvider(tu)
	f.FileCallsAllowed = h.cfg.Tools.AutoApproveFileCalls || bt.ledger.VouchedFor(tu)
	h.mu.Unlock()
	return f
}

// logAll writes a plan's log lines.
func (h *Engine) logAll(lines []string) {
	for _, l := range lines {
		h.logf("%s", l)
	}
}

// writesPath is the "path" a call of a tool with side effects writes ("" for
// other tools, and for bash, which the sandbox confines instead: protected
// paths are read-only in it unless the user approved the call).
func (h *Engine) writesPath(tu *buffer.ToolUse) string {
	path, _ := tu.Input["path"].(string)
	if path == "" {
		return ""
	}
	if t, ok := h.Registry.Get(tu.Name); ok && (!slices.Contains(t.Spec().Capabilities, tools.CapSideEffects) || isChainTool(t)) {
		return "" // a tool chain's steps are decided each with its own path
	}
	return path
}

func ptr[T any](v T) *T { return &v }
