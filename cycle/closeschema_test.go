package cycle

import (
	"reflect"
	"strings"
	"testing"
)

func TestCloseSchema(t *testing.T) {
	s := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a":    map[string]any{"type": "string"},
			"opts": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}}},
			"free": map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": true},
			"list": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"y": map[string]any{}}}},
			"any":  map[string]any{"type": "object"},
		},
		"anyOf": []any{map[string]any{"properties": map[string]any{"z": map[string]any{}}}},
	}
	closeSchema(s)
	props := s["properties"].(map[string]any)
	for what, got := range map[string]any{
		"top":                    s["additionalProperties"],
		"a nested object":        props["opts"].(map[string]any)["additionalProperties"],
		"an object in an array":  props["list"].(map[string]any)["items"].(map[string]any)["additionalProperties"],
		"an alternative":         s["anyOf"].([]any)[0].(map[string]any)["additionalProperties"],
		"an explicit opt-out":    props["free"].(map[string]any)["additionalProperties"],
		"an object naming none":  props["any"].(map[string]any)["additionalProperties"],
		"a string (not touched)": props["a"].(map[string]any)["additionalProperties"],
	} {
		want := map[string]any{"top": false, "a nested object": false, "an object in an array": false, "an alternative": false, "an explicit opt-out": true}[what]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: additionalProperties = %v, want %v", what, got, want)
		}
	}
}

// A Lua tool rejects a field its schema never named, unless it opts out
// with open_schema = true.
func TestLuaToolSchemasAreClosed(t *testing.T) {
	env := newEnv(t, noSandbox())
	defs := `[{"name":"closed","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}},
		{"name":"open","open_schema":true,"input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]`
	if r, err := env.h.onDefineTools(defs); err != nil || len(r.Errors) > 0 {
		t.Fatalf("%v %v", r, err)
	}
	r := env.runTool("closed", `{"q":"x","extra":1}`)
	if !r.IsError || !strings.Contains(r.Content, "additional properties 'extra' not allowed") {
		t.Errorf("closed: %+v", r)
	}
	r = env.runTool("open", `{"q":"x","extra":1}`)
	if strings.Contains(r.Content, "additional properties") {
		t.Errorf("open: %+v", r)
	}
}
