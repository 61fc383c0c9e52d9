package options

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/frontmatter"
)

func ptr[T any](v T) *T { return &v }

func setup(t *testing.T, js string) Config {
	t.Helper()
	c, probs, err := Decode(js)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	return c
}

// The one precedence function, in one table: setup, then the session's
// :Flemma switch/autopilot, then the buffer's frontmatter, which narrows
// unless the user trusts the buffer.
func TestResolve(t *testing.T) {
	usable := []string{"bash", "edit", "ls", "read"}
	tests := []struct {
		name  string
		setup string
		rt    Runtime
		fm    *frontmatter.Options
		trust bool
		check func(t *testing.T, e Effective)
	}{
		{"defaults", `{}`, Runtime{}, nil, false, func(t *testing.T, e Effective) {
			want := Effective{Provider: "anthropic", Mode: "enabled", Tools: usable, MaxConcurrent: 2, MaxCallsPerResponse: DefaultMaxCallsPerResponse, Autopilot: true, MaxTurns: 100,
				WebSearchUses: 5, WebFetchUses: 5, // the schema's defaults, as setup() sends them
				DefaultTimeout: 30e9, ToolTimeouts: map[string]time.Duration{"bash": 300e9}, CursorAfterResult: "result", SandboxEnabled: true,
				Retry:    Retry{Retries: DefaultRetries, Delay: DefaultRetryDelay, MaxDelay: DefaultRetryMaxDelay},
				Timeouts: Timeouts{FirstByte: DefaultFirstByte, Idle: DefaultIdle, Total: DefaultTotal}}
			if !reflect.DeepEqual(e, want) {
				t.Errorf("got  %+v\nwant %+v", e, want)
			}
		}},
		{"tools.default_timeout is the default class", `{"tools":{"default_timeout":45}}`, Runtime{}, nil, false, func(t *testing.T, e Effective) {
			if e.DefaultTimeout != 45e9 || e.ToolTimeouts["bash"] != 300e9 {
				t.Errorf("%v %v", e.DefaultTimeout, e.ToolTimeouts)
			}
		}},
		{"tools.timeouts.default wins over default_timeout; classes by name and tag", `{"tools":{"default_timeout":45,"timeouts":{"default":60,"bash":900,"mcp":120,"bad":-1}}}`,
			Runtime{}, nil, false, func(t *testing.T, e Effective) {
				if e.DefaultTimeout != 60e9 || !reflect.DeepEqual(e.ToolTimeouts, map[string]time.Duration{"bash": 900e9, "mcp": 120e9}) {
					t.Errorf("%v %v", e.DefaultTimeout, e.ToolTimeouts)
				}
			}},
		{"switch over setup", `{"provider":"anthropic","model":"m1","parameters":{"max_tokens":10,"thinking":false}}`,
			Runtime{Provider: "openai", Model: ptr("gpt"), MaxTokens: ptr(20)}, nil, false, func(t *testing.T, e Effective) {
				if e.Provider != "openai" || e.Model != "gpt" || e.MaxTokens != 20 || e.Thinking != "off" {
					t.Errorf("%+v", e)
				}
			}},
		{"frontmatter over switch", `{}`, Runtime{Provider: "openai", Model: ptr("gpt")},
			&frontmatter.Options{Model: ptr("fm-model"), Thinking: ptr("high"), Temperature: ptr(0.2)}, false, func(t *testing.T, e Effective) {
				if e.Provider != "openai" || e.Model != "fm-model" || e.Thinking != "high" || *e.Temperature != 0.2 {
					t.Errorf("%+v", e)
				}
			}},
		{"provider sections merge, the buffer's provider's endpoint", `{"parameters":{"openai":{"a":1,"b":1}},"providers":{"openai":{"base_url":"http://x"}}}`,
			Runtime{}, &frontmatter.Options{Provider: ptr("openai"), OpenAI: map[string]any{"b": 2}}, false, func(t *testing.T, e Effective) {
				if !reflect.DeepEqual(e.Extra, map[string]any{"a": float64(1), "b": 2}) || e.Endpoint.BaseURL != "http://x" {
					t.Errorf("extra %v endpoint %+v", e.Extra, e.Endpoint)
				}
			}},
		{"untrusted selection narrows", `{}`, Runtime{}, &frontmatter.Options{Tools: []string{"read", "calculator", "ls"}}, false, func(t *testing.T, e Effective) {
			if !reflect.DeepEqual(e.Tools, []string{"ls", "read"}) || !reflect.DeepEqual(e.Refused, []string{"calculator"}) {
				t.Errorf("tools %v refused %v", e.Tools, e.Refused)
			}
		}},
		{"trusted selection opts in", `{}`, Runtime{}, &frontmatter.Options{Tools: []string{"read", "calculator"}}, true, func(t *testing.T, e Effective) {
			if !reflect.DeepEqual(e.Tools, []string{"calculator", "read"}) || e.Refused != nil {
				t.Errorf("tools %v refused %v", e.Tools, e.Refused)
			}
		}},
		{"empty selection", `{}`, Runtime{}, &frontmatter.Options{Tools: []string{}}, false, func(t *testing.T, e Effective) {
			if len(e.Tools) != 0 || e.HasTool("bash") {
				t.Errorf("tools %v", e.Tools)
			}
		}},
		{"disabled mode sends no tools", `{"tools":{"mode":"disabled"}}`, Runtime{}, nil, false, func(t *testing.T, e Effective) {
			if e.Tools != nil || e.Mode != "disabled" {
				t.Errorf("%+v", e)
			}
		}},
		{"limits: untrusted lowers only", `{"tools":{"max_concurrent":4,"autopilot":{"max_turns":10}}}`, Runtime{},
			&frontmatter.Options{MaxConcurrent: ptr(8), MaxTurns: ptr(50)}, false, func(t *testing.T, e Effective) {
				if e.MaxConcurrent != 4 || e.MaxTurns != 10 {
					t.Errorf("%+v", e)
				}
			}},
		{"limits: untrusted 0 (unlimited) does not lift", `{"tools":{"max_concurrent":4}}`, Runtime{},
			&frontmatter.Options{MaxConcurrent: ptr(0)}, false, func(t *testing.T, e Effective) {
				if e.MaxConcurrent != 4 {
					t.Errorf("%+v", e)
				}
			}},
		{"limits: untrusted lower wins", `{"tools":{"max_concurrent":0,"autopilot":{"max_turns":10}}}`, Runtime{},
			&frontmatter.Options{MaxConcurrent: ptr(1), MaxTurns: ptr(3)}, false, func(t *testing.T, e Effective) {
				if e.MaxConcurrent != 1 || e.MaxTurns != 3 {
					t.Errorf("%+v", e)
				}
			}},
		{"limits: trusted raises", `{"tools":{"max_concurrent":4,"autopilot":{"max_turns":10}}}`, Runtime{},
			&frontmatter.Options{MaxConcurrent: ptr(8), MaxTurns: ptr(50)}, true, func(t *testing.T, e Effective) {
				if e.MaxConcurrent != 8 || e.MaxTurns != 50 {
					t.Errorf("%+v", e)
				}
			}},
		{"autopilot: untrusted can turn it off", `{}`, Runtime{}, &frontmatter.Options{Autopilot: ptr(false)}, false, func(t *testing.T, e Effective) {
			if e.Autopilot {
				t.Error("on")
			}
		}},
		{"autopilot: untrusted cannot turn it on", `{"tools":{"autopilot":{"enabled":false}}}`, Runtime{}, &frontmatter.Options{Autopilot: ptr(true)}, false, func(t *testing.T, e Effective) {
			if e.Autopilot {
				t.Error("on")
			}
		}},
		{"autopilot: trusted can turn it on", `{"tools":{"autopilot":{"enabled":false}}}`, Runtime{}, &frontmatter.Options{Autopilot: ptr(true)}, true, func(t *testing.T, e Effective) {
			if !e.Autopilot {
				t.Error("off")
			}
		}},
		{"autopilot: the user's disable beats a trusted file", `{}`, Runtime{Autopilot: ptr(false)}, &frontmatter.Options{Autopilot: ptr(true)}, true, func(t *testing.T, e Effective) {
			if e.Autopilot {
				t.Error("on")
			}
		}},
		{"autopilot: the user's enable beats setup, not a file's off", `{"tools":{"autopilot":{"enabled":false}}}`, Runtime{Autopilot: ptr(true)}, &frontmatter.Options{Autopilot: ptr(false)}, false, func(t *testing.T, e Effective) {
			if e.Autopilot {
				t.Error("on")
			}
		}},
		{"autopilot: the user's enable beats setup", `{"tools":{"autopilot":{"enabled":false}}}`, Runtime{Autopilot: ptr(true)}, nil, false, func(t *testing.T, e Effective) {
			if !e.Autopilot {
				t.Error("off")
			}
		}},
		{"sandbox: a file turns it on, never off", `{"sandbox":{"enabled":false}}`, Runtime{}, &frontmatter.Options{SandboxEnabled: ptr(true)}, false, func(t *testing.T, e Effective) {
			if !e.SandboxEnabled {
				t.Error("off")
			}
		}},
		{"timeouts and cursor", `{"tools":{"default_timeout":2.5,"cursor_after_result":"next"}}`, Runtime{}, nil, false, func(t *testing.T, e Effective) {
			if e.DefaultTimeout != 2500e6 || e.CursorAfterResult != "next" {
				t.Errorf("%+v", e)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Resolve(setup(t, tt.setup), tt.rt, Buffer{FM: tt.fm, Trusted: tt.trust, Usable: usable}))
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, _, err := Decode(`{"tools":`); err == nil || !strings.HasPrefix(err.Error(), "setup:") {
		t.Errorf("bad JSON: %v", err)
	}
	if _, probs, _ := Decode(`{"tools":{"max_concurrent":"lots"}}`); len(probs) != 1 {
		t.Errorf("a string max_concurrent: %v", probs)
	}
}

// Resolve runs several times per press (categorize, execute, send, status).
func BenchmarkResolve(b *testing.B) {
	cfg, _, _ := Decode(`{"tools":{"max_concurrent":4},"parameters":{"anthropic":{"x":1}}}`)
	buf := Buffer{FM: &frontmatter.Options{Tools: []string{"read", "ls"}, MaxTurns: ptr(5), Anthropic: map[string]any{"y": 2}},
		Usable: []string{"bash", "edit", "find", "grep", "ls", "read", "write"}}
	b.ReportAllocs()
	for b.Loop() {
		Resolve(cfg, Runtime{}, buf)
	}
}

// providers.<name>: a named provider speaks chat_completions unless told,
// has only the credential source it names (none: no key), and its model
// is the default when none is chosen; a frontmatter that switches the
// provider does not carry a model chosen for another one.
func TestNamedProviderEndpoint(t *testing.T) {
	cfg, probs, err := Decode(`{"provider":"anthropic","model":"claude-x","providers":{
		"ollama":{"base_url":"http://localhost:11434/v1","model":"qwen3","headers":{"X-A":"1"},"extra_body":{"top_k":20}},
		"openrouter":{"wire":"chat_completions","api_key_env":"OPENROUTER_API_KEY","api_key_cache":60,"api_key_timeout":5},
		"openai":{"api_key_env":false,"base_url":"http://localhost:8080"},
		"vertex":{"api_key_cmd":["gcloud","auth","print-access-token","--account","me"]}}}`)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	get := func(p string, fm *frontmatter.Options) Effective {
		rt := Runtime{}
		if p != "" {
			rt.Provider = p
			empty := ""
			rt.Model = &empty
		}
		return Resolve(cfg, rt, Buffer{FM: fm})
	}
	if e := get("ollama", nil); e.Model != "qwen3" || e.Endpoint.Wire != "chat_completions" || !e.Endpoint.KeySet ||
		len(e.Endpoint.APIKeyEnv)+len(e.Endpoint.APIKeyCmd) != 0 || e.Endpoint.Headers["X-A"] != "1" || e.Endpoint.ExtraBody["top_k"] != 20.0 {
		t.Errorf("ollama: %+v", e)
	}
	if e := get("openrouter", nil); e.Endpoint.APIKeyEnv[0] != "OPENROUTER_API_KEY" || e.Endpoint.APIKeyCache != time.Minute || e.Endpoint.APIKeyTimeout != 5*time.Second {
		t.Errorf("openrouter: %+v", e.Endpoint)
	}
	if e := get("openai", nil); e.Endpoint.Wire != "" || !e.Endpoint.KeySet || len(e.Endpoint.APIKeyEnv) != 0 {
		t.Errorf("openai with api_key_env = false: %+v", e.Endpoint)
	}
	if e := get("vertex", nil); e.Endpoint.KeySet || len(e.Endpoint.APIKeyCmd) != 5 { // the variables stay, the command is replaced
		t.Errorf("vertex: only the command replaced: %+v", e.Endpoint)
	}
	if e := get("", nil); e.Model != "claude-x" {
		t.Errorf("setup model: %q", e.Model)
	}
	p := "ollama"
	if e := get("", &frontmatter.Options{Provider: &p}); e.Model != "qwen3" {
		t.Errorf("frontmatter switching to ollama kept model %q", e.Model)
	}
	if got := cfg.ProviderNames(); strings.Join(got, ",") != "anthropic,copilot,gemini,ollama,openai,openrouter,replay,vertex" {
		t.Errorf("ProviderNames = %v", got)
	}
}

// The providers' web tools: setup turns them on; a buffer may turn them
// off; only a trusted one may turn them on.
func TestResolveWebTools(t *testing.T) {
	on := setup(t, `{"tools": {"web_search": {"enabled": true, "max_uses": 3}}}`)
	off := setup(t, `{}`)
	for _, tc := range []struct {
		name       string
		cfg        Config
		fm         *frontmatter.Options
		trusted    bool
		search, fe bool
	}{
		{"setup on", on, nil, false, true, false},
		{"a file turns it off", on, &frontmatter.Options{WebSearch: ptr(false)}, false, false, false},
		{"an untrusted file cannot turn it on", off, &frontmatter.Options{WebSearch: ptr(true), WebFetch: ptr(true)}, false, false, false},
		{"a trusted file can", off, &frontmatter.Options{WebSearch: ptr(true), WebFetch: ptr(true)}, true, true, true},
	} {
		e := Resolve(tc.cfg, Runtime{}, Buffer{FM: tc.fm, Trusted: tc.trusted})
		if e.WebSearch != tc.search || e.WebFetch != tc.fe {
			t.Errorf("%s: search %v fetch %v, want %v %v", tc.name, e.WebSearch, e.WebFetch, tc.search, tc.fe)
		}
	}
	if e := Resolve(on, Runtime{}, Buffer{}); e.WebSearchUses != 3 {
		t.Errorf("max_uses %d", e.WebSearchUses)
	}
}
