package cycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// evalFrontmatter evaluates (cached) the buffer's frontmatter and remembers
// the result for the approval chain.
func (sess *session) evalFrontmatter(doc *buffer.Document) *frontmatter.Result {
	h := sess.h
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
	sess.mu.Lock()
	sess.fm = res
	sess.mu.Unlock()
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

// notesCopy returns a copy of the buffer's notes on calls (shown as
// diagnostics on their headers until they have a result).
func (st *session) notesCopy() map[string]string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]string{}
	for id, n := range st.notes {
		out[id] = n
	}
	return out
}

// note attaches a note to a call of the buffer.
func (st *session) note(id, text string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.notes == nil {
		st.notes = map[string]string{}
	}
	st.notes[id] = text
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

func (sess *session) approvalCall(tu *buffer.ToolUse, fm *frontmatter.Result) approval.Call {
	h, bufnr := sess.h, sess.bufnr
	c := approval.Call{Tool: h.Registry.ApprovalName(tu.Name), ID: tu.ID, Input: tu.Input(), Bufnr: bufnr}
	c.Tags = h.Registry.ApprovalTags(tu.Name) // hidden tools too, as a name list approved them
	if c.Input == nil {
		c.Input = map[string]any{}
	}
	if t, ok := h.Registry.Lookup(tu.Name); ok {
		c.Capabilities = t.Spec().Capabilities
	}
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
	sess.mu.Lock()
	c.Env.FrontmatterTrusted = sess.trustOf().trusted
	sess.mu.Unlock()
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
func (sess *session) categorize(s0 *Snapshot, doc0 *buffer.Document, auto bool) (Reply, error) {
	h, bufnr := sess.h, sess.bufnr
	var p categorizePlan
	var diags []Diag
	var uses []*buffer.ToolUse // the calls of the buffer, for pruneCalls
	parsed := false            // uses is the buffer's (the step planned on it)
	err := sess.stepFrom(s0, doc0, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		uses, parsed = doc.ToolUses(), true
		fm := sess.evalFrontmatter(doc)
		diags = diagnostics(doc, fm, sess.notesCopy())
		opts := ApplyOpts{Diagnostics: diags, UndoBreak: true, fm: fm}
		if fm.Blocking() {
			return nil, opts, errBlocked
		}
		var err error
		if p, err = planCategorize(doc, s.Lines, sess.categorizeFacts(s, doc, fm)); err != nil {
			return nil, opts, err
		}
		h.logAll(p.Log)
		for id, o := range p.Outcomes {
			if o.Decision == approval.RequireApproval && (o.Resolver == approval.ReadRootsResolver || o.Resolver == approval.ProtectedResolver) {
				sess.note(id, "flemma: "+o.Rule) // why it asks, on its header (a diagnostic)
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
		return sess.blocked(diags)
	}
	if err != nil {
		return Reply{}, err
	}
	sess.mu.Lock()
	if sess.outcomes == nil {
		sess.outcomes = map[string]approval.Outcome{}
	}
	maps.Copy(sess.outcomes, p.Outcomes)
	if parsed {
		sess.pruneCalls(uses)
	}
	sess.mu.Unlock()
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
	return sess.executeFrom("", nil, nil, auto, len(p.Failed) > 0)
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
func (sess *session) categorizeFacts(s *Snapshot, doc *buffer.Document, fm *frontmatter.Result) categorizeFacts {
	h, bufnr := sess.h, sess.bufnr
	f := categorizeFacts{Mode: h.mode(), Calls: map[string]chainCall{}, Fail: map[string]string{}}
	key := journalKey(bufnr, s.Name)
	eff := sess.effective(fm)
	// One budget for the frontmatter's approval function over the whole
	// press: a file with 500 calls and a function that spins costs the
	// budget, not 500 deadlines (issue 11, class 10). A call the function
	// could not decide in time asks.
	ctx := frontmatter.WithBudget(context.Background(), h.fm.NewBudget())
	rules := sess.pathRules(fm, s.Cwd, s.Name) // the sandbox, built when a call writes or reads a path
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
		c := chainCall{Chain: h.chain.Decide(ctx, sess.approvalCall(tu, fm))}
		c.Chain = sess.alwaysOutcome(tu, c.Chain) // the user's grants in this chat (always.go)
		if c.Chain.Decision == approval.Approve {
			c.Gate = sess.gateFacts(key, tu)
			// The sandbox answers only for an approval the other gates let
			// through (it is built on the first such call).
			h.pathGates(&c, tu, rules)
		}
		if ct, ok := h.chainOf(tu.Name); ok {
			c.Steps = h.chainSteps(ctx, bufnr, key, tu, fm, ct, rules)
		}
		f.Calls[tu.ID] = c
	}
	sess.mu.Lock()
	f.Ledger = cloneLedger(sess.trustOf().ledger)
	sess.mu.Unlock()
	return f
}

// blocked publishes the diagnostics that stopped a step (no edit carried
// them) and tells the user.
func (sess *session) blocked(diags []Diag) (Reply, error) {
	h, bufnr := sess.h, sess.bufnr
	if err := h.ed.SetDiagnostics(bufnr, diags); err != nil {
		h.logf("publish diagnostics: %v", err)
	}
	return reply("blocked", "This buffer's frontmatter has errors (see the diagnostics): nothing was done. Fix them and press <C-]> again.", levelError), nil
}

// gateFacts are the inputs of approval.Gate for a call the chain approved,
// from what the host knows of it: whether the journal says it was
// interrupted (a note on the call says so), whether it already ran in this
// session, whether it arrived from the provider (a call found in a file,
// typed or pasted, or changed since, did not), whether the user lets the
// policy decide the file's calls, and the path it writes, if any.
// Protected is left nil (categorizeFacts asks the sandbox).
func (sess *session) gateFacts(key string, tu *buffer.ToolUse) approval.Facts {
	h := sess.h
	f := approval.Facts{Writes: h.writesPath(tu)}
	if c, p := sess.history(key, tu); p == pastInterrupted || p == pastElsewhere {
		f.Interrupted = interruptedRule(c, p)
		sess.note(tu.ID, "flemma: "+f.Interrupted)
	}
	fileCalls := h.config().Tools.AutoApproveFileCalls
	sess.mu.Lock()
	bt := sess.trustOf()
	f.Ran = bt.ledger.Ran(tu.ID)
	f.FromProvider = bt.ledger.FromProvider(tu)
	f.FileCallsAllowed = fileCalls || bt.ledger.VouchedFor(tu)
	sess.mu.Unlock()
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
	path, _ := tu.Input()["path"].(string)
	if path == "" {
		return ""
	}
	if t, ok := h.Registry.Get(tu.Name); ok && (!slices.Contains(t.Spec().Capabilities, tools.CapSideEffects) || isChainTool(t)) {
		return "" // a tool chain's steps are decided each with its own path
	}
	return path
}
