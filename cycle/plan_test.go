package cycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// The plan functions take a buffer and facts and return edits, records and
// jobs: these tests need no editor, no chain and no journal.

// useBlock is a tool call of an assistant message.
func useBlock(id, name, input string) string {
	return fmt.Sprintf("**Tool Use:** `%s` (`%s`)\n\n```json\n%s\n```\n\n", name, id, input)
}

// placeholder is a result block with a status; body, when set, is the text
// the user typed into it.
func placeholder(id string, st buffer.Status, body string) string {
	if body != "" {
		body += "\n"
	}
	return fmt.Sprintf("**Tool Result:** `%s`\n\n```flemma:tool status=%s\n%s```\n\n", id, st, body)
}

// chat is a conversation: the user's question, an assistant message with
// calls, and (when results are given) the user's message holding them.
func chat(calls string, results ...string) []string {
	text := "@You:\nhi\n\n@Assistant:\n" + calls
	if len(results) > 0 {
		text += "@You:\n\n" + strings.Join(results, "")
	}
	return strings.Split(strings.TrimRight(text, "\n"), "\n")
}

var (
	lsUse   = useBlock("toolu_ls", "ls", `{"path": "."}`)
	bashUse = useBlock("toolu_sh", "bash", `{"command": "echo hi"}`)
	editUse = useBlock("toolu_ed", "write", `{"path": "notes.txt", "content": "x"}`)
	aborted = "<!-- flemma:aborted: Response cut: the output limit was reached. -->\n\n"
)

// after applies a plan's edits and parses the result.
func after(t *testing.T, lines []string, edits []buffer.Edit) *buffer.Document {
	t.Helper()
	out, err := buffer.Apply(lines, edits)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return buffer.Parse(out)
}

// statuses describes every call's result block: its status, "result" or
// "error: <text>" for a finished one, "none" without a block.
func statuses(doc *buffer.Document) map[string]string {
	out := map[string]string{}
	for _, u := range doc.ToolUses() {
		r := doc.Result(u.ID)
		switch {
		case r == nil:
			out[u.ID] = "none"
		case r.Status != "":
			out[u.ID] = string(r.Status)
		case r.IsError:
			out[u.ID] = "error: " + r.Content
		default:
			out[u.ID] = "result: " + r.Content
		}
	}
	return out
}

func recordsBy(recs []WireRecord) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		out[r.ID] = r.Status + " by " + r.By
	}
	return out
}

func equalMaps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", what, got, want)
			return
		}
	}
}

func approve(resolver, rule string) approval.Outcome {
	return approval.Outcome{Decision: approval.Approve, Resolver: resolver, Rule: rule}
}

// fromProvider is the gate input of a call that arrived from the provider.
var fromProvider = approval.Facts{FromProvider: true}

