package cycle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A replay script (provider/replay.go) written by the test: each turn is an
// Anthropic stream with some text and the given tool calls.

type call struct {
	id, name string
	input    map[string]any
}

type turn struct {
	text  string
	calls []call
	stop  string // the stop reason (default end_turn, or tool_use with calls)
	cut   string // raw arguments of a last call cut inside its input
}

func sseEvent(b *strings.Builder, v map[string]any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(b, "event: %s\ndata: %s\n\n", v["type"], data)
}

func (tr turn) sse() string {
	var b strings.Builder
	sseEvent(&b, map[string]any{"type": "message_start", "message": map[string]any{"id": "msg", "type": "message", "role": "assistant",
		"model": "claude-test", "content": []any{}, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	i := 0
	if tr.text != "" {
		sseEvent(&b, map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		sseEvent(&b, map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": tr.text}})
		sseEvent(&b, map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, c := range tr.calls {
		in, _ := json.Marshal(c.input)
		sseEvent(&b, map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}})
		sseEvent(&b, map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		sseEvent(&b, map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if tr.cut != "" {
		sseEvent(&b, map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": "toolu_cut", "name": "bash", "input": map[string]any{}}})
		sseEvent(&b, map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": tr.cut}})
		sseEvent(&b, map[string]any{"type": "content_block_stop", "index": i})
	}
	stop := "end_turn"
	if len(tr.calls) > 0 {
		stop = "tool_use"
	}
	if tr.stop != "" {
		stop = tr.stop
	}
	sseEvent(&b, map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 7}})
	sseEvent(&b, map[string]any{"type": "message_stop"})
	return b.String()
}

// script writes a replay script and returns the setup that uses it.
func script(t *testing.T, turns ...turn) map[string]any {
	t.Helper()
	var b strings.Builder
	b.WriteString("# written by a cycle test\n")
	for _, tr := range turns {
		b.WriteString("=== turn ===\n")
		b.WriteString(tr.sse())
	}
	path := filepath.Join(t.TempDir(), "script.sse")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"provider": "replay", "providers": map[string]any{"replay": map[string]any{"file": path}}}
}

// with merges setup tables (later ones win, one level deep).
func with(parts ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range parts {
		for k, v := range p {
			out[k] = v
		}
	}
	return out
}
