package frontmatter

import (
	"strings"
	"testing"
)

func TestScalarOptions(t *testing.T) {
	tests := []struct {
		code string
		get  func(o Options) any
		want any
	}{
		{`flemma.opt.thinking = "medium"`, func(o Options) any { return deref(o.Thinking) }, "medium"},
		{`flemma.opt.thinking = false`, func(o Options) any { return deref(o.Thinking) }, "off"},
		{`flemma.opt.thinking = 4096`, func(o Options) any { return deref(o.Thinking) }, "4096"},
		{`flemma.opt.thinking = "high"; flemma.opt.thinking = nil`, func(o Options) any { return deref(o.Thinking) }, nil},
		{`flemma.opt.temperature = 0.3`, func(o Options) any { return deref(o.Temperature) }, 0.3},
		{`flemma.opt.max_tokens = 8000`, func(o Options) any { return deref(o.MaxTokens) }, 8000},
		{`flemma.opt.cache_retention = "long"`, func(o Options) any { return deref(o.CacheRetention) }, "long"},
		{`flemma.opt.provider = "openai"`, func(o Options) any { return deref(o.Provider) }, "openai"},
		{`flemma.opt.model = "gpt-5"`, func(o Options) any { return deref(o.Model) }, "gpt-5"},
		{`flemma.opt.tools.max_concurrent = 0`, func(o Options) any { return deref(o.MaxConcurrent) }, 0},
		{`flemma.opt.tools.max_concurrent = 4`, func(o Options) any { return deref(o.MaxConcurrent) }, 4},
		{`flemma.opt.tools.autopilot = false`, func(o Options) any { return deref(o.Autopilot) }, false},
		{`flemma.opt.tools.autopilot = true`, func(o Options) any { return deref(o.Autopilot) }, true},
		{`flemma.opt.tools.autopilot.enabled = false`, func(o Options) any { return deref(o.Autopilot) }, false},
		{`flemma.opt.tools.autopilot = { enabled = true, max_turns = 5 }`, func(o Options) any { return []any{deref(o.Autopilot), deref(o.MaxTurns)} }, []any{true, 5}},
		{`flemma.opt.tools.autopilot.max_turns = 7`, func(o Options) any { return []any{deref(o.Autopilot), deref(o.MaxTurns)} }, []any{nil, 7}},
		{`flemma.opt.sandbox = true`, func(o Options) any { return deref(o.SandboxEnabled) }, true},
		{`flemma.opt.sandbox.enabled = true`, func(o Options) any { return deref(o.SandboxEnabled) }, true},
		{`flemma.opt.sandbox = { enabled = true }`, func(o Options) any { return deref(o.SandboxEnabled) }, true},
		{`flemma.opt.anthropic.thinking_budget = 20000`, func(o Options) any { return o.Anthropic }, map[string]any{"thinking_budget": 20000}},
		{`flemma.opt.openai.reasoning = "high"`, func(o Options) any { return o.OpenAI }, map[string]any{"reasoning": "high"}},
		{`flemma.opt.vertex.thinking_budget = 4096`, func(o Options) any { return o.Vertex }, map[string]any{"thinking_budget": 4096}},
		{`flemma.opt.openai = { reasoning = "low", experimental = { phase = true }, stop = { "a", "b" }, top_p = 0.5 }`,
			func(o Options) any { return o.OpenAI },
			map[string]any{"reasoning": "low", "experimental": map[string]any{"phase": true}, "stop": []any{"a", "b"}, "top_p": 0.5}},
		{`flemma.opt.anthropic.a = 1; flemma.opt.anthropic.a = nil`, func(o Options) any { return len(o.Anthropic) }, 0},
		// parameters.* is an alias namespace (the Lua plugin's canonical path)
		{`flemma.opt.parameters.temperature = 0.7`, func(o Options) any { return deref(o.Temperature) }, 0.7},
		{`flemma.opt.parameters.anthropic.effort = "high"`, func(o Options) any { return o.Anthropic }, map[string]any{"effort": "high"}},
		// object writes walk into fields, as the JSON form does
		{`flemma.opt = { temperature = 0.2, tools = { max_concurrent = 1 } }`, func(o Options) any { return []any{deref(o.Temperature), deref(o.MaxConcurrent)} }, []any{0.2, 1}},
		{`flemma.opt.tools = { max_concurrent = 1, autopilot = false }`, func(o Options) any { return []any{o.Tools, deref(o.MaxConcurrent), deref(o.Autopilot)} }, []any{[]string(nil), 1, false}},
		// reads return what was set so far
		{`flemma.opt.temperature = 0.4; flemma.opt.max_tokens = flemma.opt.temperature * 10000`, func(o Options) any { return deref(o.MaxTokens) }, 4000},
		{`if flemma.opt.provider == nil then flemma.opt.model = "unset" end`, func(o Options) any { return deref(o.Model) }, "unset"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantClean(t, tt.code, r)
			wantEqual(t, "option", tt.get(r.Opts), tt.want)
		})
	}
}

