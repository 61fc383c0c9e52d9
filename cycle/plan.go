package cycle

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// The decisions of the cycle's first two phases, as pure functions: a
// parsed buffer and the facts the engine gathered for it (the approval
// chain's answers, the journal, the trust ledger, the buffer's options) in,
// the edits, the decision records and the jobs to start out. The engine
// (cycle.go) gathers the facts, calls the plan, and applies the result in
// one changedtick-checked write; when the write is refused it gathers and
// plans again on the new text. Nothing here reads or writes anything: the
// log lines a plan wants written come back in its Log.

// categorizeFacts is what planCategorize needs besides the text.
type categorizeFacts struct {
	Mode   string        // tools.mode: "enabled", "parse_only" or "disabled"
	Ledger *trust.Ledger // a copy of the buffer's ledger, which the decision records build on
	// Calls holds, for each call the approval chain decided (the calls
	// fixedStatus leaves to it), the chain's outcome and the gates' inputs.
	Calls map[string]chainCall
	// Fail holds the calls that cannot run whatever anyone decides (an
	// unknown or disabled tool: Engine.cannotRun), with their error result.
	Fail map[string]string
}

// chainCall is the approval chain's outcome on one call and what the gates
// know of it (approval.Gate).
type chainCall struct {
	Chain approval.Outcome
	// Gate holds the gates' inputs when the chain approved, its Protected
	// left nil: the answer for Gate.Writes is below.
	Gate approval.Facts
	// Protected: Gate.Writes is a protected path, by ProtectedRule.
	Protected     bool
	ProtectedRule string
	// Outside: Gate.Reads lies outside the readable roots (OutsideRoots).
	Outside      bool
	OutsideRoots string
	// Steps are the decisions on the steps of a tool chain call that the
	// chain's input alone determines (chainSteps): the call's outcome is
	// the strictest of its own and theirs.
	Steps []chainStepCall
}

// gated is the call's outcome once the gates had their say.
func (c chainCall) gated() approval.Outcome {
	f := c.Gate
	if c.Protected {
		f.Protected = func(string) (string, bool) { return c.ProtectedRule, true }
	}
	if c.Outside {
		f.Outside = func(string) (string, bool) { return c.OutsideRoots, true }
	}
	out := approval.Gate(c.Chain, f)
	for _, st := range c.Steps {
		if so := st.Call.gated(); strictness(so.Decision) > strictness(out.Decision) {
			out = approval.Outcome{Decision: so.Decision, Resolver: so.Resolver,
				Rule: fmt.Sprintf("step %d '%s' (%s): %s", st.N, st.Name, st.Tool, so.Rule)}
		}
	}
	return out
}

// categorizePlan is what phase 1 writes and remembers.
type categorizePlan struct {
	Edits        []buffer.Edit
	Records      []WireRecord                // the decision on every call, written with the edits
	Outcomes     map[string]approval.Outcome // tool id -> the gated outcome, for the calls the chain decided
	Pending      int                         // calls that wait for the user
	FirstPending string                      // the first of them (the cursor goes there)
	Failed       []string                    // calls given their error result at once (Fail)
	Log          []string
	After        buffer.Placed // the text after the edits and its parse (buffer.Place)
}

// RegistryRule is who "decided" a call that cannot run (an unknown or
// disabled tool), in its record and the audit log.
const RegistryRule = "urn:flemma:registry: the tool cannot run here"

// fixedStatus is the status a call gets without asking the approval chain:
// a call of an interrupted or cut response is aborted, tools.mode
// "disabled" denies every call and "parse_only" leaves every call pending.
// ok is false when the chain decides.
func fixedStatus(doc *buffer.Document, tu *buffer.ToolUse, mode string) (st buffer.Status, who string, ok bool) {
	if _, aborted := abortedMessage(doc, tu); aborted {
		return buffer.StatusAborted, "the response was interrupted", true
	}
	switch mode {
	case "disabled":
		return buffer.StatusDenied, "tools.mode = " + mode, true
	case "parse_only":
		return buffer.StatusPending, "tools.mode = " + mode, true
	}
	return "", "", false
}