func TestPlanCategorize(t *testing.T) {
	ask := approval.Outcome{Decision: approval.RequireApproval, Rule: approval.RuleDefault}
	deny := approval.Outcome{Decision: approval.Deny, Resolver: "urn:flemma:approval:config", Rule: "bash(rm *)"}
	byDefault := approve("urn:flemma:approval:config", "$default")
	cases := []struct {
		name         string
		lines        []string
		mode         string
		calls        map[string]chainCall
		want         map[string]string // tool id -> status after the plan
		records      map[string]string // tool id -> "status by who"
		pending      int
		firstPending string
		log          string // a line the plan logs
	}{
		{
			name:  "the chain decides each call",
			lines: chat(lsUse + bashUse),
			calls: map[string]chainCall{
				"toolu_ls": {Chain: byDefault, Gate: fromProvider},
				"toolu_sh": {Chain: ask},
			},
			want:    map[string]string{"toolu_ls": "approved", "toolu_sh": "pending"},
			records: map[string]string{"toolu_ls": "approved by approve by urn:flemma:approval:config ($default)", "toolu_sh": "pending by " + ask.String()},
			pending: 1, firstPending: "toolu_sh",
			log: "approval ls (toolu_ls): approve by urn:flemma:approval:config ($default)",
		},
		{
			name:    "a denial",
			lines:   chat(bashUse),
			calls:   map[string]chainCall{"toolu_sh": {Chain: deny}},
			want:    map[string]string{"toolu_sh": "denied"},
			records: map[string]string{"toolu_sh": "denied by " + deny.String()},
		},
		{
			name:  "a call found in the file is not approved by a policy",
			lines: chat(lsUse),
			calls: map[string]chainCall{"toolu_ls": {Chain: byDefault}},
			want:  map[string]string{"toolu_ls": "pending"},
			records: map[string]string{"toolu_ls": "pending by require_approval by urn:flemma:approval:origin " +
				"(call found in the file, not received from the provider: approve it yourself (or :Flemma trust the file))"},
			pending: 1, firstPending: "toolu_ls",
			log: "approval ls (toolu_ls): approve by urn:flemma:approval:config ($default), but call found in the file",
		},
		{
			name:    "unless the user lets the policy decide the file's calls",
			lines:   chat(lsUse),
			calls:   map[string]chainCall{"toolu_ls": {Chain: byDefault, Gate: approval.Facts{FileCallsAllowed: true}}},
			want:    map[string]string{"toolu_ls": "approved"},
			records: map[string]string{"toolu_ls": "approved by " + byDefault.String()},
		},
		{
			name:    "an interrupted call asks",
			lines:   chat(lsUse),
			calls:   map[string]chainCall{"toolu_ls": {Chain: byDefault, Gate: approval.Facts{FromProvider: true, Interrupted: "interrupted: it started"}}},
			want:    map[string]string{"toolu_ls": "pending"},
			records: map[string]string{"toolu_ls": "pending by require_approval by urn:flemma:approval:journal (interrupted: it started)"},
			pending: 1, firstPending: "toolu_ls",
		},
		{
			name:  "a call that ran already asks",
			lines: chat(lsUse),
			calls: map[string]chainCall{"toolu_ls": {Chain: byDefault, Gate: approval.Facts{FromProvider: true, Ran: true}}},
			want:  map[string]string{"toolu_ls": "pending"},
			records: map[string]string{"toolu_ls": "pending by require_approval by urn:flemma:approval:origin " +
				"(it already ran in this session and its result is missing: approve it again to re-run it)"},
			pending: 1, firstPending: "toolu_ls",
		},
		{
			name:  "a write to a protected path asks",
			lines: chat(editUse),
			calls: map[string]chainCall{"toolu_ed": {Chain: byDefault, Gate: approval.Facts{FromProvider: true, Writes: "notes.txt"},
				Protected: true, ProtectedRule: "notes.*"}},
			want:    map[string]string{"toolu_ed": "pending"},
			records: map[string]string{"toolu_ed": "pending by require_approval by urn:flemma:approval:protected (writes notes.txt, a protected path (notes.*): approve it yourself)"},
			pending: 1, firstPending: "toolu_ed",
		},
		{
			name:    "a write elsewhere is approved",
			lines:   chat(editUse),
			calls:   map[string]chainCall{"toolu_ed": {Chain: byDefault, Gate: approval.Facts{FromProvider: true, Writes: "notes.txt"}}},
			want:    map[string]string{"toolu_ed": "approved"},
			records: map[string]string{"toolu_ed": "approved by " + byDefault.String()},
		},
		{
			name:    "a call the chain did not decide asks",
			lines:   chat(bashUse),
			want:    map[string]string{"toolu_sh": "pending"},
			records: map[string]string{"toolu_sh": "pending by pass"},
			pending: 1, firstPending: "toolu_sh",
		},
		{
			name:    "tools.mode = disabled denies without the chain",
			lines:   chat(lsUse + bashUse),
			mode:    "disabled",
			want:    map[string]string{"toolu_ls": "denied", "toolu_sh": "denied"},
			records: map[string]string{"toolu_ls": "denied by tools.mode = disabled", "toolu_sh": "denied by tools.mode = disabled"},
		},
		{
			name:    "tools.mode = parse_only leaves every call pending",
			lines:   chat(lsUse + bashUse),
			mode:    "parse_only",
			want:    map[string]string{"toolu_ls": "pending", "toolu_sh": "pending"},
			records: map[string]string{"toolu_ls": "pending by tools.mode = parse_only", "toolu_sh": "pending by tools.mode = parse_only"},
			pending: 2, firstPending: "toolu_ls",
		},
		{
			name:    "the calls of a cut response are aborted",
			lines:   chat(lsUse + aborted),
			calls:   map[string]chainCall{"toolu_ls": {Chain: byDefault, Gate: fromProvider}},
			want:    map[string]string{"toolu_ls": "aborted"},
			records: map[string]string{"toolu_ls": "aborted by the response was interrupted"},
		},
		{
			name:    "calls with a block already are left alone",
			lines:   chat(lsUse+bashUse, placeholder("toolu_ls", buffer.StatusApproved, "")),
			calls:   map[string]chainCall{"toolu_sh": {Chain: ask}},
			want:    map[string]string{"toolu_ls": "approved", "toolu_sh": "pending"},
			records: map[string]string{"toolu_sh": "pending by " + ask.String()},
			pending: 1, firstPending: "toolu_sh",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			if mode == "" {
				mode = "enabled"
			}
			doc := buffer.Parse(tc.lines)
			p, err := planCategorize(doc, tc.lines, categorizeFacts{Mode: mode, Ledger: trust.NewLedger(), Calls: tc.calls})
			if err != nil {
				t.Fatal(err)
			}
			equalMaps(t, "statuses", statuses(after(t, tc.lines, p.Edits)), tc.want)
			equalMaps(t, "records", recordsBy(p.Records), tc.records)
			if p.Pending != tc.pending || p.FirstPending != tc.firstPending {
				t.Errorf("pending %d, first %q; want %d, %q", p.Pending, p.FirstPending, tc.pending, tc.firstPending)
			}
			for _, u := range doc.Unresolved() {
				_, _, fixed := fixedStatus(doc, u, mode)
				if _, kept := p.Outcomes[u.ID]; kept == fixed {
					t.Errorf("outcome of %s kept: %v (fixed status: %v)", u.ID, kept, fixed)
				}
			}
			if tc.log != "" && !slices.ContainsFunc(p.Log, func(l string) bool { return strings.Contains(l, tc.log) }) {
				t.Errorf("log %q lacks %q", p.Log, tc.log)
			}
		})
	}
}

