package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func steps(ss ...ChainStep) []ChainStep { return ss }

var pathSchema = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "n": map[string]any{"type": "number"}}}

func TestCompileChainValidation(t *testing.T) {
	read := ChainStep{Name: "read", Tool: "read", Input: map[string]any{"path": "{{ input.path }}"}}
	isChain := func(n string) bool { return n == "other_chain" }
	many := make([]ChainStep, MaxChainSteps+1)
	for i := range many {
		many[i] = ChainStep{Name: "s" + strings.Repeat("x", i), Tool: "ls"}
	}
	cases := []struct {
		name string
		spec ChainSpec
		want string // "" = valid; else a substring of the error
	}{
		{"valid", ChainSpec{Name: "deploy", InputSchema: pathSchema, Steps: steps(read,
			ChainStep{Name: "count", Tool: "bash", Input: map[string]any{"command": "wc -l {{input.path}} # {{ steps.read.output }}"}})}, ""},
		{"no schema: any input field", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: "ls", Input: map[string]any{"path": "{{ input.anything.deep }}"}})}, ""},
		{"bad chain name", ChainSpec{Name: "Deploy", Steps: steps(read)}, `chain "Deploy": invalid name`},
		{"no steps", ChainSpec{Name: "c"}, "chain 'c': a chain needs at least one step"},
		{"too many steps", ChainSpec{Name: "c", Steps: many}, "17 steps: a chain has at most 16"},
		{"empty step name", ChainSpec{Name: "c", Steps: steps(ChainStep{Tool: "ls"})}, `step 1: invalid step name ""`},
		{"bad step name", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "Read-1", Tool: "ls"})}, `step 1: invalid step name "Read-1"`},
		{"duplicate step name", ChainSpec{Name: "c", Steps: steps(read, read)}, "step 2 'read': the name is already used by step 1"},
		{"bad tool name", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: ""})}, `step 1 'a': invalid tool name ""`},
		{"self", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: "c"})}, "step 1 'a': a chain cannot call itself"},
		{"nested", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: "other_chain"})}, "tool 'other_chain' is a chain: chains cannot be nested"},
		{"unknown input property", ChainSpec{Name: "c", InputSchema: pathSchema, Steps: steps(ChainStep{Name: "a", Tool: "ls", Input: map[string]any{"path": "{{ input.dir }}"}})},
			"chain 'c': step 1 'a': reference {{ input.dir }}: the input schema has no property 'dir'"},
		{"later step", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: "ls", Input: map[string]any{"path": "{{ steps.b.output }}"}}, ChainStep{Name: "b", Tool: "ls"})},
			"step 1 'a': reference {{ steps.b.output }}: no earlier step named 'b'"},
		{"own step", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "a", Tool: "ls", Input: map[string]any{"path": "{{ steps.a.output }}"}})}, "no earlier step named 'a'"},
		{"unknown step", ChainSpec{Name: "c", Steps: steps(read, ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": []any{"{{ steps.rd.output }}"}}})}, "step 2 'b': reference {{ steps.rd.output }}: no earlier step named 'rd'"},
		{"syntax: no output", ChainSpec{Name: "c", Steps: steps(read, ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "{{ steps.read }}"}})}, "use {{ steps.<step>.output }}"},
		{"syntax: unknown root", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "{{ env.HOME }}"}})}, "a reference starts with input. or steps."},
		{"syntax: bare input", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "{{input}}"}})}, "name a field of the input"},
		{"syntax: empty", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "a {{ }} b"}})}, "empty"},
		{"syntax: unclosed", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "a {{ input.x"}})}, "'{{' that does not start a reference"},
		{"syntax: expression", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "{{ input.x | upper }}"}})}, "use {{ input."},
		{"syntax: unclosed before a reference", ChainSpec{Name: "c", Steps: steps(ChainStep{Name: "b", Tool: "ls", Input: map[string]any{"x": "{{ oops {{ input.x }}"}})}, "reference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := CompileChain(c.spec, isChain)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("no error, want %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestTemplateResolve(t *testing.T) {
	input := map[string]any{"path": "notes.txt", "n": 3.0, "opts": map[string]any{"deep": []any{"a", "b"}}, "evil": "{{ steps.read.output }}"}
	outputs := map[string]any{"read": "line1\nline2", "stat": map[string]any{"size": 42.0}}
	cases := []struct {
		name     string
		template any
		want     any
		wantErr  string
	}{
		{"exact reference keeps the type", map[string]any{"n": "{{ input.n }}"}, map[string]any{"n": 3.0}, ""},
		{"no spaces", map[string]any{"p": "{{input.path}}"}, map[string]any{"p": "notes.txt"}, ""},
		{"interpolated", map[string]any{"c": "wc -l {{ input.path }} # n={{ input.n }}"}, map[string]any{"c": "wc -l notes.txt # n=3"}, ""},
		{"object interpolated as JSON", map[string]any{"c": "x={{ input.opts }}"}, map[string]any{"c": `x={"deep":["a","b"]}`}, ""},
		{"deep path and index", map[string]any{"c": "{{ input.opts.deep.1 }}"}, map[string]any{"c": "b"}, ""},
		{"step output", map[string]any{"c": "echo '{{ steps.read.output }}'"}, map[string]any{"c": "echo 'line1\nline2'"}, ""},
		{"step JSON output field", map[string]any{"size": "{{ steps.stat.output.size }}"}, map[string]any{"size": 42.0}, ""},
		{"literals and arrays", map[string]any{"a": []any{1.0, true, "x", "{{ input.path }}"}, "b": false}, map[string]any{"a": []any{1.0, true, "x", "notes.txt"}, "b": false}, ""},
		// The attack: the model's input holds reference text. It is data:
		// inserted as is, never expanded.
		{"reference text in a value is not expanded", map[string]any{"c": "{{ input.evil }}"}, map[string]any{"c": "{{ steps.read.output }}"}, ""},
		{"nor when interpolated", map[string]any{"c": "say {{ input.evil }}!"}, map[string]any{"c": "say {{ steps.read.output }}!"}, ""},
		{"null stays null", map[string]any{"a": nil, "b": []any{nil}}, map[string]any{"a": nil, "b": []any{nil}}, ""},
		{"no input", nil, map[string]any{}, ""},
		{"missing input field", map[string]any{"c": "{{ input.nope }}"}, nil, "{{ input.nope }}: no field 'nope'"},
		{"missing deep field", map[string]any{"c": "{{ input.path.x }}"}, nil, "is not an object"},
		{"index out of range", map[string]any{"c": "{{ input.opts.deep.7 }}"}, nil, "no element 'opts.deep.7'"},
		{"step without output", map[string]any{"c": "{{ steps.later.output }}"}, nil, "step 'later' has no output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, err := CompileTemplate(c.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.Resolve(input, outputs, false)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// A step output holding reference text is not expanded by the next step
// either, and a chain input of megabytes resolves in one pass.
func TestTemplateOutputsAndHugeInputsAreData(t *testing.T) {
	tm, err := CompileTemplate(map[string]any{"c": "{{ steps.a.output }} and {{ input.big }}"})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("{{ steps.a.output }}", 1<<16) // 1.3 MB of reference text
	got, err := tm.Resolve(map[string]any{"big": big}, map[string]any{"a": "{{ input.big }}"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{{ input.big }} and " + big; got.(map[string]any)["c"] != want {
		t.Fatalf("expanded: got %d bytes, want %d", len(got.(map[string]any)["c"].(string)), len(want))
	}
}

func TestTemplatePreviewKeepsUnknownSteps(t *testing.T) {
	tm, err := CompileTemplate(map[string]any{"command": "wc -l {{ steps.read.output }}", "raw": "{{steps.read.output}}", "p": "{{ input.path }}"})
	if err != nil {
		t.Fatal(err)
	}
	if !tm.UsesSteps() {
		t.Fatal("UsesSteps = false")
	}
	got, err := tm.Resolve(map[string]any{"path": "a"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"command": "wc -l {{ steps.read.output }}", "raw": "{{ steps.read.output }}", "p": "a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}

func TestChainRunStopsAtFirstFailure(t *testing.T) {
	c, err := CompileChain(ChainSpec{Name: "c", Steps: steps(
		ChainStep{Name: "a", Tool: "one", Input: map[string]any{"x": "{{ input.x }}"}},
		ChainStep{Name: "b", Tool: "two", Input: map[string]any{"y": "{{ steps.a.output }}!"}},
		ChainStep{Name: "c", Tool: "three"},
	)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	run := c.Run(context.Background(), map[string]any{"x": "hi"}, func(ctx context.Context, i int, st ChainStep, in json.RawMessage, dep bool) StepResult {
		seen = append(seen, st.Name+" "+string(in)+" "+map[bool]string{true: "dep", false: "indep"}[dep])
		if st.Name == "b" {
			return StepResult{Status: StepError, Output: "boom", DurationMS: 7}
		}
		return StepResult{Status: StepOK, Output: "out-" + st.Name, Value: "out-" + st.Name, DurationMS: 3}
	})
	if want := []string{`a {"x":"hi"} indep`, `b {"y":"out-a!"} dep`}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("ran %q, want %q", seen, want)
	}
	if run.OK() || run.Failed != 2 {
		t.Fatalf("Failed = %d", run.Failed)
	}
	var statuses []string
	for _, s := range run.Steps {
		statuses = append(statuses, s.Name+":"+s.Status)
	}
	if want := []string{"a:ok", "b:error", "c:skipped"}; !reflect.DeepEqual(statuses, want) {
		t.Fatalf("statuses %q", statuses)
	}
	if run.Status() != StepError || run.DurationMS < 0 {
		t.Fatalf("chain status %q, duration %d ms", run.Status(), run.DurationMS)
	}
	run.DurationMS = 12 // for the summary's text
	sum := run.Summary()
	for _, want := range []string{"chain c: stopped at step 2 'b' (two): error after 12 ms", "step 1 a (one): ok 3 ms\n  out-a", "step 2 b (two): error 7 ms\n  boom", "step 3 c (three): skipped\n",
		`chain: {"status":"error","duration_ms":12,"steps":[{"name":"a","tool":"one","status":"ok","duration_ms":3},{"name":"b","tool":"two","status":"error","duration_ms":7},{"name":"c","tool":"three","status":"skipped","duration_ms":0}]}`} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestChainRunInputErrorAndCancel(t *testing.T) {
	c, err := CompileChain(ChainSpec{Name: "c", Steps: steps(
		ChainStep{Name: "a", Tool: "one", Input: map[string]any{"x": "{{ input.x }}"}},
		ChainStep{Name: "b", Tool: "two"},
	)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, int, ChainStep, json.RawMessage, bool) StepResult {
		t.Fatal("a step ran")
		return StepResult{}
	}
	run := c.Run(context.Background(), map[string]any{}, never)
	if run.Failed != 1 || !strings.Contains(run.Steps[0].Output, "its input could not be built: {{ input.x }}: no field 'x'") {
		t.Fatalf("%+v", run)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run = c.Run(ctx, map[string]any{"x": 1}, never)
	if run.Failed != 1 || run.Steps[1].Status != StepSkipped {
		t.Fatalf("%+v", run)
	}
}

// failingWriter changed a file, then failed: what it changed stays in the
// result (a chain whose write step ran before a later step failed keeps
// the undo record).
type failingWriter struct{}

func (failingWriter) Spec() Spec { return Spec{Name: "failing_writer"} }
func (failingWriter) Run(context.Context, Call, json.RawMessage) (Output, error) {
	return Output{Changes: []Change{{Path: "/x", Before: BackupAbsent, After: "h"}}}, errors.New("then it failed")
}

func TestExecutorKeepsChangesOfAFailure(t *testing.T) {
	r := NewRegistry()
	r.MustAdd(failingWriter{})
	res := (&Executor{Registry: r}).Run(context.Background(), Call{ID: "1", Tool: "failing_writer"}, nil)
	if !res.IsError || len(res.Changes) != 1 || res.Changes[0].Path != "/x" {
		t.Fatalf("%+v", res)
	}
}

// Refuse is a chain that cannot start: the step named fails, every other
// step (earlier ones too) is skipped, and nothing ran.
func TestChainRefuse(t *testing.T) {
	c, err := CompileChain(ChainSpec{Name: "c", Steps: steps(
		ChainStep{Name: "a", Tool: "one"}, ChainStep{Name: "b", Tool: "gone"}, ChainStep{Name: "c", Tool: "three"},
	)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := c.Refuse(1, "Unknown tool: gone.")
	var statuses []string
	for _, s := range run.Steps {
		statuses = append(statuses, s.Name+":"+s.Status)
	}
	if want := []string{"a:skipped", "b:error", "c:skipped"}; !reflect.DeepEqual(statuses, want) || run.OK() || run.Status() != StepError {
		t.Fatalf("statuses %q, status %q", statuses, run.Status())
	}
	if sum := run.Summary(); !strings.Contains(sum, "stopped at step 2 'b' (gone): error after 0 ms") || !strings.Contains(sum, `"status":"error"`) {
		t.Errorf("summary:\n%s", sum)
	}
}