// planCategorize is phase 1: a placeholder for every call without a
// result, its status from fixedStatus or the gated outcome of the chain
// (a call missing from f.Calls asks), with the record of each decision.
func planCategorize(doc *buffer.Document, lines []string, f categorizeFacts) (categorizePlan, error) {
	p := categorizePlan{Outcomes: map[string]approval.Outcome{}}
	var ps []buffer.Placement
	for _, tu := range doc.Unresolved() {
		st, who, fixed := fixedStatus(doc, tu, f.Mode)
		if why, fails := f.Fail[tu.ID]; fails && !fixed {
			// Its error result at once: asking would change nothing.
			p.Log = append(p.Log, fmt.Sprintf("call %s (%s) cannot run: %s", tu.Name, tu.ID, why))
			p.Failed = append(p.Failed, tu.ID)
			ps = append(ps, buffer.Placement{ID: tu.ID, Error: why})
			p.Records = append(p.Records, decided(f.Ledger, tu, buffer.StatusDenied, RegistryRule))
			continue
		}
		if !fixed {
			c := f.Calls[tu.ID]
			out := c.gated()
			if out != c.Chain {
				verb := "asking"
				if out.Decision == approval.Deny {
					verb = "denying"
				}
				p.Log = append(p.Log, fmt.Sprintf("approval %s (%s): %s, but %s; %s", tu.Name, tu.ID, c.Chain, out.Rule, verb))
			}
			p.Log = append(p.Log, fmt.Sprintf("approval %s (%s): %s", tu.Name, tu.ID, out))
			p.Outcomes[tu.ID] = out
			st, who = statusFor(out.Decision), out.String()
		}
		if st == buffer.StatusPending {
			p.Pending++
			if p.FirstPending == "" {
				p.FirstPending = tu.ID
			}
		}
		ps = append(ps, buffer.Placement{ID: tu.ID, Status: st})
		p.Records = append(p.Records, decided(f.Ledger, tu, st, who))
	}
	placed, err := buffer.Place(doc, lines, ps)
	if err != nil {
		return categorizePlan{}, err
	}
	p.Edits, p.After = placed.Edits, placed
	return p, nil
}

// rejectedByUser is the result of a call the user rejected without a
// reason.
const rejectedByUser = "This tool has been rejected by the user."

// executeFacts is what planExecute needs besides the text.
type executeFacts struct {
	Mode   string        // tools.mode
	Ledger *trust.Ledger // a copy of the buffer's ledger
	// Descends answers, for the approved placeholders, whether the text
	// descends from an undo state (trust.Ledger.CheckApproved).
	Descends trust.Descends
	Running  map[string]bool // calls running now: never planned again
	// Off are the registry's tools the buffer does not enable
	// (flemma.opt.tools), among the tools its calls name.
	Off map[string]bool
	// Held are the approved calls the journal holds back: they started and
	// never finished, or run in another flemma now.
	Held map[string]journalHold
}

// journalHold is why the journal holds a call back.
type journalHold struct {
	Elsewhere bool   // it runs in another flemma now (else it was interrupted)
	Rule      string // the reason, for the user
}

// executePlan is what phase 2 writes and starts.
type executePlan struct {
	Edits        []buffer.Edit
	Records      []WireRecord
	Jobs         []job             // approved calls to run, in buffer order
	FirstPending string            // the first call that waits for the user
	Protected    []string          // approved blocks holding the user's text ("id (line n)"): not run
	Untrusted    []string          // approved placeholders that did not count and are pending again ("id (line n): why")
	Interrupted  []string          // approved calls the journal holds back ("id (line n): why"): interrupted, or running elsewhere
	ParseOnly    []string          // approved calls tools.mode = "parse_only" does not run
	Notes        map[string]string // tool id -> why it waits (shown on its header)
	Log          []string
}

