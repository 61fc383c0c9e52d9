package cycle

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/provider"
)

// What README and the help say (issue 27 item 9): when one of a response's
// calls waits for approval, autopilot runs none of them, not even the
// approved ones; the user's next <C-]> runs the approved ones, with the
// pending one still undecided.
func TestApprovedCallsWaitWithAPendingOne(t *testing.T) {
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventToolUse, ToolUse: &provider.ToolUse{ID: "toolu_c", Name: "calculator", Input: json.RawMessage(`{"expression":"1+1"}`)}},
		{Kind: provider.EventToolUse, ToolUse: &provider.ToolUse{ID: "toolu_b", Name: "bash", Input: json.RawMessage(`{"command":"ls","label":"l"}`)}},
		{Kind: provider.EventDone, StopReason: "tool_use"},
	}}
	setup := with(noSandbox(), replayAt, map[string]any{
		"tools": map[string]any{"auto_approve": []any{"calculator"}, "autopilot": map[string]any{"enabled": true}},
	})
	env := newEnvWith(t, setup, Deps{Providers: (&factory{prov: prov}).New})
	env.ed.load(1, "", env.dir, "@You:\ncompute\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "`toolu_b`")
	env.ed.waitIdle(t, env.h, 1)
	doc := buffer.Parse(strings.Split(env.ed.String(1), "\n"))
	c, b := doc.Result("toolu_c"), doc.Result("toolu_b")
	if c == nil || b == nil || c.Status != buffer.StatusApproved || b.Status != buffer.StatusPending {
		t.Fatalf("after the response, want toolu_c approved (not run) and toolu_b pending:\n%s", env.ed.String(1))
	}
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	doc = buffer.Parse(strings.Split(env.ed.String(1), "\n"))
	c, b = doc.Result("toolu_c"), doc.Result("toolu_b")
	if c == nil || c.Status != "" || strings.TrimSpace(c.Content) != "2" || b == nil || b.Status != buffer.StatusPending {
		t.Errorf("after the next press, want toolu_c run and toolu_b still pending:\n%s", env.ed.String(1))
	}
}

// <M-CR> on the call autopilot paused on (and :Flemma tool:resume, which
// runs the same way) goes on like a press: once the call is done, with
// nothing else pending, autopilot sends the result (issue 27 item 8).
func TestAutopilotGoesOnAfterExecuteAt(t *testing.T) {
	prov := &scripted{events: []provider.Event{
		{Kind: provider.EventToolUse, ToolUse: &provider.ToolUse{ID: "toolu_c", Name: "calculator", Input: json.RawMessage(`{"expression":"1+1"}`)}},
		{Kind: provider.EventDone, StopReason: "tool_use"},
	}}
	setup := with(noSandbox(), replayAt, map[string]any{"tools": map[string]any{"autopilot": map[string]any{"enabled": true}}})
	env := newEnvWith(t, setup, Deps{Providers: (&factory{prov: prov}).New})
	env.ed.load(1, "", env.dir, "@You:\ncompute\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "status=pending")
	env.ed.waitIdle(t, env.h, 1)
	if _, err := env.h.onExecuteAt(1, resultLine(env, 1, "toolu_c")); err != nil {
		t.Fatal(err)
	}
	env.ed.wait(t, 1, "the result sent by autopilot", func(*fakeBuf) bool {
		prov.mu.Lock()
		defer prov.mu.Unlock()
		return len(prov.reqs) == 2
	})
	env.ed.waitIdle(t, env.h, 1)
	prov.mu.Lock()
	last := prov.reqs[1].Messages
	prov.mu.Unlock()
	if len(last) < 3 {
		t.Errorf("the second request has %d messages, want the call's result in it", len(last))
	}
}
