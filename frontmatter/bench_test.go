package frontmatter

import (
	"context"
	"os"
	"testing"
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
	r := NewEvaluator(Limits{}).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
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
