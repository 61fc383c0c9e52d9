package frontmatter

import (
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
