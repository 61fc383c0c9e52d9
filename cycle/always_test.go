package cycle

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/tools"
)

// :Flemma tool:allow-always on a pending call: the call is approved, the
// grant is the buffer's (kept in the editor with the ledger, named by
// tool:list, audited as the user's), and it approves only what nothing
// else decided — never across buffers, never over a rule that denies or
// asks, never a bash command its rule does not cover.
func TestAllowAlways(t *testing.T) {
	env := newEnv(t, noSandbox())
	text := "@You:\nhi\n\n@Assistant:\n" +
		"**Tool Use:** `bash` (`toolu_a`)\n\n```json\n{\"command\": \"ls -l\", \"label\": \"a\"}\n```\n\n" +
		"**Tool Use:** `bash` (`toolu_p`)\n\n```json\n{\"command\": \"ls | wc\", \"label\": \"p\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.ed.load(2, filepath.Join(env.dir, "y.chat"), env.dir, "@You:\nother\n")
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)

	// Not one plain command: no rule can cover it, nothing is granted.
	r, err := env.h.onAllowAlways(1, resultLine(env, 1, "toolu_p"))
	if err != nil || r.Phase != "none" || !strings.Contains(r.Message, "not one plain command") {
		t.Fatalf("pipe: %+v %v", r, err)
	}
	r, err = env.h.onAllowAlways(1, resultLine(env, 1, "toolu_a"))
	if err != nil || r.Phase != "status" || !strings.Contains(r.Message, "bash(ls *)") {
		t.Fatalf("allow-always: %+v %v", r, err)
	}
	env.ed.waitIdle(t, env.h, 1)
	env.ed.mu.Lock()
	kept := env.ed.bufs[1].always
	env.ed.mu.Unlock()
	if kept == nil || !strings.Contains(strings.Join(kept.Commands, " "), "bash(ls *)") {
		t.Errorf("the editor keeps %+v", kept)
	}
	// The call itself is approved now: a second allow-always says so.
	if r, _ := env.h.onAllowAlways(1, resultLine(env, 1, "toolu_a")); r.Phase != "none" || !strings.Contains(r.Message, "does not wait for your approval") {
		t.Errorf("again: %+v", r)
	}
	list, _ := env.h.onToolList(1)
	if !strings.Contains(list.Message+list.Text, "always allowed by you in this chat: bash(ls *)") {
		t.Errorf("tool:list: %+v", list)
	}
	log, _ := env.h.onJournalLog(1, false)
	if !strings.Contains(log.Text, "always allowed, by user") {
		t.Errorf("the audit log lacks the grant:\n%s", log.Text)
	}

	ask := approval.Outcome{Decision: approval.RequireApproval}
	use := func(name, cmd string) *buffer.ToolUse {
		return &buffer.ToolUse{ID: "toolu_n", Name: name, Args: map[string]any{"command": cmd}}
	}
	s1, s2 := env.h.session(1), env.h.session(2)
	for _, c := range []struct {
		sess *session
		u    *buffer.ToolUse
		in   approval.Outcome
		want approval.Decision
	}{
		{s1, use("bash", "ls -a src"), ask, approval.Approve},
		{s1, use("bash", "ls; rm -rf ~"), ask, approval.RequireApproval},
		{s1, use("bash", "rm -rf build"), ask, approval.RequireApproval},
		{s1, use("bash", "ls"), approval.Outcome{Decision: approval.Deny, Resolver: "config"}, approval.Deny},
		{s1, use("bash", "ls"), approval.Outcome{Decision: approval.RequireApproval, Resolver: "config"}, approval.RequireApproval},
		{s1, use("write", ""), ask, approval.RequireApproval},
		{s2, use("bash", "ls -a src"), ask, approval.RequireApproval}, // another buffer
	} {
		if got := c.sess.alwaysOutcome(c.u, c.in); got.Decision != c.want {
			t.Errorf("buffer %d, %s %v: %v, want %v", c.sess.bufnr, c.u.Name, c.u.Args, got, c.want)
		} else if got.Decision == approval.Approve && got.Resolver != ResolverAlways {
			t.Errorf("approved by %q", got.Resolver)
		}
	}
	if g := s2.grantsText(); g != "" {
		t.Errorf("buffer 2 has grants: %s", g)
	}
}

// A tool other than bash is granted by name.
func TestAllowAlwaysTool(t *testing.T) {
	label, add, why := grantFor(&buffer.ToolUse{Name: "write", Args: map[string]any{"path": "x"}})
	if why != "" || label != "write" {
		t.Fatalf("grantFor: %q %q", label, why)
	}
	g := add(nil)
	if !g.Tool("write") || g.Tool("edit") {
		t.Errorf("grants: %+v", g)
	}
	if w := grantsFromWire(&WireGrants{Tools: []string{"write"}}); w == nil || !w.Tool("write") {
		t.Errorf("from the wire: %+v", w)
	}
	if got := grantsToWire(g); len(got.Tools) != 1 || got.Tools[0] != "write" {
		t.Errorf("to the wire: %+v", got)
	}
}

// An engine given no Proposer previews no diff and cannot undo, and says so.
func TestNoProposer(t *testing.T) {
	var p noProposer
	if p.Proposes("write") {
		t.Error("proposes write")
	}
	if _, err := p.Propose(tools.Call{ID: "c", Tool: "write"}, "write", nil); err == nil {
		t.Error("Propose: no error")
	}
	if _, err := p.ProposeContent(nil, "/x", "x", nil); err == nil {
		t.Error("ProposeContent: no error")
	}
	if err := p.Undo(tools.Change{Path: "/x"}, ""); err == nil || !strings.Contains(err.Error(), "cannot undo") {
		t.Errorf("Undo: %v", err)
	}
}
