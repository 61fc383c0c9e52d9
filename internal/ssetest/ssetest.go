// Package ssetest writes Anthropic Messages event streams (SSE) for the
// tests of other packages: the replay scripts of the engine's and the
// headless runs' tests, and the answers of the fake Anthropic servers of the
// end-to-end tests. Only tests import it.
package ssetest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Call is one tool call of a response: its id, the tool, and its input as
// raw JSON.
type Call struct{ ID, Name, Input string }

// Turn is one response: text (streamed a word at a time), then tool calls.
type Turn struct {
	Text  string
	Calls []Call
	// Stop is the stop reason: "end_turn" by default, "tool_use" when
	// there are calls.
	Stop string
	// Cut, when set, is the raw input of a last bash call (toolu_cut) that
	// the response ended inside of.
	Cut string
	// InputTokens and OutputTokens are the usage reported (default 10 and
	// 7).
	InputTokens, OutputTokens int
}

// String is the turn as an event stream.
func (t Turn) String() string {
	var b strings.Builder
	ev := func(v map[string]any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", v["type"], data)
	}
	in, out := t.InputTokens, t.OutputTokens
	if in == 0 {
		in = 10
	}
	if out == 0 {
		out = 7
	}
	ev(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": "test-model", "content": []any{}, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	i := 0
	block := func(start map[string]any, deltas ...map[string]any) {
		ev(map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		for _, d := range deltas {
			ev(map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		ev(map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if t.Text != "" {
		var deltas []map[string]any
		for _, w := range strings.SplitAfter(t.Text, " ") {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": w})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas...)
	}
	call := func(id, name, input string) {
		block(map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}},
			map[string]any{"type": "input_json_delta", "partial_json": input})
	}
	for _, c := range t.Calls {
		call(c.ID, c.Name, c.Input)
	}
	if t.Cut != "" {
		call("toolu_cut", "bash", t.Cut)
	}
	stop := t.Stop
	switch {
	case stop != "":
	case len(t.Calls) > 0:
		stop = "tool_use"
	default:
		stop = "end_turn"
	}
	ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": out}})
	ev(map[string]any{"type": "message_stop"})
	return b.String()
}