func TestUntouchedOptionsAreNil(t *testing.T) {
	r := evalLua(t, `x = 1`)
	wantClean(t, "x = 1", r)
	o := r.Opts
	if o.Tools != nil || o.AutoApprove != nil || o.AutoApproveExclusions != nil || o.AutoApproveFunc != nil ||
		o.Autopilot != nil || o.MaxTurns != nil || o.MaxConcurrent != nil || o.Thinking != nil || o.Temperature != nil ||
		o.MaxTokens != nil || o.CacheRetention != nil || o.Provider != nil || o.Model != nil || o.Anthropic != nil ||
		o.OpenAI != nil || o.Vertex != nil || o.SandboxEnabled != nil {
		t.Fatalf("Opts = %+v, want all unset", o)
	}
}

func TestScalarErrors(t *testing.T) {
	tests := []struct {
		code string
		line int
		want string
	}{
		{`flemma.opt.temperature = "hot"`, 2, "flemma.opt.temperature: expected a number, got string"},
		{`flemma.opt.temperature = 3`, 2, "expected a number from 0 to 2, got 3"},
		{`flemma.opt.max_tokens = 1.5`, 2, "flemma.opt.max_tokens: expected an integer, got 1.5"},
		{`flemma.opt.max_tokens = 0`, 2, "expected an integer of at least 1"},
		{`flemma.opt.thinking = "ultra"`, 2, "got 'ultra'"},
		{`flemma.opt.thinking = "meduim"`, 2, "did you mean 'medium'?"},
		{`flemma.opt.thinking = true`, 2, "got true"},
		{`flemma.opt.cache_retention = "forever"`, 2, "expected one of short, long, none, got 'forever'"},
		{`flemma.opt.provider = "antropic"`, 2, "unknown provider 'antropic' -- did you mean 'anthropic'?"},
		{`flemma.opt.provider = 3`, 2, "expected a provider name, got number"},
		{`flemma.opt.model = ""`, 2, "empty string"},
		{`flemma.opt.tools.max_concurrent = -1`, 2, "at least 0"},
		{`flemma.opt.tools.autopilot = "yes"`, 2, "flemma.opt.tools.autopilot: expected a boolean or a table"},
		{`flemma.opt.tools.autopilot.max_turns = 0`, 2, "at least 1"},
		{`flemma.opt.sandbox = 42`, 2, "flemma.opt.sandbox: expected true or a table"},
		{`flemma.opt.anthropic = "bad"`, 2, "flemma.opt.anthropic: expected a table, got string"},
		{`flemma.opt.anthropic.x = function() end`, 2, "flemma.opt.anthropic.x: expected a string, number, boolean or table, got function"},
		{`flemma.opt.tools = "bash"`, 2, "flemma.opt.tools: expected a list of tool names, got string"},
		{`flemma.opt.tools.auto_approve = 42`, 2, "flemma.opt.tools.auto_approve: expected a list of tool names and $presets, or a function, got number"},
		{`flemma.opt.tools = { 1, 2 }`, 2, "flemma.opt.tools: item 1: expected a string, got number"},
		{`flemma.opt.tools:append(42)`, 2, "expected a name or a list of names, got number"},
		{`flemma.opt.tools.autopilot = { 1 }`, 2, "expected a table of options, got a list"},
		{`flemma.opt.sandbox = flemma.opt.tools`, 2, "got flemma.opt.tools"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantDiag(t, tt.code, r, SeverityError, tt.line, tt.want)
			if !r.Blocking() {
				t.Fatalf("Evaluate(%q).Blocking() = false, want true", tt.code)
			}
		})
	}
}

// Errors are collected: one evaluation reports every bad write, and the good
// writes around them are kept (the result blocks the buffer anyway).
func TestErrorsAreCollected(t *testing.T) {
	code := "flemma.opt.temperature = 0.3\nflemma.opt.bogus = 1\nflemma.opt.tools = {'bash', 'raed'}\nflemma.opt.max_tokens = 'x'\ny = 2"
	r := evalLua(t, code)
	if len(r.Diagnostics) != 3 {
		t.Fatalf("Evaluate(%q) = %v, want 3 diagnostics", code, r.Diagnostics)
	}
	wantDiag(t, code, r, SeverityError, 3, "flemma.opt.bogus: unknown config key")
	wantDiag(t, code, r, SeverityError, 4, "unknown tool 'raed' -- did you mean 'read'?")
	wantDiag(t, code, r, SeverityError, 5, "flemma.opt.max_tokens")
	wantEqual(t, "Temperature", deref(r.Opts.Temperature), 0.3)
	wantEqual(t, "Vars", r.Vars, map[string]any{"y": 2})
}