// planExecute is phase 2: every placeholder is handled by its status.
// Denied, rejected and aborted ones get their error result, a pending one
// holding the user's text gets it as its result, and an approved one runs
// when its approval counts (trust.Ledger.CheckApproved) and the journal does
// not hold it back; otherwise it is pending again, with the reason. only,
// when set, restricts the plan to one tool id (<M-CR>).
func planExecute(doc *buffer.Document, lines []string, f executeFacts, only string) executePlan {
	var p executePlan
	fail := func(id, msg string) { p.add(buffer.ReplaceResult(doc, lines, id, msg, true, "")) }
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil || r.Status == "" || (only != "" && tu.ID != only) || doc.Use(tu.ID) != tu {
			continue // a duplicated id is the first use's (Parse reports the rest)
		}
		content := r.Content
		switch r.Status {
		case buffer.StatusPending:
			if strings.TrimSpace(content) != "" {
				// Content-overwrite protection: the user's text is the result.
				p.add(buffer.StripFence(doc, lines, tu.ID))
			} else {
				p.waits(tu.ID)
			}
		case buffer.StatusDenied:
			msg := "The tool was denied by a policy."
			if f.Mode == "disabled" {
				msg = `Tools are disabled (tools.mode = "disabled"): the call was not run.`
			}
			fail(tu.ID, msg)
		case buffer.StatusRejected:
			msg := rejectedByUser
			if strings.TrimSpace(content) != "" {
				msg = content
			}
			fail(tu.ID, msg)
			// The user's rejection typed into the fence is a decision for
			// the audit log (one made with :Flemma tool:reject is there
			// already).
			if f.Ledger != nil {
				if rec := f.Ledger.Get(tu.ID); rec.Status != buffer.StatusRejected || rec.By != trust.ByUser && rec.By != trust.ByUserEdit {
					p.Records = append(p.Records, decided(f.Ledger, tu, buffer.StatusRejected, trust.ByUserEdit))
				}
			}
		case buffer.StatusAborted:
			msg, _ := abortedMessage(doc, tu)
			if msg == "" {
				msg = "Response interrupted by the user."
			}
			fail(tu.ID, msg)
		case buffer.StatusApproved:
			planApproved(&p, doc, lines, f, tu, r)
		}
	}
	return p
}

// planApproved is planExecute for one approved placeholder.
func planApproved(p *executePlan, doc *buffer.Document, lines []string, f executeFacts, tu *buffer.ToolUse, r *buffer.ToolResult) {
	// backToPending writes pending over the approval and records it as
	// withheld, saying why.
	backToPending := func(why string) {
		p.add(buffer.SetStatus(doc, lines, tu.ID, buffer.StatusPending))
		p.Records = append(p.Records, withheld(f.Ledger, tu, "not "+why))
	}
	if msg, aborted := abortedMessage(doc, tu); aborted && r.Content == "" {
		// A call of a response that was cut or interrupted never runs,
		// whoever approved it: its input may be incomplete.
		if msg == "" {
			msg = "Response interrupted by the user."
		}
		p.add(buffer.ReplaceResult(doc, lines, tu.ID, msg, true, ""))
		return
	}
	if r.Content != "" {
		p.Protected = append(p.Protected, fmt.Sprintf("%s (line %d)", tu.ID, r.HeaderLine))
		return
	}
	if f.Mode == "parse_only" {
		p.ParseOnly = append(p.ParseOnly, tu.ID)
		return
	}
	if f.Off[tu.Name] {
		p.add(buffer.ReplaceResult(doc, lines, tu.ID, fmt.Sprintf("Tool '%s' is not enabled in this buffer (see flemma.opt.tools).", tu.Name), true, ""))
		return
	}
	if f.Running[tu.ID] {
		return // never run the same call twice
	}
	descends := f.Descends
	if descends == nil {
		descends = func(int) bool { return false }
	}
	v := f.Ledger.CheckApproved(tu, descends)
	rec := f.Ledger.Get(tu.ID)
	// The user's approval given since the call last ran (a status edit, or
	// :Flemma tool:resume, which approves it again): resuming it. The
	// approval it ran with does not count twice.
	fresh := v.UserEdit || userApproved(rec) && !rec.Ran
	if hold, held := f.Held[tu.ID]; held && (hold.Elsewhere || !fresh) {
		// The same file open in another Neovim is running it, or it was
		// interrupted and nobody asked to resume it. The journal's word
		// wins over the ledger's "it ran" (issue 28 item 4): the user is
		// told it may have partly run, and offered resume or discard.
		if p.Notes == nil {
			p.Notes = map[string]string{}
		}
		p.Notes[tu.ID] = "flemma: " + hold.Rule
		backToPending("run: " + hold.Rule)
		p.Interrupted = append(p.Interrupted, fmt.Sprintf("%s (line %d): %s", tu.ID, r.HeaderLine, hold.Rule))
		p.waits(tu.ID)
		return
	}
	if !v.OK {
		// An approval nobody gave in this session: the call waits for the
		// user, and the buffer shows it.
		backToPending("counted: " + v.Why)
		p.Untrusted = append(p.Untrusted, fmt.Sprintf("%s (line %d): %s", tu.ID, r.HeaderLine, v.Why))
		p.Log = append(p.Log, fmt.Sprintf("approval of %s (%s) not counted: %s", tu.Name, tu.ID, v.Why))
		p.waits(tu.ID)
		return
	}
	byUser := rec.By == trust.ByUser || rec.By == trust.ByUserEdit
	by := rec.By
	if v.UserEdit {
		byUser, by = true, trust.ByUserEdit
		p.Records = append(p.Records, decided(f.Ledger, tu, buffer.StatusApproved, trust.ByUserEdit))
		p.Log = append(p.Log, fmt.Sprintf("approval %s (%s): approve by the user (status edit)", tu.Name, tu.ID))
	}
	input := json.RawMessage(tu.RawInput)
	if strings.TrimSpace(tu.RawInput) == "" {
		input = json.RawMessage("{}")
	}
	p.Jobs = append(p.Jobs, job{id: tu.ID, name: tu.Name, input: input, byUser: byUser, hash: trust.CallHash(tu), by: by})
}

