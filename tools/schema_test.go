package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Issue 24, class 8: a schema that refers to an external URL is refused
// without the URL being opened — a FIFO, which would block whoever opens
// it, included — and a tool's schema never holds up another tool's call.
func TestSchemaRefusesExternalURLs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(secret, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []map[string]any{
		{"$ref": "file://" + fifo},
		{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "file://" + secret}}},
		{"$schema": "file://" + fifo, "type": "object"},
		{"$id": "file://" + dir + "/", "$ref": "schema.json"},
		{"$ref": "http://127.0.0.1:1/schema.json"},
	} {
		done := make(chan error, 1)
		go func() { _, err := CompileSchema(schema); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "self-contained") {
				t.Errorf("CompileSchema(%v) = %v, want a refusal", schema, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("CompileSchema(%v) blocked", schema)
		}
	}
	// Built-in drafts and local references still work.
	if _, err := CompileSchema(map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "$defs": map[string]any{"s": map[string]any{"type": "string"}},
		"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/s"}}}); err != nil {
		t.Errorf("a self-contained schema: %v", err)
	}
}

func TestSchemaBounds(t *testing.T) {
	deep := map[string]any{"type": "object"}
	for i := 0; i < 100; i++ {
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	if _, err := CompileSchema(deep); err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Errorf("deep schema: %v", err)
	}
	big := map[string]any{"type": "object", "description": strings.Repeat("x", MaxSchemaBytes)}
	if _, err := CompileSchema(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big schema: %v", err)
	}
}

// A call of a tool whose schema refers to a FIFO fails with a readable
// error, and a call of another tool running meanwhile is not held up.
func TestSchemaOfOneToolDoesNotBlockAnother(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry()
	r.MustAdd(&fixedTool{spec: Spec{Name: "evil", Description: "d", InputSchema: map[string]any{"$ref": "file://" + fifo}}, out: Output{Text: "ran"}})
	r.MustAdd(&fixedTool{spec: Spec{Name: "read", Description: "d", InputSchema: map[string]any{"type": "object"}}, out: Output{Text: "ok"}})
	e := &Executor{Registry: r}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, name := range []string{"evil", "read"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.Run(context.Background(), Call{ID: name, Tool: name}, json.RawMessage(`{}`))
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call blocked")
	}
	if !results[0].IsError || results[0].Content == "ran" {
		t.Errorf("evil = %+v, want an error", results[0])
	}
	if results[1].IsError || results[1].Content != "ok" {
		t.Errorf("read = %+v", results[1])
	}
}

// Issue 24, class 12: an input deeper than the bound is a validation error
// the model can read, decided before the input is decoded.
func TestDeepInputIsAValidationError(t *testing.T) {
	r := NewRegistry()
	r.MustAdd(&fixedTool{spec: Spec{Name: "take", Description: "d", InputSchema: map[string]any{"type": "object"}}, out: Output{Text: "ran"}})
	e := &Executor{Registry: r}
	deep := `{"v": ` + strings.Repeat(`[`, 9000) + strings.Repeat(`]`, 9000) + `}`
	res := e.Run(context.Background(), Call{ID: "d", Tool: "take"}, json.RawMessage(deep))
	if !res.IsError || res.Kind != "ToolValidationError" || !strings.Contains(res.Content, "nested deeper than 64 levels") {
		t.Errorf("deep input = %+v", res)
	}
	ok := `{"v": ` + strings.Repeat(`[`, 60) + strings.Repeat(`]`, 60) + `}`
	if res := e.Run(context.Background(), Call{ID: "o", Tool: "take"}, json.RawMessage(ok)); res.IsError {
		t.Errorf("60 levels = %+v", res)
	}
}
