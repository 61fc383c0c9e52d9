package frontmatter

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func realistic(tb testing.TB) Source {
	tb.Helper()
	code, err := os.ReadFile("testdata/realistic.lua")
	if err != nil {
		tb.Fatal(err)
	}
	return Source{Language: "lua", Code: string(code), StartLine: 1}
}

func TestRealisticFrontmatter(t *testing.T) {
	src := realistic(t)
	r := NewEvaluator(Limits{}).Evaluate(src, testSetup)
	wantClean(t, src.Code, r)
	o := r.Opts
	wantEqual(t, "scalars", []any{deref(o.Provider), deref(o.Model), deref(o.Thinking), deref(o.Temperature), deref(o.MaxTokens),
		deref(o.CacheRetention), deref(o.Autopilot), deref(o.MaxTurns), deref(o.MaxConcurrent)},
		[]any{"anthropic", "claude-sonnet-4-5", "medium", 0.3, 8000, "long", true, 20, 4})
	wantEqual(t, "Anthropic", o.Anthropic, map[string]any{"thinking_budget": 20000})
	wantEqual(t, "Tools", o.Tools, []string{"read", "write", "edit", "grep", "find", "ls", "calculator"})
	wantEqual(t, "AutoApprove", o.AutoApprove, []string{"$default"})
	wantEqual(t, "AutoApproveExclusions", o.AutoApproveExclusions, []string{"write"})
	wantEqual(t, "Vars", r.Vars, map[string]any{
		"project": "flemma", "owner": map[string]any{"name": "Ada", "team": "core"},
		"goals": []any{"split the parser", "keep the tests green"}, "summary": "flemma: 2 goals",
	})
}

// BenchmarkEvaluateUncached: a result-cache miss with the compiled chunk
// cached (a setup change, or a second buffer with the same frontmatter).
func BenchmarkEvaluateUncached(b *testing.B) {
	src := realistic(b)
	e := NewEvaluator(Limits{})
	e.Evaluate(src, testSetup)
	b.ReportAllocs()
	for b.Loop() {
		e.evaluate(src, testSetup)
	}
}

// BenchmarkEvaluateCold: nothing cached: parse, rewrite, compile and run.
func BenchmarkEvaluateCold(b *testing.B) {
	src := realistic(b)
	b.ReportAllocs()
	for b.Loop() {
		NewEvaluator(Limits{}).Evaluate(src, testSetup)
	}
}

// BenchmarkEvaluateCached: an unchanged frontmatter on the next cycle.
func BenchmarkEvaluateCached(b *testing.B) {
	src := realistic(b)
	e := NewEvaluator(Limits{})
	e.Evaluate(src, testSetup)
	b.ReportAllocs()
	for b.Loop() {
		e.Evaluate(src, testSetup)
	}
}

// BenchmarkFuncCall: one call of a stored approval function.
func BenchmarkFuncCall(b *testing.B) {
	code := `flemma.opt.tools.auto_approve = function(tool_name, input, ctx)
  if tool_name == "bash" and input.command:match("^git status") then return true end
  if tool_name == "bash" and input.command:find("rm -rf", 1, true) then return "deny" end
  return nil
end`
	// A long call deadline: a busy machine must not fail the benchmark.
	r := NewEvaluator(Limits{CallDeadline: time.Second}).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	if len(r.Diagnostics) > 0 || r.Opts.AutoApproveFunc == nil {
		b.Fatal(r.Diagnostics)
	}
	f := r.Opts.AutoApproveFunc
	input := map[string]any{"command": "git status --short", "label": "checking the tree"}
	callCtx := map[string]any{"bufnr": 3, "cwd": "/home/ada/flemma"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := f.Call(ctx, "bash", input, callCtx); err != nil || d != DecisionApprove {
			b.Fatal(d, err)
		}
	}
}

// varsCode is a frontmatter with the template variables of a busy buffer:
// a project record, lists, a nested table used twice.
const varsCode = `project = { name = "flemma", owner = { name = "Ada", team = "core", since = 2023 } }
goals = { "split the parser", "keep the tests green", "ship the sandbox", "write the docs" }
files = {}
for i = 1, 20 do files[i] = { path = "src/file" .. i .. ".go", lines = i * 37, reviewed = i % 3 == 0 } end
local limits = { tokens = 8000, turns = 20 }
budget = { draft = limits, review = limits }
summary = string.format("%s: %d goals, %d files", project.name, #goals, #files)
flemma.opt.anthropic = { thinking_budget = 20000, metadata = { user = "ada", tags = { "refactor", "go" } } }`

// BenchmarkExportVars: converting the template variables of varsCode to Go
// (what happens after the deadline of every evaluation).
func BenchmarkExportVars(b *testing.B) {
	c, err := compile(varsCode)
	if err != nil {
		b.Fatal(err)
	}
	l := Limits{}.withDefaults()
	v := newVM(l, 1, newEvalState(testSetup, "flemma.opt", 1, l))
	defer v.L.Close()
	fn := v.L.NewFunctionFromProto(c.proto)
	fn.Env = v.env
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := v.run(ctx, time.Second, fn, 0); err != nil {
		b.Fatal(err.msg)
	}
	b.ReportAllocs()
	for b.Loop() {
		if vars, d := v.exportVars(c.proto); len(vars) != 5 || d != nil {
			b.Fatal(vars, d)
		}
	}
}

// BenchmarkEvaluateVars: an uncached evaluation of varsCode.
func BenchmarkEvaluateVars(b *testing.B) {
	src := Source{Language: "lua", Code: varsCode, StartLine: 1}
	e := NewEvaluator(Limits{})
	if r := e.Evaluate(src, testSetup); len(r.Diagnostics) > 0 {
		b.Fatal(r.Diagnostics)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.evaluate(src, testSetup)
	}
}

// BenchmarkFuncCallEditInput: a call whose input is a realistic edit (a few
// kilobytes of text and a list of replacements) with a context.
func BenchmarkFuncCallEditInput(b *testing.B) {
	code := `flemma.opt.tools.auto_approve = function(tool_name, input, ctx)
  if tool_name == "edit" and #input.edits <= 8 and input.path:find("^src/") then return true end
  return nil
end`
	// A long call deadline: a busy machine must not fail the benchmark.
	r := NewEvaluator(Limits{CallDeadline: time.Second}).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	if len(r.Diagnostics) > 0 || r.Opts.AutoApproveFunc == nil {
		b.Fatal(r.Diagnostics)
	}
	f := r.Opts.AutoApproveFunc
	var edits []any
	for i := 0; i < 5; i++ {
		edits = append(edits, map[string]any{"old": strings.Repeat("old line\n", 40), "new": strings.Repeat("new line\n", 45), "replace_all": false})
	}
	input := map[string]any{"path": "src/parser.go", "edits": edits, "label": "split the parser"}
	callCtx := map[string]any{"bufnr": 3, "tool_id": "toolu_01A2B3", "cwd": "/home/ada/flemma"}
	ctx := WithBudget(context.Background(), NewBudget(time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if d, err := f.Call(ctx, "edit", input, callCtx); err != nil || d != DecisionApprove {
			b.Fatal(d, err)
		}
	}
}
