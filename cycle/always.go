package cycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/trust"
)

// "Always allow this tool (or this command) in this chat" (issue 27): the
// user's one action on a call that waits approves it and grants its tool —
// for bash, the command rule the approval analyser names for its command
// (shell.GrantPatterns) — for the later calls of this buffer in this
// session. The grant lives in the buffer's ledger (trust.Grants): only
// AllowAlways, which only the user's command or key calls, adds one; it is
// never written into the buffer, and nothing read from it (a file, its
// frontmatter, a model's answer, a tool's output) can add one.

// ResolverAlways is who decided a call a grant approved, in its record,
// :Flemma tool:list and the audit log.
const ResolverAlways = "you (always, this chat)"

// onAllowAlways is :Flemma tool:allow-always on the call under the cursor,
// which must wait for the user's approval: it grants the call's tool (for
// bash, its command rule) in this buffer and approves the call itself as
// :Flemma tool:approve does.
func (h *Engine) onAllowAlways(bufnr, line int) (Reply, error) {
	return h.withBlock(bufnr, line, stepAll, func(doc *buffer.Document, id string) (Reply, error) {
		sess := h.session(bufnr)
		tu := doc.Use(id)
		if tu == nil {
			return reply("none", "No tool call under the cursor.", levelWarn), nil
		}
		if r := doc.Result(id); r == nil || r.Status != buffer.StatusPending {
			return reply("none", fmt.Sprintf("%s (%s) does not wait for your approval: only a pending call can be always allowed.", tu.Name, id), levelWarn), nil
		}
		label, add, why := grantFor(tu)
		if why != "" {
			return reply("none", why, levelWarn), nil
		}
		sess.mu.Lock()
		l := sess.trustOf().ledger
		l.Always = add(l.Always)
		g := grantsToWire(l.Always)
		sess.mu.Unlock()
		// Kept in the editor with the ledger's records: a restarted host
		// pulls it back, as it pulls the user's approvals.
		if err := h.ed.TrustGrant(bufnr, g); err != nil {
			h.logf("trust: keep the grants of buffer %d: %v", bufnr, err)
		}
		name := ""
		if s, err := sess.snapshot(); err == nil {
			name = s.Name
		}
		h.recordGrant(journalKey(bufnr, name), tu, label)
		h.logf("approval: buffer %d: the user always allows %s in this chat", bufnr, label)
		if err := sess.setStatus(id, buffer.StatusApproved, ""); err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		return reply("status", fmt.Sprintf("Always allowed in this chat: %s (this call is approved; later calls it covers in this buffer run without asking until Neovim exits).", label), levelInfo), nil
	})
}

// grantFor is what always allowing u grants: its label for the user, the
// function that adds it to a buffer's grants, or why it cannot be granted.
func grantFor(u *buffer.ToolUse) (string, func(*trust.Grants) *trust.Grants, string) {
	if u.Name != approval.BashTool {
		return u.Name, func(g *trust.Grants) *trust.Grants { return g.WithTool(u.Name) }, ""
	}
	cmd, _ := u.Input()["command"].(string)
	rules, ok := approval.GrantRules(cmd)
	if !ok {
		return "", nil, "This bash command is not one plain command (a pipe, a redirection, a substitution or quoting): no command rule can cover it. Approve this call once (<M-CR> or :Flemma tool:approve), or add a rule to tools.auto_approve."
	}
	return strings.Join(rules, ", "), func(g *trust.Grants) *trust.Grants { return g.WithCommands(rules...) }, ""
}

// alwaysOutcome applies the buffer's grants to the chain's outcome on u:
// a call nothing decided (the chain's default: it would ask) that a grant
// covers is approved by the user's grant. A decision of any resolver — a
// deny, or a rule that asks (a command that may run what a deny rule
// names) — stands: a grant never loosens what a rule of the user's config
// or a frontmatter decided. The gates apply to the approval as to any
// policy's (a call planted in a file still asks).
func (sess *session) alwaysOutcome(u *buffer.ToolUse, out approval.Outcome) approval.Outcome {
	if out.Decision != approval.RequireApproval || out.Resolver != "" {
		return out
	}
	sess.mu.Lock()
	g := sess.trustOf().ledger.Always
	sess.mu.Unlock()
	if g.Empty() {
		return out
	}
	if u.Name != approval.BashTool {
		if g.Tool(u.Name) {
			return approval.Outcome{Decision: approval.Approve, Resolver: ResolverAlways, Rule: u.Name}
		}
		return out
	}
	cmd, ok := u.Input()["command"].(string)
	if !ok {
		return out
	}
	for _, rule := range g.Commands() {
		if approval.MatchCommand(rule, cmd, true) {
			return approval.Outcome{Decision: approval.Approve, Resolver: ResolverAlways, Rule: rule}
		}
	}
	return out
}

// grantsText is what :Flemma tool:list says of the buffer's grants ("" when
// none).
func (sess *session) grantsText() string {
	sess.mu.Lock()
	g := sess.trustOf().ledger.Always
	sess.mu.Unlock()
	if g.Empty() {
		return ""
	}
	var all []string
	all = append(all, g.Tools()...)
	all = append(all, g.Commands()...)
	return "always allowed by you in this chat: " + strings.Join(all, ", ")
}

// recordGrant notes the grant in the audit log, as the user's decision.
func (h *Engine) recordGrant(key string, u *buffer.ToolUse, label string) {
	j := h.journal()
	if j == nil {
		return
	}
	ev := journal.Event{Buffer: key, CallID: u.ID, Tool: u.Name, InputHash: trust.CallHash(u),
		Decision: "always allowed", DecidedBy: trust.ByUser, Detail: label + " in this chat"}
	ctx, cancel := context.WithTimeout(context.Background(), journal.DefaultTimeout)
	defer cancel()
	if err := j.Record(ctx, ev); err != nil {
		h.journalFailed("record always allowed", err)
	}
}

// WireGrants are a buffer's trust.Grants as flemma.trust keeps them.
type WireGrants struct {
	Tools    []string `msgpack:"tools"`
	Commands []string `msgpack:"commands"`
}

func grantsToWire(g *trust.Grants) WireGrants {
	return WireGrants{Tools: append([]string{}, g.Tools()...), Commands: append([]string{}, g.Commands()...)}
}

// grantsFromWire reads what the editor kept (nil: none). Only the host
// ever gives the editor grants (TrustGrant, after the user's action).
func grantsFromWire(w *WireGrants) *trust.Grants {
	if w == nil || len(w.Tools) == 0 && len(w.Commands) == 0 {
		return nil
	}
	var g *trust.Grants
	for _, t := range w.Tools {
		g = g.WithTool(t)
	}
	return g.WithCommands(w.Commands...)
}