// A message that ends inside an open fence cannot take placeholders: the
// plan fails rather than write a block that would not read back.
func TestPlanCategorizeRefusesAnOpenFence(t *testing.T) {
	lines := chat(bashUse + "```text\nunclosed\n")
	doc := buffer.Parse(lines)
	if len(doc.Unresolved()) == 0 {
		t.Skip("the parser keeps no call here")
	}
	if _, err := planCategorize(doc, lines, categorizeFacts{Mode: "enabled", Ledger: trust.NewLedger()}); err == nil {
		t.Error("placeholders planned after an open fence")
	}
}

// ledgerFor builds the ledger of a test from the parsed buffer (records
// carry the hash of the call they decided).
type ledgerFor func(doc *buffer.Document) *trust.Ledger

// sessionApproved: a policy approved the call in this session.
func sessionApproved(ids ...string) ledgerFor {
	return func(doc *buffer.Document) *trust.Ledger {
		l := trust.NewLedger()
		for _, id := range ids {
			l.Put(trust.Record{ID: id, Status: buffer.StatusApproved, By: "approve by $default", Hash: trust.CallHash(doc.Use(id))})
		}
		return l
	}
}

// userApprovedIn: the user approved the call in this session.
func userApprovedIn(id string) ledgerFor {
	return func(doc *buffer.Document) *trust.Ledger {
		l := trust.NewLedger()
		l.Put(trust.Record{ID: id, Status: buffer.StatusApproved, By: trust.ByUser, Hash: trust.CallHash(doc.Use(id))})
		return l
	}
}

// ranAfter: the calls ids of the ledger started (their approval was used).
func ranAfter(base ledgerFor, ids ...string) ledgerFor {
	return func(doc *buffer.Document) *trust.Ledger {
		l := base(doc)
		for _, id := range ids {
			r := l.Get(id)
			r.Ran = true
			l.Put(r)
		}
		return l
	}
}

// loadedWith: the buffer was loaded with these calls and no approved
// status; the user set one since.
func loadedWith(ids ...string) ledgerFor {
	return func(doc *buffer.Document) *trust.Ledger {
		l := trust.NewLedger()
		for _, id := range ids {
			l.Origin.Calls[id] = trust.CallHash(doc.Use(id))
		}
		return l
	}
}

