package options

import (
	"reflect"
	"testing"
	"time"
)

func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name      string
		raw       map[string]any
		wantList  []string
		isList    bool
		maxConc   int
		autopilot bool
	}{
		{"defaults", map[string]any{}, []string{"$default"}, true, 2, true},
		{"empty lua tables arrive as arrays", map[string]any{"tools": map[string]any{"presets": []any{}, "auto_approve": []any{}}}, []string{}, true, 2, true},
		{"list", map[string]any{"tools": map[string]any{"auto_approve": []any{"$readonly", "calculator"}, "max_concurrent": int64(0)}}, []string{"$readonly", "calculator"}, true, 0, true},
		{"function marker", map[string]any{"tools": map[string]any{"auto_approve": map[string]any{"__lua_function": true}}}, nil, false, 2, true},
		{"module path", map[string]any{"tools": map[string]any{"auto_approve": "my.policy"}}, nil, false, 2, true},
		{"autopilot off", map[string]any{"tools": map[string]any{"autopilot": map[string]any{"enabled": false, "max_turns": int64(3)}}}, []string{"$default"}, true, 2, false},
		{"msgpack any keys", map[string]any{"tools": map[any]any{"max_concurrent": int64(4)}}, []string{"$default"}, true, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, probs := decodeConfig(tt.raw)
			if len(probs) > 0 {
				t.Fatalf("decodeConfig(%v) problems: %v", tt.raw, probs)
			}
			list, isList := c.AutoApproveList()
			if isList != tt.isList || (tt.isList && !reflect.DeepEqual(list, tt.wantList)) {
				t.Errorf("autoApproveList = %v, %v; want %v, %v", list, isList, tt.wantList, tt.isList)
			}
			e := Resolve(c, Runtime{}, Buffer{})
			if got := e.MaxConcurrent; got != tt.maxConc {
				t.Errorf("maxConcurrent = %d, want %d", got, tt.maxConc)
			}
			if got := e.Autopilot; got != tt.autopilot {
				t.Errorf("autopilot = %v, want %v", got, tt.autopilot)
			}
		})
	}
}

func TestDecodeConfigReportsWrongTypes(t *testing.T) {
	c, probs := decodeConfig(map[string]any{"provider": "openai", "tools": map[string]any{"max_concurrent": "lots"}})
	if len(probs) != 1 || probs[0].Path != "tools.max_concurrent" || c.Provider != "openai" {
		t.Errorf("max_concurrent = \"lots\": %v, provider %q", probs, c.Provider)
	}
}

// The key the Vertex error names is the one that reaches the provider, and
// models = {…} decodes.
func TestDecodeProvidersAndModels(t *testing.T) {
	c, probs := decodeConfig(map[string]any{"provider": "vertex",
		"providers": map[string]any{"vertex": map[string]any{"project": "my-proj", "location": "europe-west4"}},
		"models":    map[string]any{"my-llm": map[string]any{"max_output_tokens": int64(4096), "thinking": "budget", "input_price": 0.5}}})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	e := Resolve(c, Runtime{}, Buffer{})
	if e.Endpoint.Project != "my-proj" || e.Endpoint.Location != "europe-west4" {
		t.Errorf("endpoint = %+v", e.Endpoint)
	}
	m := c.Models["my-llm"]
	if m.MaxOutputTokens != 4096 || m.Thinking != "budget" || m.InputPrice == nil || *m.InputPrice != 0.5 || m.OutputPrice != nil {
		t.Errorf("models = %+v", c.Models)
	}
	c, probs = decodeConfig(map[string]any{"models": map[string]any{"x": map[string]any{"max_output_tokens": "lots", "context_window": int64(1000)}}})
	if len(probs) != 1 || probs[0].Path != "models.x.max_output_tokens" || c.Models["x"].ContextWindow != 1000 {
		t.Errorf("max_output_tokens = \"lots\": %v, %+v", probs, c.Models)
	}
}

