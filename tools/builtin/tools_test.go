package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr, want, err string
	}{
		{"2^10", "1024", ""},
		{"15/3", "5", ""},
		{"1/3", "0.3333333333333333", ""},
		{"math.sqrt(16)", "4", ""},
		{"math.floor(7.9) + 1", "8", ""},
		{"2 + 2 * 3", "8", ""},
		{"10 % 3", "1", ""},
		{"", "", "No expression provided"},
		{"   ", "", "No expression provided"},
		{"2 +", "", "Invalid expression:"},
		{"sqrt(16)", "", "Evaluation failed:"},
		{"undefined_name", "", "Evaluation failed: the expression has no value"},
		{"os.execute('id')", "", "Evaluation failed:"},
		{"require('os')", "", "Evaluation failed:"},
		{"dofile('/etc/passwd')", "", "Evaluation failed:"},
		{"print('x')", "", "Evaluation failed:"},
		{"('x'):rep(10)", "", "Evaluation failed:"},
		{"(function() while true do end end)()", "", "function definitions are not allowed"},
		{"1) ; os.exit(1", "", "Invalid expression:"},
	}
	for _, tt := range tests {
		got, err := Evaluate(context.Background(), tt.expr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Evaluate(%q) = %q, %v; want error containing %q", tt.expr, got, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "stack traceback") {
				t.Errorf("Evaluate(%q) error leaks a traceback: %v", tt.expr, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Evaluate(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

// TestBuiltinsRegister registers every built-in: a misdefined one panics here.
func TestBuiltinsRegister(t *testing.T) {
	r := tools.NewRegistry()
	for _, tool := range All() {
		r.MustAdd(tool)
		s := tool.Spec()
		if s.InputSchema["additionalProperties"] != false {
			t.Errorf("%s: schema must forbid additional properties", s.Name)
		}
		props := s.InputSchema["properties"].(map[string]any)
		req := s.InputSchema["required"].([]any)
		if len(req) != len(props) {
			t.Errorf("%s: strict mode needs every property required, got %d of %d", s.Name, len(req), len(props))
		}
	}
	if got := len(r.Names()); got != len(All()) {
		t.Errorf("Names() has %d tools, want %d", got, len(All()))
	}
}

func TestSchemaFor(t *testing.T) {
	type in struct {
		Path  string   `json:"path" desc:"file"`
		Limit *int     `json:"limit" desc:"max lines"`
		Tags  []string `json:"tags" desc:"tags"`
	}
	s := tools.SchemaFor(reflect.TypeFor[in]())
	b, _ := json.Marshal(s)
	want := `{"additionalProperties":false,"properties":{"limit":{"description":"max lines","type":["integer","null"]},"path":{"description":"file","type":"string"},"tags":{"description":"tags","items":{"type":"string"},"type":"array"}},"required":["path","limit","tags"],"type":"object"}`
	if string(b) != want {
		t.Errorf("SchemaFor = %s\nwant %s", b, want)
	}
}

func TestTypedPanicsOnMisdefinition(t *testing.T) {
	type noDesc struct {
		X string `json:"x"`
	}
	cases := map[string]func(){
		"bad name": func() {
			tools.Typed(tools.Spec{Name: "Bad-Name", Description: "d"}, func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) { return tools.Output{}, nil })
		},
		"no description": func() {
			tools.Typed(tools.Spec{Name: "x"}, func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) { return tools.Output{}, nil })
		},
		"field no desc": func() {
			tools.Typed(tools.Spec{Name: "x", Description: "d"}, func(context.Context, tools.Call, noDesc) (tools.Output, error) { return tools.Output{}, nil })
		},
		"not a struct": func() {
			tools.Typed(tools.Spec{Name: "x", Description: "d"}, func(context.Context, tools.Call, string) (tools.Output, error) { return tools.Output{}, nil })
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Typed did not panic", name)
				}
			}()
			fn()
		})
	}
}

func TestRegistryDuplicatesAndSupersedes(t *testing.T) {
	r := tools.NewRegistry()
	r.MustAdd(Calculator())
	if err := r.Add(Calculator()); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate Add = %v, want 'already registered'", err)
	}
	better := tools.Typed(tools.Spec{Name: "calc2", Description: "better", Supersedes: "calculator", Tags: []string{"Math"}},
		func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) {
			return tools.Output{Text: "42"}, nil
		})
	if err := r.Add(better); err != nil {
		t.Fatalf("Add superseding tool: %v", err)
	}
	if _, ok := r.Lookup("calculator"); ok {
		t.Error("superseded tool is still registered")
	}
	if got := r.ApprovalName("calc2"); got != "calculator" {
		t.Errorf("ApprovalName(calc2) = %q, want calculator (inherits approval)", got)
	}
	req := tools.Typed(tools.Spec{Name: "needs_rg", Description: "d", Requires: []string{"exe:definitely-not-installed-xyz"}},
		func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) { return tools.Output{}, nil })
	r.Have = sandbox.HaveRequirement
	r.MustAdd(req)
	if _, ok := r.Lookup("needs_rg"); ok {
		t.Error("tool with a missing requirement is visible")
	}
	if miss := r.Missing(req); len(miss) != 1 {
		t.Errorf("Missing = %v, want the executable", miss)
	}
	if got := r.Search("math"); len(got) != 1 || got[0].Spec().Name != "calc2" {
		t.Errorf("Search(math) = %v, want calc2 by tag", got)
	}
}

