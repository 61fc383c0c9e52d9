package frontmatter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzEvaluate checks that no input makes the package panic (Evaluate turns
// a panic into an "internal error" diagnostic, which fails here), that every
// diagnostic is well formed, and that evaluation stops near its deadline.
func FuzzEvaluate(f *testing.F) {
	seeds := []string{
		`flemma.opt.tools = {"bash", "read"}`,
		`flemma.opt.tools.auto_approve:remove("write"):append("bash")`,
		`flemma.opt.tools.auto_approve = function(n, i, c) return n == "read" end`,
		`flemma.opt.sandbox.writable:append("/")`,
		`flemma.opt = { temperature = 0.2, anthropic = { thinking_budget = 1 } }`,
		`x = ("a"):rep(3) .. string.format("%5.2f", 1) .. ("ab"):gsub("(a)", "%1%1")`,
		`local t = {} t[1], t.x = 1, 2 for k, v in pairs(t) do y = k end`,
		`x = ("k=v"):match("(%w+)=(%w+)")`,
		`{"flemma": {"tools": {"$append": "bash"}}, "name": "x"}`,
		`[1, {"a": null}]`,
		`local a = {} for i = 1, 20 do a = {a, a} end x = a flemma.opt.anthropic.y = { a }`,
		`local c = {} c.c = c x = c flemma.opt.openai = { c = c }`,
		`local t = { "b", "a", 3 } table.sort(t) table.sort(t, function(x, y) return x > y end)`,
		`error(string.rep("e", 5000))`,
		`assert(false, "%d %s")`,
		`local p = flemma.opt.x.y.z x = tostring(p) .. tostring(flemma.opt.tools)`,
		`x = 1 + 2 * 3 - -4 ^ 2 .. "s" local function f(a, ...) return select("#", ...) end y = f(1, 2, 3)`,
		`flemma.opt.tools.auto_approve = function(n, i, c) local k = 0 for _ in pairs(i) do k = k + 1 end return k < 3 end`,
		`{"flemma": {"anthropic": {"a": [1, [2, [3]]], "b": {"c": true}}}, "v": [[], {}]}`,
	}
	for _, s := range seeds {
		f.Add(strings.HasPrefix(s, "{\"") || strings.HasPrefix(s, "["), s)
	}
	ev := NewEvaluator(Limits{Deadline: 20 * time.Millisecond, CallDeadline: 5 * time.Millisecond, MaxBytes: 1 << 20})
	setup := testSetup
	f.Fuzz(func(t *testing.T, isJSON bool, code string) {
		lang := "lua"
		if isJSON {
			lang = "json"
		}
		start := time.Now()
		r := ev.evaluate(Source{Language: lang, Code: code, StartLine: 3}, setup)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("Evaluate(%q) took %v", code, el)
		}
		for _, d := range r.Diagnostics {
			if strings.Contains(d.Message, "internal error") {
				t.Fatalf("Evaluate(%q): %v", code, d)
			}
			if d.Line < 3 || (d.Severity != SeverityError && d.Severity != SeverityWarning) || d.Message == "" {
				t.Fatalf("Evaluate(%q): malformed diagnostic %+v", code, d)
			}
		}
		if fn := r.Opts.AutoApproveFunc; fn != nil {
			_, _ = fn.Call(t.Context(), "bash", map[string]any{"command": "ls"}, nil)
		}
	})
}

// FuzzCall checks that no tool input makes a stored function's call panic,
// hang or break its VM.
func FuzzCall(f *testing.F) {
	for _, s := range []string{
		`{"command": "ls -la"}`,
		`{"path": "src/a.go", "edits": [{"old": "a", "new": "b"}, {"old": "c", "new": "d"}]}`,
		`{"a": [1, 2, {"b": null, "c": [true, false, 1.5e300]}]}`,
		`{"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"": "", "\u0000": "\ud800"}`,
	} {
		f.Add(s)
	}
	code := `local function walk(v, d)
  if d > 40 then error("too deep") end
  if type(v) ~= "table" then return 1 end
  local n = 1
  for _, x in pairs(v) do n = n + walk(x, d + 1) end
  return n
end
flemma.opt.tools.auto_approve = function(name, input, ctx)
  if name == "ping" then return true end
  if input.command and input.command:find("rm", 1, true) then return "deny" end
  return walk(input, 0) < 50
end`
	ev := NewEvaluator(Limits{CallDeadline: 20 * time.Millisecond, MaxValues: 4096, MaxBytes: 1 << 20})
	r := ev.Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	if len(r.Diagnostics) > 0 || r.Opts.AutoApproveFunc == nil {
		f.Fatal(r.Diagnostics)
	}
	fn := r.Opts.AutoApproveFunc
	f.Fuzz(func(t *testing.T, input string) {
		var in map[string]any
		if json.Unmarshal([]byte(input), &in) != nil {
			return
		}
		ctx := WithBudget(t.Context(), NewBudget(time.Second))
		start := time.Now()
		_, err := fn.Call(ctx, "bash", in, map[string]any{"input": in, "bufnr": 1})
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("Call(%q) took %v", input, el)
		}
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("Call(%q): %v", input, err)
		}
		if d, err := fn.Call(t.Context(), "ping", nil, nil); err != nil || d != DecisionApprove {
			t.Fatalf("Call(ping) after Call(%q) = %q, %v", input, d, err)
		}
	})
}