// reply is what the user is told once the plan is written (its jobs
// started). final is false when nothing waits: the conversation may go on
// to phase 3.
func (p executePlan) reply(only string) (r Reply, final bool) {
	var warns []string
	if len(p.Interrupted) > 0 {
		warns = append(warns, fmt.Sprintf("%d approved call(s) did not run again: %s.", len(p.Interrupted), strings.Join(p.Interrupted, "; ")))
	}
	if len(p.Untrusted) > 0 {
		warns = append(warns, fmt.Sprintf("%d approved call(s) did not run and are pending again: %s. To run them, approve them yourself (status=approved, :Flemma tool:approve or <M-CR>).",
			len(p.Untrusted), strings.Join(p.Untrusted, "; ")))
	}
	if len(p.Protected) > 0 {
		warns = append(warns, fmt.Sprintf("%d tool result(s) have edited content inside an approved flemma:tool block – skipping execution to protect your edits: %s. Remove the flemma:tool fence to send your content.",
			len(p.Protected), strings.Join(p.Protected, ", ")))
	}
	warn := strings.Join(warns, "\n")
	switch {
	case len(p.Jobs) > 0 && warn != "":
		return reply("execute", warn, levelWarn), true
	case len(p.Jobs) > 0:
		return reply("execute", "", 0), true
	case len(p.Untrusted) > 0 || len(p.Interrupted) > 0:
		return reply("pending", warn, levelWarn), true
	case warn != "":
		return reply("paused", warn, levelWarn), true
	case len(p.ParseOnly) > 0:
		return reply("pending", fmt.Sprintf(`tools.mode = "parse_only": flemma does not run tools. Give the result of %s with :Flemma tool:result <id> <text> (or :Flemma tool:error), or type it into the block.`, strings.Join(p.ParseOnly, ", ")), levelInfo), true
	case p.FirstPending != "" || only != "":
		return reply("pending", "", 0), true
	}
	return Reply{}, false
}

// add adds an edit, or logs why it could not be planned.
func (p *executePlan) add(e buffer.Edit, err error) {
	if err != nil {
		p.Log = append(p.Log, fmt.Sprintf("execute: %v", err))
		return
	}
	p.Edits = append(p.Edits, e)
}

// waits notes a call that waits for the user.
func (p *executePlan) waits(id string) {
	if p.FirstPending == "" {
		p.FirstPending = id
	}
}

// cloneLedger copies a ledger for a plan, which reads it without the
// engine's lock (trust.Ledger.Clone).
func cloneLedger(l *trust.Ledger) *trust.Ledger { return l.Clone() }