func TestToolsList(t *testing.T) {
	tests := []struct {
		code string
		want []string
		err  string // expected error instead of want
	}{
		{`flemma.opt.tools = {"bash", "read"}`, []string{"bash", "read"}, ""},
		{`flemma.opt.tools = {"bash", "read", "bash"}`, []string{"bash", "read"}, ""},
		{`flemma.opt.tools = {}`, []string{}, ""},
		{`flemma.opt.tools:remove("bash")`, []string{"read", "write", "edit", "grep", "find", "ls"}, ""},
		{`flemma.opt.tools:remove("calculator")`, []string{"bash", "read", "write", "edit", "grep", "find", "ls"}, ""},
		{`flemma.opt.tools:append("calculator")`, []string{"bash", "read", "write", "edit", "grep", "find", "ls", "calculator"}, ""},
		{`flemma.opt.tools:append("bash")`, []string{"read", "write", "edit", "grep", "find", "ls", "bash"}, ""},
		{`flemma.opt.tools:prepend("ls")`, []string{"ls", "bash", "read", "write", "edit", "grep", "find"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools:append("read")`, []string{"bash", "read"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools:prepend({"read", "write"})`, []string{"read", "write", "bash"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools:prepend("read"); flemma.opt.tools:prepend("write")`, []string{"write", "read", "bash"}, ""},
		{`flemma.opt.tools = {"bash", "read", "write"}; flemma.opt.tools:remove({"bash", "write"})`, []string{"read"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools:append("read"):append("write"):remove("bash")`, []string{"read", "write"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools = flemma.opt.tools + "read"`, []string{"bash", "read"}, ""},
		{`flemma.opt.tools = {"bash", "read"}; flemma.opt.tools = flemma.opt.tools - "read"`, []string{"bash"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools = flemma.opt.tools ^ "read"`, []string{"read", "bash"}, ""},
		{`flemma.opt.tools = {"bash"}; flemma.opt.tools = flemma.opt.tools + {"read", "ls"} - "bash"`, []string{"read", "ls"}, ""},
		{`flemma.opt.tools = {"a_b"}`, nil, "unknown tool 'a_b'"},
		{`flemma.opt.tools = {"bash", "read", "write"}; local w = flemma.opt.tools - "read" - "read"`, []string{"bash", "write"}, ""},
		{`flemma.opt.tools = {"bash", "read"}; flemma.opt.tools = flemma.opt.tools - "read" + "read"`, []string{"bash", "read"}, ""},
		{`flemma.opt.tools = {"calculator_async"}`, []string{"calculator_async"}, ""},
		{`flemma.opt.tools = flemma.opt.tools.auto_approve`, nil, "unknown tool '$default'"},
		{`flemma.opt.tools = { "bash", max_concurrent = 2 }`, []string{"bash"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			if tt.err != "" {
				wantDiag(t, tt.code, r, SeverityError, 2, tt.err)
				return
			}
			wantClean(t, tt.code, r)
			wantEqual(t, "Tools", r.Opts.Tools, tt.want)
		})
	}
}

func TestListReads(t *testing.T) {
	code := `flemma.opt.tools = {"bash", "read"}
n = #flemma.opt.tools
first = flemma.opt.tools[1]
copy = flemma.opt.tools:get()
approve = flemma.opt.tools.auto_approve:get()
s = tostring(flemma.opt.tools)
same = flemma.opt.tools == flemma.opt.tools`
	r := evalLua(t, code)
	wantClean(t, code, r)
	wantEqual(t, "Vars", r.Vars, map[string]any{
		"n": 2, "first": "bash", "copy": []any{"bash", "read"}, "approve": []any{"$default"},
		"s": "flemma.opt.tools {bash, read}", "same": true,
	})
}

func TestAutoApproveList(t *testing.T) {
	tests := []struct {
		code      string
		list      []string
		exclusion []string
	}{
		{`flemma.opt.tools.auto_approve = { "$readonly" }`, []string{"$readonly"}, nil},
		{`flemma.opt.tools.auto_approve = { "calculator", "read" }`, []string{"calculator", "read"}, nil},
		{`flemma.opt.tools.auto_approve = { "$default", "bash" }`, []string{"$default", "bash"}, nil},
		{`flemma.opt.tools.auto_approve = {}`, []string{}, nil},
		{`flemma.opt.tools.auto_approve = "$readonly"`, []string{"$readonly"}, nil},
		{`flemma.opt.tools.approve = { "read" }`, []string{"read"}, nil}, // alias
		// seed 004, "ListOption operations"
		{"flemma.opt.tools.auto_approve = { \"$default\" }\nflemma.opt.tools.auto_approve:remove(\"write\")", []string{"$default"}, []string{"write"}},
		{"flemma.opt.tools.auto_approve = { \"$default\" }\nflemma.opt.tools.auto_approve:append(\"bash\")", []string{"$default", "bash"}, nil},
		{`flemma.opt.tools.auto_approve = flemma.opt.tools.auto_approve + "bash" - "write"`, []string{"$default", "bash"}, []string{"write"}},
		// starting from setup's list
		{`flemma.opt.tools.auto_approve:remove("read")`, []string{"$default"}, []string{"read"}},
		{`flemma.opt.tools.auto_approve:remove("$default")`, []string{}, nil},
		{`flemma.opt.tools.auto_approve:remove("$default"):append("$readonly"):remove("read")`, []string{"$readonly"}, []string{"read"}},
		{`flemma.opt.tools.auto_approve:prepend("bash")`, []string{"bash", "$default"}, nil},
		// removing then re-adding a tool lifts its exclusion
		{`flemma.opt.tools.auto_approve:remove("write"):append("write")`, []string{"$default", "write"}, nil},
		// a plain entry that also lives in a preset: both go
		{`flemma.opt.tools.auto_approve = { "$default", "write" }; flemma.opt.tools.auto_approve:remove("write")`, []string{"$default"}, []string{"write"}},
		// assignment starts over
		{`flemma.opt.tools.auto_approve:remove("write"); flemma.opt.tools.auto_approve = { "$readonly" }`, []string{"$readonly"}, nil},
		// command rules (SPEC §5)
		{`flemma.opt.tools.auto_approve = { "bash(git status*)", "$readonly" }`, []string{"bash(git status*)", "$readonly"}, nil},
		{`flemma.opt.tools.auto_approve = function() end; flemma.opt.tools.auto_approve = { "read" }`, []string{"read"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantClean(t, tt.code, r)
			wantEqual(t, "AutoApprove", r.Opts.AutoApprove, tt.list)
			wantEqual(t, "AutoApproveExclusions", r.Opts.AutoApproveExclusions, tt.exclusion)
			if r.Opts.AutoApproveFunc != nil {
				t.Fatalf("AutoApproveFunc set, want nil")
			}
			// An assignment of a table or a name replaces setup's list;
			// :append/:remove and + - modify it.
			assigned := strings.Contains(tt.code, "approve = {") || strings.Contains(tt.code, `approve = "`)
			if r.Opts.AutoApproveAssigned != assigned {
				t.Errorf("AutoApproveAssigned = %v, want %v", r.Opts.AutoApproveAssigned, assigned)
			}
		})
	}
}

func TestAutoApproveFunctionWins(t *testing.T) {
	code := `flemma.opt.tools.auto_approve = { "read" }
flemma.opt.tools.auto_approve = function(name) return name == "read" end
local f = flemma.opt.tools.auto_approve
is_function = type(f) == "function"`
	r := evalLua(t, code)
	wantClean(t, code, r)
	if r.Opts.AutoApproveFunc == nil || r.Opts.AutoApprove != nil || r.Opts.AutoApproveExclusions != nil {
		t.Fatalf("Opts = %+v, want only AutoApproveFunc", r.Opts)
	}
	wantEqual(t, "Func.Line", r.Opts.AutoApproveFunc.Line(), 3)
	wantEqual(t, "Vars", r.Vars, map[string]any{"is_function": true})
}

func TestAutoApproveErrors(t *testing.T) {
	tests := []struct {
		code     string
		severity string
		want     string
	}{
		{`flemma.opt.tools.auto_approve = { "$defualt" }`, SeverityError, "unknown preset '$defualt' -- did you mean '$default'?"},
		{`flemma.opt.tools.auto_approve:remove("bsh")`, SeverityError, "flemma.opt.tools.auto_approve: unknown tool 'bsh' -- did you mean 'bash'?"},
		{`flemma.opt.tools.auto_approve = { "my.module" }`, SeverityError, "looks like a module path"},
		{`flemma.opt.tools.auto_approve = { "bash(git" }`, SeverityError, "malformed rule"},
		{`flemma.opt.tools.auto_approve = { "bsh(ls)" }`, SeverityError, "unknown tool 'bsh'"},
		{`flemma.opt.tools.auto_approve = { "" }`, SeverityError, "empty name"},
		{`flemma.opt.tools.auto_approve = { read = true }`, SeverityError, "got a table with keys"},
		{`flemma.opt.tools.auto_approve.bash = true`, SeverityError, "is a list"},
		{`flemma.opt.tools.auto_approve:set({"read"})`, SeverityError, "assign the list instead"},
		{`flemma.opt.tools.auto_approve = function() end; flemma.opt.tools = { auto_approve = { ["$append"] = "read" } }`, SeverityError, "is a function in this frontmatter"},
		{`local f = flemma.opt.tools.auto_approve.append; f("read")`, SeverityError, "must be called with a colon"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			wantDiag(t, tt.code, evalLua(t, tt.code), tt.severity, 2, tt.want)
		})
	}
}

func TestAutoApproveFromNonListSetup(t *testing.T) {
	setup := testSetup
	setup.AutoApprove = nil // setup's auto_approve is a function or a module
	code := `flemma.opt.tools.auto_approve:append("read")`
	r := NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, setup)
	wantDiag(t, code, r, SeverityWarning, 2, "setup's tools.auto_approve is not a list")
	if r.Blocking() {
		t.Fatalf("Blocking() = true for a warning")
	}
	wantEqual(t, "AutoApprove", r.Opts.AutoApprove, []string{"read"})
}

func TestUnknownToolNames(t *testing.T) {
	tests := []struct{ code, want string }{
		{`flemma.opt.tools = {"bash", "raed"}`, "flemma.opt.tools: unknown tool 'raed' -- did you mean 'read'?"},
		{`flemma.opt.tools:remove("bsh")`, "unknown tool 'bsh' -- did you mean 'bash'?"},
		{`flemma.opt.tools:append("calculater")`, "unknown tool 'calculater' -- did you mean 'calculator'?"},
		{`flemma.opt.tools:prepend("nonexistent_tool")`, "unknown tool 'nonexistent_tool'"},
		{`flemma.opt.tools = flemma.opt.tools + "x"`, "unknown tool 'x'"},
		{`flemma.opt.tools = {"$standard"}`, "unknown tool '$standard'"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantDiag(t, tt.code, r, SeverityError, 2, tt.want)
			if strings.Contains(tt.want, "nonexistent") && strings.Contains(r.Diagnostics[0].Message, "did you mean") {
				t.Fatalf("Evaluate(%q) suggests %q for a name with no close match", tt.code, r.Diagnostics[0].Message)
			}
		})
	}
	// Without KnownTools nothing is validated.
	setup := testSetup
	setup.KnownTools = nil
	r := NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: `flemma.opt.tools = {"anything"}`, StartLine: 1}, setup)
	wantClean(t, "anything", r)
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct{ code, want string }{
		{`flemma.opt.bogus = 1`, "flemma.opt.bogus: unknown config key"},
		{`flemma.opt.temprature = 0.3`, "flemma.opt.temprature: unknown config key -- did you mean 'temperature'?"},
		{`flemma.opt.tools.autopilott = false`, "flemma.opt.tools.autopilott: unknown config key -- did you mean 'autopilot'?"},
		{`flemma.opt.tools:apend("read")`, "flemma.opt.tools.apend: unknown config key -- did you mean 'append'?"},
		{`flemma.opt.tools:set({"read"})`, "assign the list instead: flemma.opt.tools = {...}"},
		{`local x = flemma.opt.thinkin`, "did you mean 'thinking'?"},
		{`flemma.opt.parameters.timeout = 5`, "flemma.opt.parameters.timeout: unknown config key"},
		{`flemma.opt.tools.autopilot.max_turn = 5`, "did you mean 'max_turns'?"},
		{`flemma.opt = { tempreature = 1 }`, "flemma.opt.tempreature: unknown config key -- did you mean 'temperature'?"},
		{`flemma.bogus = 1`, "flemma.bogus: flemma is read-only"},
		{`local x = flemma.options`, "flemma.options: unknown key; only flemma.opt is available"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			wantDiag(t, tt.code, evalLua(t, tt.code), SeverityError, 2, tt.want)
		})
	}
	// An unknown object reads as an inert proxy: one diagnostic, not a cascade.
	code := "flemma.opt.bogus.deeper.x = 1\nflemma.opt.bogus:append('x')"
	r := evalLua(t, code)
	if len(r.Diagnostics) != 2 || strings.Contains(r.Diagnostics[0].Message, "attempt to") {
		t.Fatalf("Evaluate(%q) = %v, want exactly one unknown-key diagnostic per line", code, r.Diagnostics)
	}
}