func TestPlanExecute(t *testing.T) {
	cases := []struct {
		name      string
		lines     []string
		mode      string
		only      string
		ledger    ledgerFor
		undone    bool // the text was reached by undoing past the host's writes (it descends from none)
		running   []string
		off       []string
		held      map[string]journalHold
		want      map[string]string // tool id -> its block after the plan
		jobs      []string          // "id by who (user)" of each job
		records   map[string]string
		first     string
		protected int
		untrusted string // a reason the plan gives for a call that did not run
		// interrupted: a reason the plan gives for a call the journal
		// holds back (interrupted, or running elsewhere)
		interrupted string
		parseOnly   int
		notes       int
	}{
		{
			name:  "a pending block holding the user's text is the result",
			lines: chat(lsUse+bashUse, placeholder("toolu_ls", buffer.StatusPending, "it is empty"), placeholder("toolu_sh", buffer.StatusPending, "")),
			want:  map[string]string{"toolu_ls": "result: it is empty", "toolu_sh": "pending"},
			first: "toolu_sh",
		},
		{
			name: "denied, rejected and aborted blocks get their error result",
			lines: chat(lsUse+bashUse+editUse, placeholder("toolu_ls", buffer.StatusDenied, ""),
				placeholder("toolu_sh", buffer.StatusRejected, "not now"), placeholder("toolu_ed", buffer.StatusAborted, "")),
			want: map[string]string{"toolu_ls": "error: The tool was denied by a policy.", "toolu_sh": "error: not now",
				"toolu_ed": "error: Response interrupted by the user."},
			records: map[string]string{"toolu_sh": "rejected by user (status edit)"},
		},
		{
			name:  "a rejection without words, and a denial when tools are disabled",
			lines: chat(lsUse+bashUse, placeholder("toolu_ls", buffer.StatusDenied, ""), placeholder("toolu_sh", buffer.StatusRejected, "")),
			mode:  "disabled",
			want: map[string]string{"toolu_ls": `error: Tools are disabled (tools.mode = "disabled"): the call was not run.`,
				"toolu_sh": "error: This tool has been rejected by the user."},
			// the user's rejection goes to the audit log (issue 28 item 3)
			records: map[string]string{"toolu_sh": "rejected by user (status edit)"},
		},
		{
			name:   "an approval of this session runs",
			lines:  chat(lsUse, placeholder("toolu_ls", buffer.StatusApproved, "")),
			ledger: sessionApproved("toolu_ls"),
			want:   map[string]string{"toolu_ls": "approved"},
			jobs:   []string{"toolu_ls by approve by $default"},
		},
		{
			name:   "the user's approval runs with the user's rules",
			lines:  chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger: userApprovedIn("toolu_sh"),
			want:   map[string]string{"toolu_sh": "approved"},
			jobs:   []string{"toolu_sh by user (user)"},
		},
		{
			name:    "the user's edit of a file call's status is their approval",
			lines:   chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:  loadedWith("toolu_sh"),
			want:    map[string]string{"toolu_sh": "approved"},
			jobs:    []string{"toolu_sh by user (status edit) (user)"},
			records: map[string]string{"toolu_sh": "approved by user (status edit)"},
		},
		{
			name:      "an undo past the load is not the user's edit of a file call's status",
			lines:     chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:    loadedWith("toolu_sh"),
			undone:    true,
			want:      map[string]string{"toolu_sh": "pending"},
			records:   map[string]string{"toolu_sh": "pending by not counted: an undo went back to before the file was loaded, so this approval may not be yours; set it to approved again if you mean it"},
			first:     "toolu_sh",
			untrusted: "an undo went back",
		},
		{
			name:      "an approval nobody gave is pending again",
			lines:     chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			want:      map[string]string{"toolu_sh": "pending"},
			records:   map[string]string{"toolu_sh": "pending by not counted: nobody approved it in this session"},
			first:     "toolu_sh",
			untrusted: "toolu_sh (line 13): nobody approved it in this session",
		},
		{
			name:      "an approved block holding the user's text is not run",
			lines:     chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "my own output")),
			ledger:    userApprovedIn("toolu_sh"),
			want:      map[string]string{"toolu_sh": "approved"},
			protected: 1,
		},
		{
			name:      "parse_only runs nothing",
			lines:     chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			mode:      "parse_only",
			ledger:    userApprovedIn("toolu_sh"),
			want:      map[string]string{"toolu_sh": "approved"},
			parseOnly: 1,
		},
		{
			name:   "a tool the buffer does not enable gets an error result",
			lines:  chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger: userApprovedIn("toolu_sh"),
			off:    []string{"bash"},
			want:   map[string]string{"toolu_sh": "error: Tool 'bash' is not enabled in this buffer (see flemma.opt.tools)."},
		},
		{
			name:    "a running call is not planned again",
			lines:   chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:  userApprovedIn("toolu_sh"),
			running: []string{"toolu_sh"},
			want:    map[string]string{"toolu_sh": "approved"},
		},
		{
			name:   "a call of a cut response never runs, whoever approved it",
			lines:  chat(bashUse+aborted, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger: userApprovedIn("toolu_sh"),
			want:   map[string]string{"toolu_sh": "error: Response cut: the output limit was reached."},
		},
		{
			name:        "an interrupted call waits for :Flemma tool:resume",
			lines:       chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:      sessionApproved("toolu_sh"),
			held:        map[string]journalHold{"toolu_sh": {Rule: "interrupted: it started"}},
			want:        map[string]string{"toolu_sh": "pending"},
			records:     map[string]string{"toolu_sh": "pending by not run: interrupted: it started"},
			first:       "toolu_sh",
			interrupted: "toolu_sh (line 13): interrupted: it started",
			notes:       1,
		},
		{
			// The host died while the user's approved bash ran: the ledger
			// (in Neovim) says it ran, the journal that it was interrupted.
			// The journal wins: the user is told it may have partly run, and
			// the approval it ran with does not run it again.
			name:        "the approval an interrupted call ran with does not resume it",
			lines:       chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:      ranAfter(userApprovedIn("toolu_sh"), "toolu_sh"),
			held:        map[string]journalHold{"toolu_sh": {Rule: "interrupted: it started"}},
			want:        map[string]string{"toolu_sh": "pending"},
			records:     map[string]string{"toolu_sh": "pending by not run: interrupted: it started"},
			first:       "toolu_sh",
			interrupted: "toolu_sh (line 13): interrupted: it started",
			notes:       1,
		},
		{
			name:   "the user's resume runs an interrupted call",
			lines:  chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger: userApprovedIn("toolu_sh"),
			held:   map[string]journalHold{"toolu_sh": {Rule: "interrupted: it started"}},
			want:   map[string]string{"toolu_sh": "approved"},
			jobs:   []string{"toolu_sh by user (user)"},
		},
		{
			name:        "a call running in another flemma waits, even the user's",
			lines:       chat(bashUse, placeholder("toolu_sh", buffer.StatusApproved, "")),
			ledger:      userApprovedIn("toolu_sh"),
			held:        map[string]journalHold{"toolu_sh": {Elsewhere: true, Rule: "it is running in another flemma"}},
			want:        map[string]string{"toolu_sh": "pending"},
			records:     map[string]string{"toolu_sh": "pending by not run: it is running in another flemma"},
			first:       "toolu_sh",
			interrupted: "it is running in another flemma",
			notes:       1,
		},
		{
			name:   "only plans the one call",
			lines:  chat(lsUse+bashUse, placeholder("toolu_ls", buffer.StatusDenied, ""), placeholder("toolu_sh", buffer.StatusApproved, "")),
			only:   "toolu_sh",
			ledger: userApprovedIn("toolu_sh"),
			want:   map[string]string{"toolu_ls": "denied", "toolu_sh": "approved"},
			jobs:   []string{"toolu_sh by user (user)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := buffer.Parse(tc.lines)
			f := executeFacts{Mode: tc.mode, Ledger: trust.NewLedger(), Running: map[string]bool{}, Off: map[string]bool{}, Held: tc.held}
			if f.Mode == "" {
				f.Mode = "enabled"
			}
			f.Descends = func(int) bool { return !tc.undone }
			if tc.ledger != nil {
				f.Ledger = tc.ledger(doc)
			}
			for _, id := range tc.running {
				f.Running[id] = true
			}
			for _, n := range tc.off {
				f.Off[n] = true
			}
			p := planExecute(doc, tc.lines, f, tc.only)
			equalMaps(t, "blocks", statuses(after(t, tc.lines, p.Edits)), tc.want)
			var jobs []string
			for _, j := range p.Jobs {
				who := j.by
				if j.byUser {
					who += " (user)"
				}
				jobs = append(jobs, j.id+" by "+who)
				if j.hash != trust.CallHash(doc.Use(j.id)) || len(j.input) == 0 {
					t.Errorf("job %s: hash %q, input %q", j.id, j.hash, j.input)
				}
			}
			if !slices.Equal(jobs, tc.jobs) {
				t.Errorf("jobs %q, want %q", jobs, tc.jobs)
			}
			equalMaps(t, "records", recordsBy(p.Records), tc.records)
			if p.FirstPending != tc.first {
				t.Errorf("first pending %q, want %q", p.FirstPending, tc.first)
			}
			if len(p.Protected) != tc.protected || len(p.ParseOnly) != tc.parseOnly || len(p.Notes) != tc.notes {
				t.Errorf("protected %q, parse_only %q, notes %q", p.Protected, p.ParseOnly, p.Notes)
			}
			if (tc.untrusted == "") != (len(p.Untrusted) == 0) || tc.untrusted != "" && !strings.Contains(strings.Join(p.Untrusted, "; "), tc.untrusted) {
				t.Errorf("untrusted %q, want %q", p.Untrusted, tc.untrusted)
			}
			if (tc.interrupted == "") != (len(p.Interrupted) == 0) || tc.interrupted != "" && !strings.Contains(strings.Join(p.Interrupted, "; "), tc.interrupted) {
				t.Errorf("interrupted %q, want %q", p.Interrupted, tc.interrupted)
			}
		})
	}
}

