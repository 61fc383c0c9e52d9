package tools

import (
	"context"
	"encoding/json"
	"testing"
)

type noopInput struct {
	Text  string  `json:"text" desc:"anything"`
	Label *string `json:"label" desc:"optional label"`
}

// BenchmarkExecutorOverhead is the cost of one built-in call excluding the
// tool's own work: lookup, schema validation, decoding into the input
// struct, the timeout context, the goroutine with panic containment.
func BenchmarkExecutorOverhead(b *testing.B) {
	r := NewRegistry()
	r.MustAdd(Typed(Spec{Name: "noop", Description: "does nothing"}, func(context.Context, Call, noopInput) (Output, error) {
		return Output{Text: "ok"}, nil
	}))
	e := &Executor{Registry: r}
	in := json.RawMessage(`{"text":"hello","label":null}`)
	b.ReportAllocs()
	for b.Loop() {
		if res := e.Run(context.Background(), Call{ID: "x", Tool: "noop"}, in); res.IsError {
			b.Fatal(res.Content)
		}
	}
}