func TestExecutor(t *testing.T) {
	r := tools.NewRegistry()
	for _, tool := range All() {
		r.MustAdd(tool)
	}
	r.MustAdd(tools.Typed(tools.Spec{Name: "boom", Description: "panics"}, func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) {
		panic("secret /home/user/.ssh/id_rsa")
	}))
	r.MustAdd(tools.Typed(tools.Spec{Name: "internal", Description: "fails"}, func(context.Context, tools.Call, CalculatorInput) (tools.Output, error) {
		return tools.Output{}, &tools.Internal{Err: errors.New("open /etc/shadow: permission denied")}
	}))
	r.MustAdd(tools.Typed(tools.Spec{Name: "slow", Description: "sleeps", Timeout: 50 * time.Millisecond}, func(ctx context.Context, _ tools.Call, _ CalculatorInput) (tools.Output, error) {
		<-ctx.Done()
		return tools.Output{}, ctx.Err()
	}))
	var logged []string
	e := &tools.Executor{Registry: r, Logf: func(f string, a ...any) { logged = append(logged, f) }}
	run := func(tool, input string) tools.Result {
		return e.Run(context.Background(), tools.Call{ID: "t1", Tool: tool}, json.RawMessage(input))
	}
	if res := run("calculator", `{"expression":"2^10","label":null}`); res.IsError || res.Content != "1024" {
		t.Errorf("calculator = %+v", res)
	}
	if res := run("calculator", `{"expression":"2^10"}`); res.IsError || res.Content != "1024" {
		t.Errorf("absent nullable label = %+v, want it treated as null", res)
	}
	if res := run("calculator", `{"label":null}`); !res.IsError || res.Kind != "ToolValidationError" || !strings.Contains(res.Content, "expression") {
		t.Errorf("missing field = %+v, want a validation error naming expression", res)
	}
	if res := run("calculator", `{"expression":"1","label":null,"extra":1}`); !res.IsError || res.Kind != "ToolValidationError" {
		t.Errorf("extra field = %+v, want a validation error", res)
	}
	if res := run("nope", `{}`); !res.IsError || res.Content != "Unknown tool: nope" {
		t.Errorf("unknown tool = %+v", res)
	}
	for _, tool := range []string{"boom", "internal"} {
		res := run(tool, `{"expression":"1","label":null}`)
		if !res.IsError || res.Kind != "InternalError" {
			t.Errorf("%s = %+v, want InternalError", tool, res)
		}
		if strings.Contains(res.Content, "/") && !strings.Contains(res.Content, "see logs") {
			t.Errorf("%s leaks detail: %q", tool, res.Content)
		}
		if strings.Contains(res.Content, "ssh") || strings.Contains(res.Content, "shadow") {
			t.Errorf("%s leaks a path into the result: %q", tool, res.Content)
		}
		want := `{"error":"InternalError","message":"Tool '` + tool + `' failed — see logs"}`
		if res.Content != want {
			t.Errorf("%s content = %s, want %s", tool, res.Content, want)
		}
	}
	if len(logged) < 2 {
		t.Errorf("internal failures were not logged: %v", logged)
	}
	if res := run("slow", `{"expression":"1","label":null}`); !res.IsError || res.Kind != "Timeout" {
		t.Errorf("slow = %+v, want Timeout", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	res := e.Run(ctx, tools.Call{ID: "t2", Tool: "calculator_async"}, json.RawMessage(`{"expression":"1","delay":5000,"label":null}`))
	if !res.IsError || res.Content != "User aborted tool execution." {
		t.Errorf("cancelled calculator_async = %+v", res)
	}
	if res.Duration > 3*time.Second {
		t.Errorf("cancel took %s", res.Duration)
	}
}

func BenchmarkExecutorCalculator(b *testing.B) {
	r := tools.NewRegistry()
	r.MustAdd(Calculator())
	e := &tools.Executor{Registry: r}
	in := json.RawMessage(`{"expression":"2^10","label":null}`)
	b.ReportAllocs()
	for b.Loop() {
		e.Run(context.Background(), tools.Call{ID: "x", Tool: "calculator"}, in)
	}
}