func TestForbiddenKeys(t *testing.T) {
	tests := []struct{ code, want string }{
		{`flemma.opt.sandbox.enabled = false`, "flemma.opt.sandbox.enabled: frontmatter may enable the sandbox but never disable it"},
		{`flemma.opt.sandbox = false`, "flemma.opt.sandbox: frontmatter may enable the sandbox but never disable it"},
		{`flemma.opt.sandbox = { enabled = false }`, "never disable it"},
		{`flemma.opt.sandbox.writable = { "/" }`, "flemma.opt.sandbox.writable: cannot be changed from frontmatter"},
		{`flemma.opt.sandbox.writable:append("/")`, "flemma.opt.sandbox.writable: cannot be changed from frontmatter"},
		{`flemma.opt.sandbox.deny_read = {}`, "flemma.opt.sandbox.deny_read: cannot be changed"},
		{`flemma.opt.sandbox.deny_read:remove("**/.ssh/**")`, "flemma.opt.sandbox.deny_read: cannot be changed"},
		{`flemma.opt.sandbox.env_deny = {}`, "flemma.opt.sandbox.env_deny: cannot be changed"},
		{`flemma.opt.sandbox.backend = "none"`, "flemma.opt.sandbox.backend: cannot be changed"},
		{`flemma.opt.sandbox.network = true`, "flemma.opt.sandbox.network: cannot be changed"},
		{`flemma.opt.sandbox.unix_sockets = true`, "flemma.opt.sandbox.unix_sockets: cannot be changed"},
		{`flemma.opt.sandbox.limits.processes = 0`, "flemma.opt.sandbox.limits: cannot be changed"},
		{`flemma.opt.sandbox = { limits = { memory = 0 } }`, "flemma.opt.sandbox.limits: cannot be changed"},
		{`flemma.opt.sandbox.policy.rw_paths = { "/" }`, "flemma.opt.sandbox.policy: cannot be changed"},
		{`flemma.opt.sandbox = { writable = { "/" } }`, "flemma.opt.sandbox.writable: cannot be changed"},
		{`flemma.opt.tools.require_approval = false`, "flemma.opt.tools.require_approval: cannot be changed from frontmatter"},
		{`flemma.opt.tools = { require_approval = false }`, "flemma.opt.tools.require_approval: cannot be changed"},
		{`flemma.opt.tools.auto_approve_sandboxed = true`, "flemma.opt.tools.auto_approve_sandboxed: cannot be changed"},
		{`flemma.opt.tools.modules = { "evil" }`, "flemma.opt.tools.modules: can only be set in setup(): frontmatter must not make Neovim load Lua modules"},
		{`flemma.opt.tools.bash.shell = "/tmp/x"`, "flemma.opt.tools.bash: can only be set in setup()"},
		{`flemma.opt.tools.bash = { env = { LD_PRELOAD = "x" } }`, "flemma.opt.tools.bash: can only be set in setup()"},
		{`flemma.opt.tools.presets = {}`, "flemma.opt.tools.presets: can only be set in setup()"},
		{`flemma.opt.tools.mode = "enabled"`, "flemma.opt.tools.mode: can only be set in setup()"},
		{`flemma.opt.host.cmd = "/bin/sh"`, "flemma.opt.host: can only be set in setup(): it chooses the program"},
		{`flemma.opt.providers.anthropic.base_url = "http://evil"`, "flemma.opt.providers: can only be set in setup(): a .chat file must not redirect"},
		{`flemma.opt.keymaps = {}`, "flemma.opt.keymaps: can only be set in setup()"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalLua(t, tt.code)
			wantDiag(t, tt.code, r, SeverityError, 2, tt.want)
			if deref(r.Opts.SandboxEnabled) == false {
				t.Fatalf("SandboxEnabled = false: frontmatter disabled the sandbox")
			}
		})
	}
	// Reading a forbidden key is harmless.
	code := `local w = flemma.opt.sandbox.writable`
	wantClean(t, code, evalLua(t, code))
}