// The send section: defaults, the user's values in seconds, negative = 0
// (no retries, no limit), fractions kept.
func TestSendOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   map[string]any
		retry Retry
		to    Timeouts
	}{
		{"defaults", map[string]any{}, Retry{4, 2 * time.Second, 60 * time.Second}, Timeouts{120 * time.Second, 120 * time.Second, 600 * time.Second}},
		{"set", map[string]any{"send": map[string]any{"retries": int64(2), "retry_delay": 0.5, "retry_max_delay": int64(10),
			"timeouts": map[string]any{"first_byte": int64(30), "idle": 0.05, "total": int64(0)}}},
			Retry{2, 500 * time.Millisecond, 10 * time.Second}, Timeouts{30 * time.Second, 50 * time.Millisecond, 0}},
		{"negative and zero", map[string]any{"send": map[string]any{"retries": int64(-1), "retry_delay": int64(0), "timeouts": map[string]any{"idle": int64(-5)}}},
			Retry{0, 2 * time.Second, 60 * time.Second}, Timeouts{120 * time.Second, 0, 600 * time.Second}},
		{"empty lua tables", map[string]any{"send": map[string]any{"timeouts": []any{}}}, Retry{4, 2 * time.Second, 60 * time.Second}, Timeouts{120 * time.Second, 120 * time.Second, 600 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, probs := decodeConfig(tc.raw)
			if len(probs) > 0 {
				t.Fatal(probs)
			}
			e := Resolve(c, Runtime{}, Buffer{})
			if e.Retry != tc.retry || e.Timeouts != tc.to {
				t.Errorf("got %+v %+v, want %+v %+v", e.Retry, e.Timeouts, tc.retry, tc.to)
			}
		})
	}
}

func TestDecodeMCPServers(t *testing.T) {
	c, probs := decodeConfig(map[string]any{"mcp_servers": map[string]any{
		"fs":     map[string]any{"command": "mcp-fs", "args": []any{"--root", "."}, "env": map[string]any{"TOKEN": "t"}},
		"remote": map[string]any{"url": "https://example.invalid/mcp", "headers": map[string]any{"Authorization": "Bearer x"}},
		"bare":   map[string]any{"command": "srv", "args": []any{}, "env": []any{}}, // Lua's {}
	}})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	want := map[string]MCPServer{
		"fs":     {Command: "mcp-fs", Args: []string{"--root", "."}, Env: map[string]string{"TOKEN": "t"}},
		"remote": {URL: "https://example.invalid/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		"bare":   {Command: "srv"},
	}
	if !reflect.DeepEqual(c.MCPServers, want) {
		t.Fatalf("mcp_servers = %+v, want %+v", c.MCPServers, want)
	}
	if _, probs := decodeConfig(map[string]any{"mcp_servers": map[string]any{"x": map[string]any{"args": "not a list"}}}); len(probs) != 1 || probs[0].Path != "mcp_servers.x.args" {
		t.Errorf("args as a string: %v", probs)
	}
}

// An entry's key the schema's Entries refuse (a wire no provider speaks, a
// fractional token count) is left out; the rest of the entry applies.
func TestDecodeEntriesChecked(t *testing.T) {
	c, probs, err := Decode(`{"providers":{"x":{"wire":"grpc","base_url":"http://h/v1"}},"models":{"m":{"context_window":1.5,"thinking":"none"}}}`)
	if err != nil || len(probs) != 2 || probs[0].Path != "models.m.context_window" || probs[1].Path != "providers.x.wire" {
		t.Fatalf("problems %v %v", probs, err)
	}
	if c.Providers["x"].BaseURL != "http://h/v1" || c.Providers["x"].Wire != "" || c.Models["m"].Thinking != "none" {
		t.Errorf("the rest of the entries: %+v %+v", c.Providers["x"], c.Models["m"])
	}
}
