package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
)

// BenchmarkCall is one MCP tool call through the executor (schema
// validation, the call, redaction): over stdio to a server process (the
// test binary), and in memory (the SDK alone, no process). The stdio figure
// is docs/benchmarks.md's MCP round trip.
func BenchmarkCall(b *testing.B) {
	for _, tc := range []struct {
		name  string
		setup func(b *testing.B) (*Manager, *tools.Registry)
	}{
		{"stdio", func(b *testing.B) (*Manager, *tools.Registry) { return stdio(b, nil) }},
		{"in_memory", func(b *testing.B) (*Manager, *tools.Registry) {
			m, reg := inMemory(b)
			_ = m.Configure(map[string]ServerConfig{"test": {Command: "unused"}}, nil)
			return m, reg
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, reg := tc.setup(b)
			m.Ensure(context.Background())
			ex := &tools.Executor{Registry: reg}
			call := tools.Call{ID: "b", Tool: "mcp:test:echo", Timeout: 10 * time.Second}
			in := json.RawMessage(`{"text":"ping"}`)
			b.ResetTimer()
			for b.Loop() {
				if res := ex.Run(context.Background(), call, in); res.IsError {
					b.Fatal(res.Content)
				}
			}
		})
	}
}