func TestDiagnosticLines(t *testing.T) {
	code := "-- a comment\nflemma.opt.temperature = 0.3\n\nflemma.opt.tools = {\n  'bash',\n  'raed',\n}\nflemma.opt.bogus = 1"
	for _, start := range []int{1, 10} {
		r := NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: code, StartLine: start}, testSetup)
		// A multi-line statement reports the line where the assignment happens.
		wantDiag(t, code, r, SeverityError, start+4, "unknown tool 'raed'")
		wantDiag(t, code, r, SeverityError, start+8, "flemma.opt.bogus")
		if r.Diagnostics[0].Line > r.Diagnostics[1].Line {
			t.Fatalf("diagnostics not sorted by line: %v", r.Diagnostics)
		}
	}
	// Runtime and syntax errors carry the buffer line too.
	r := NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: "x = 1\n\nerror('boom')", StartLine: 1}, testSetup)
	wantDiag(t, "error", r, SeverityError, 4, "Lua error: boom")
	r = NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: "x = 1\ny = = 2", StartLine: 1}, testSetup)
	wantDiag(t, "syntax", r, SeverityError, 3, "Lua syntax error near '='")
	r = NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: "x = {\n", StartLine: 1}, testSetup)
	wantDiag(t, "eof", r, SeverityError, 0, "syntax error")
	r = NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: "local function f()\n  return nil + 1\nend\nf()", StartLine: 1}, testSetup)
	wantDiag(t, "arith", r, SeverityError, 3, "Lua error:")
	r = NewEvaluator(quiet).Evaluate(Source{Language: "lua", Code: "error({ message = 'custom' })", StartLine: 1}, testSetup)
	wantDiag(t, "table error", r, SeverityError, 0, "custom")
}

