package cycle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/ssetest"
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

// sse is the turn as an Anthropic event stream.
func (tr turn) sse() string {
	t := ssetest.Turn{Text: tr.text, Stop: tr.stop, Cut: tr.cut}
	for _, c := range tr.calls {
		in, _ := json.Marshal(c.input)
		t.Calls = append(t.Calls, ssetest.Call{ID: c.id, Name: c.name, Input: string(in)})
	}
	return t.String()
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