// An empty input is sent as {} (a call without arguments).
func TestPlanExecuteEmptyInput(t *testing.T) {
	lines := chat(useBlock("toolu_x", "ls", "{}"), placeholder("toolu_x", buffer.StatusApproved, ""))
	doc := buffer.Parse(lines)
	u := doc.Use("toolu_x")
	u.RawInput = " "
	l := trust.NewLedger()
	l.Put(trust.Record{ID: "toolu_x", Status: buffer.StatusApproved, By: trust.ByUser, Hash: trust.CallHash(u)})
	p := planExecute(doc, lines, executeFacts{Mode: "enabled", Ledger: l}, "")
	if len(p.Jobs) != 1 || string(p.Jobs[0].input) != "{}" {
		t.Fatalf("jobs %+v", p.Jobs)
	}
}

// The plan reads a copy of the ledger: records the engine stores meanwhile
// do not reach it, and it writes nothing back.
func TestCloneLedger(t *testing.T) {
	l := trust.NewLedger()
	l.Put(trust.Record{ID: "a", Status: buffer.StatusApproved})
	c := cloneLedger(l)
	l.Put(trust.Record{ID: "b"})
	if _, ok := c.Records["b"]; ok || c.Get("a").Status != buffer.StatusApproved {
		t.Errorf("copy %+v", c.Records)
	}
}