func TestDidYouMean(t *testing.T) {
	candidates := []string{"bash", "calculator", "edit", "ls", "read", "write"}
	tests := []struct{ name, want string }{
		{"raed", "read"}, {"bsh", "bash"}, {"calculater", "calculator"}, {"wrte", "write"},
		{"Bash", "bash"}, {"x", ""}, {"nonexistent_tool", ""}, {"read", ""}, {strings.Repeat("a", 100), ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.name, candidates); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}

}

func TestJSONFrontmatter(t *testing.T) {
	tests := []struct {
		code     string
		severity string // "" = no diagnostics
		line     int
		want     string
		check    func(t *testing.T, r *Result)
	}{
		// format.md §11 case 93
		{code: `{"flemma":{"tools":{"autopilot":false}}}`, check: func(t *testing.T, r *Result) {
			wantEqual(t, "Autopilot", deref(r.Opts.Autopilot), false)
		}},
		// 94
		{code: `{"flemma":{"nonexistent_key":"value"}}`, severity: SeverityError, line: 2, want: "flemma.nonexistent_key: unknown config key"},
		// 95
		{code: `{"flemma":{"provider":{"$append":"x"}}}`, severity: SeverityError, line: 2, want: "flemma.provider: '$append' requires a list-capable field"},
		// 96
		{code: `"just a string"`, severity: SeverityWarning, line: 2, want: "Frontmatter must be an object, got string"},
		{code: `[1, 2]`, severity: SeverityWarning, line: 2, want: "Frontmatter must be an object, got array"},
		{code: `null`, severity: SeverityWarning, line: 2, want: "got null"},
		// 97
		{code: "{\n  \"invalid\": json\n}", severity: SeverityError, line: 3, want: "JSON parse error"},
		{code: "{\"a\": 1", severity: SeverityError, line: 2, want: "JSON parse error"},
		{code: "{\"a\": 1} {", severity: SeverityError, line: 2, want: "unexpected data after the top-level value"},
		// 99
		{code: `{"name": "Alice", "age": 30, "pi": 3.5, "tags": ["a", {"b": null}], "gone": null}`, check: func(t *testing.T, r *Result) {
			wantEqual(t, "Vars", r.Vars, map[string]any{"name": "Alice", "age": 30, "pi": 3.5, "tags": []any{"a", map[string]any{"b": nil}}})
		}},
		{code: `{"flemma": 5}`, severity: SeverityError, line: 2, want: `"flemma" must be an object, got number`},
		{code: "{\"flemma\": {\n  \"thinking\": \"medium\",\n  \"temperature\": 0.3,\n  \"max_tokens\": 8000,\n  \"cache_retention\": \"long\",\n  \"anthropic\": {\"thinking_budget\": 20000},\n  \"sandbox\": true,\n  \"tools\": [\"bash\", \"read\"]\n}}", check: func(t *testing.T, r *Result) {
			o := r.Opts
			wantEqual(t, "opts", []any{deref(o.Thinking), deref(o.Temperature), deref(o.MaxTokens), deref(o.CacheRetention), o.Anthropic, deref(o.SandboxEnabled), o.Tools},
				[]any{"medium", 0.3, 8000, "long", map[string]any{"thinking_budget": 20000}, true, []string{"bash", "read"}})
		}},
		{code: `{"flemma":{"tools":{"$append":"calculator","auto_approve":{"$remove":["write"],"$append":"bash"}}}}`, check: func(t *testing.T, r *Result) {
			wantEqual(t, "Tools", r.Opts.Tools, []string{"bash", "read", "write", "edit", "grep", "find", "ls", "calculator"})
			wantEqual(t, "AutoApprove", r.Opts.AutoApprove, []string{"$default", "bash"})
			wantEqual(t, "AutoApproveExclusions", r.Opts.AutoApproveExclusions, []string{"write"})
		}},
		{code: `{"flemma":{"tools":{"$set":["bash"],"$prepend":["read","ls"],"approve":["$readonly"]}}}`, check: func(t *testing.T, r *Result) {
			wantEqual(t, "Tools", r.Opts.Tools, []string{"read", "ls", "bash"})
			wantEqual(t, "AutoApprove", r.Opts.AutoApprove, []string{"$readonly"})
		}},
		{code: `{"flemma":{"temperature":{"$set":0.5}}}`, check: func(t *testing.T, r *Result) {
			wantEqual(t, "Temperature", deref(r.Opts.Temperature), 0.5)
		}},
		{code: `{"flemma":{"tools":{"$merge":["x"]}}}`, severity: SeverityError, line: 2, want: "flemma.tools: unknown operator '$merge'"},
		{code: `{"flemma":{"$merge":1}}`, severity: SeverityError, line: 2, want: "flemma.<root>: unknown operator '$merge'"},
		{code: `{"flemma":{"temperature":{"$set":0.5,"x":1}}}`, severity: SeverityError, line: 2, want: "cannot navigate into non-object field with key 'x'"},
		{code: "{\"flemma\": {\n  \"tools\": [\"bash\", \"raed\"]\n}}", severity: SeverityError, line: 3, want: "flemma.tools: unknown tool 'raed' -- did you mean 'read'?"},
		{code: "{\"flemma\": {\n  \"sandbox\": {\"enabled\": false}\n}}", severity: SeverityError, line: 3, want: "flemma.sandbox.enabled: frontmatter may enable the sandbox but never disable it"},
		{code: `{"flemma": {"sandbox": false}}`, severity: SeverityError, line: 2, want: "never disable it"},
		{code: `{"flemma": {"sandbox": {"writable": ["/"]}}}`, severity: SeverityError, line: 2, want: "flemma.sandbox.writable: cannot be changed from frontmatter"},
		{code: `{"flemma": {"tools": {"require_approval": false}}}`, severity: SeverityError, line: 2, want: "flemma.tools.require_approval: cannot be changed"},
		{code: `{"flemma": {"providers": {"openai": {"base_url": "http://evil"}}}}`, severity: SeverityError, line: 2, want: "flemma.providers: can only be set in setup()"},
		{code: `{"flemma": {"tools": {"auto_approve": {"bash": true}}}}`, severity: SeverityError, line: 2, want: "got a table with keys"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			r := evalJSON(t, tt.code)
			if tt.severity == "" {
				wantClean(t, tt.code, r)
			} else {
				wantDiag(t, tt.code, r, tt.severity, tt.line, tt.want)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestJSONAndLuaAgree(t *testing.T) {
	lua := `flemma.opt.tools = {"bash", "read"}
flemma.opt.tools.auto_approve:remove("write")
flemma.opt.tools.autopilot = { enabled = false, max_turns = 3 }
flemma.opt.thinking = "low"
flemma.opt.vertex.thinking_budget = 1024`
	json := `{"flemma": {"tools": {"$set": ["bash", "read"], "auto_approve": {"$remove": "write"}, "autopilot": {"enabled": false, "max_turns": 3}},
  "thinking": "low", "vertex": {"thinking_budget": 1024}}}`
	rl, rj := evalLua(t, lua), evalJSON(t, json)
	wantClean(t, lua, rl)
	wantClean(t, json, rj)
	wantEqual(t, "JSON opts vs Lua opts", rj.Opts, rl.Opts)
}

func TestUnsupportedLanguage(t *testing.T) {
	r := NewEvaluator(quiet).Evaluate(Source{Language: "yaml", Code: "a: 1", StartLine: 1}, testSetup)
	wantDiag(t, "yaml", r, SeverityError, 1, "Unsupported frontmatter language: yaml")
	r = NewEvaluator(quiet).Evaluate(Source{Language: "LUA", Code: "x = 1", StartLine: 1}, testSetup)
	wantClean(t, "LUA", r)
	wantEqual(t, "Vars", r.Vars, map[string]any{"x": 1})
}
