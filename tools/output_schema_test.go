package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// fixedTool is a tool as the host registers Lua tools: a raw Tool whose
// result is whatever it was given (a Lua table arrives as map[string]any or
// []any, numbers as int64 or float64).
type fixedTool struct {
	spec Spec
	out  Output
}

func (t *fixedTool) Spec() Spec { return t.spec }
func (t *fixedTool) Run(context.Context, Call, json.RawMessage) (Output, error) {
	return t.out, nil
}

// TestOutputSchema: a result that matches output_schema passes untouched,
// one that does not is a model-facing error that says where it is wrong —
// for Lua-style tables, Go values, arrays and namespaced tool names.
func TestOutputSchema(t *testing.T) {
	schema := func() map[string]any {
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"count": map[string]any{"type": "integer"},
				"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			},
			"required":             []any{"count"},
			"additionalProperties": false,
		}
	}
	type goResult struct {
		Count int      `json:"count"`
		Items []string `json:"items,omitempty"`
	}
	type badGoResult struct {
		Count string `json:"count"`
	}
	arraySchema := map[string]any{"type": "array", "items": map[string]any{"type": "number"}}
	tests := []struct {
		name   string
		tool   string
		schema map[string]any
		out    Output
		ok     bool
		has    []string
	}{
		{"lua table valid", "lua_tool", schema(), Output{JSON: map[string]any{"count": int64(2), "items": []any{"a", "b"}}}, true, []string{`"count": 2`}},
		{"lua table float integer", "lua_tool", schema(), Output{JSON: map[string]any{"count": float64(3)}}, true, []string{`"count": 3`}},
		{"lua table wrong type", "lua_tool", schema(), Output{JSON: map[string]any{"count": "two"}}, false,
			[]string{"Tool 'lua_tool' returned output that does not match its output_schema", "/count", "want integer"}},
		{"lua table missing property", "lua_tool", schema(), Output{JSON: map[string]any{"items": []any{}}}, false,
			[]string{"does not match its output_schema", "count"}},
		{"lua table extra property", "lua_tool", schema(), Output{JSON: map[string]any{"count": int64(1), "secret": "x"}}, false,
			[]string{"does not match its output_schema", "secret"}},
		{"go struct valid", "go_tool", schema(), Output{JSON: goResult{Count: 1, Items: []string{"x"}}}, true, []string{`"items": [`}},
		{"go struct invalid", "go_tool", schema(), Output{JSON: badGoResult{Count: "1"}}, false, []string{"/count"}},
		{"go map valid", "go_tool", schema(), Output{JSON: map[string]int{"count": 7}}, true, []string{`"count": 7`}},
		{"array valid", "list_tool", arraySchema, Output{JSON: []any{1.5, int64(2)}}, true, nil},
		{"array invalid", "list_tool", arraySchema, Output{JSON: []any{"x"}}, false, []string{"/0"}},
		{"namespaced valid", "slack:channels_list", schema(), Output{JSON: map[string]any{"count": int64(0)}}, true, nil},
		{"namespaced invalid", "slack:channels_list", schema(), Output{JSON: map[string]any{"count": true}}, false, []string{"Tool 'slack:channels_list'", "/count"}},
		// Text results are held to an object schema too (issue 28 item 9).
		{"text that is not JSON", "lua_tool", schema(), Output{Text: "plain"}, false,
			[]string{"Tool 'lua_tool' returned text that is not the JSON its output_schema describes", "The output was discarded"}},
		{"text JSON valid", "lua_tool", schema(), Output{Text: `{"count": 4}`}, true, []string{`"count": 4`}},
		{"text JSON invalid", "lua_tool", schema(), Output{Text: `{"count": "four"}`}, false, []string{"does not match its output_schema", "/count"}},
		{"text under a string schema is not checked", "lua_tool", map[string]any{"type": "string"}, Output{Text: "plain"}, true, []string{"plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			r.MustAdd(&fixedTool{spec: Spec{Name: tt.tool, Description: "d", InputSchema: map[string]any{"type": "object"}, OutputSchema: tt.schema}, out: tt.out})
			var logged []string
			e := &Executor{Registry: r, Logf: func(f string, a ...any) { logged = append(logged, f) }}
			res := e.Run(context.Background(), Call{ID: "t1", Tool: tt.tool}, json.RawMessage(`{}`))
			if res.IsError == tt.ok {
				t.Fatalf("Run = %+v, want IsError %v", res, !tt.ok)
			}
			if !tt.ok && res.Kind != "ToolError" {
				t.Errorf("Kind = %q, want ToolError", res.Kind)
			}
			for _, h := range tt.has {
				if !strings.Contains(res.Content, h) {
					t.Errorf("content does not contain %q:\n%s", h, res.Content)
				}
			}
			if strings.Contains(res.Content, "see logs") || strings.Contains(res.Content, "compile") {
				t.Errorf("content is not a clear answer: %s", res.Content)
			}
			if !tt.ok && len(logged) == 0 {
				t.Errorf("an output that does not match was not logged")
			}
		})
	}
}

// TestOutputSchemaInvalid: a schema that does not compile is the tool's
// fault: an internal error (logged), never a silent pass.
func TestOutputSchemaInvalid(t *testing.T) {
	r := NewRegistry()
	r.MustAdd(&fixedTool{spec: Spec{Name: "broken", Description: "d", OutputSchema: map[string]any{"type": 42}}, out: Output{JSON: map[string]any{}}})
	var logged []string
	e := &Executor{Registry: r, Logf: func(f string, a ...any) { logged = append(logged, f) }}
	res := e.Run(context.Background(), Call{ID: "t1", Tool: "broken"}, json.RawMessage(`{}`))
	if !res.IsError || res.Kind != "InternalError" {
		t.Errorf("Run = %+v, want InternalError", res)
	}
	if len(logged) == 0 {
		t.Errorf("the invalid schema was not logged")
	}
}

// TestInputSchemaNamespaced: the input of a namespaced tool ("ns:name")
// is validated like any other.
func TestInputSchemaNamespaced(t *testing.T) {
	r := NewRegistry()
	r.MustAdd(&fixedTool{spec: Spec{Name: "slack:post", Description: "d", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"},
	}}, out: Output{Text: "ok"}})
	e := &Executor{Registry: r}
	if res := e.Run(context.Background(), Call{ID: "t1", Tool: "slack:post"}, json.RawMessage(`{"text":"hi"}`)); res.IsError {
		t.Errorf("valid input = %+v", res)
	}
	if res := e.Run(context.Background(), Call{ID: "t1", Tool: "slack:post"}, json.RawMessage(`{"text":1}`)); !res.IsError || res.Kind != "ToolValidationError" {
		t.Errorf("invalid input = %+v, want ToolValidationError", res)
	}
}