// What the user is told after an execute plan is written, and whether the
// conversation may go on to phase 3.
func TestExecutePlanReply(t *testing.T) {
	j := []job{{id: "toolu_a"}}
	cases := []struct {
		name  string
		p     executePlan
		only  string
		phase string
		level int
		words string // in the message
		final bool
	}{
		{"jobs start", executePlan{Jobs: j}, "", "execute", 0, "", true},
		{"jobs start, one did not count", executePlan{Jobs: j, Untrusted: []string{"toolu_b (line 9): why"}}, "", "execute", levelWarn, "1 approved call(s) did not run", true},
		{"an approval did not count", executePlan{Untrusted: []string{"toolu_b (line 9): why"}, FirstPending: "toolu_b"}, "", "pending", levelWarn, "toolu_b (line 9): why", true},
		{"the user's text in an approved block", executePlan{Protected: []string{"toolu_b (line 9)"}}, "", "paused", levelWarn, "protect your edits: toolu_b (line 9)", true},
		{"parse_only", executePlan{ParseOnly: []string{"toolu_b"}}, "", "pending", levelInfo, "Give the result of toolu_b", true},
		{"a call waits", executePlan{FirstPending: "toolu_b"}, "", "pending", 0, "", true},
		{"<M-CR> on one call never sends", executePlan{}, "toolu_b", "pending", 0, "", true},
		{"nothing waits", executePlan{Edits: []buffer.Edit{{}}}, "", "", 0, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, final := tc.p.reply(tc.only)
			if r.Phase != tc.phase || r.Level != tc.level || final != tc.final || !strings.Contains(r.Message, tc.words) || tc.words == "" && r.Message != "" {
				t.Errorf("reply %+v final %v; want %s/%d %q final %v", r, final, tc.phase, tc.level, tc.words, tc.final)
			}
		})
	}
}
