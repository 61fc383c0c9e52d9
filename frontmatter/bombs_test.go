package frontmatter

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Resource bombs: inputs whose cost is tiny while the VM runs but would
// explode in the work done around it (converting results, compiling,
// formatting messages, caching). Every test asserts an outcome (an error, a
// count, a bounded size); a watchdog only keeps a regression from hanging
// the test binary, it is no speed assertion.

// watchdog is how long a bomb test may take before it is declared hung.
const watchdog = 2 * time.Minute

// within runs f in a goroutine and fails the test if it has not returned
// within the watchdog. A hung f is abandoned.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(watchdog):
		t.Fatalf("%s did not return within %v", what, watchdog)
	}
	panic("unreachable")
}

// evalWithin evaluates Lua code (code line k is buffer line k+1) with the
// given limits under the watchdog.
func evalWithin(t *testing.T, code string, limits Limits) *Result {
	t.Helper()
	return within(t, fmt.Sprintf("Evaluate(%.60q)", code), func() *Result {
		return NewEvaluator(limits).Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	})
}

// wantError checks for an error diagnostic at line (0: any) whose message
// contains every part.
func wantError(t *testing.T, r *Result, line int, parts ...string) {
	t.Helper()
next:
	for _, d := range r.Diagnostics {
		if d.Severity != SeverityError || (line != 0 && d.Line != line) {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(d.Message, p) {
				continue next
			}
		}
		return
	}
	t.Fatalf("diagnostics %v, want an error at line %d containing %q", r.Diagnostics, line, parts)
}

// doubling builds a table whose tree expansion has 2^n leaves from n+1
// tables: the classic shared-table bomb.
func doubling(n int) string {
	return fmt.Sprintf("local a = {} for i = 1, %d do a = {a, a} end\n", n)
}

// generous is for bombs that need some run time to build their value: the
// bomb is in what happens after the run, not in the deadline.
var generous = Limits{Deadline: time.Minute, CallDeadline: time.Minute}

func TestBombTemplateVariables(t *testing.T) {
	tests := []struct {
		name, code string
		line       int
		want       []string
	}{
		{"doubling 32", doubling(32) + "x = a", 3, []string{"template variable 'x'", "nested more than 32 levels"}},
		{"doubling 30", doubling(30) + "x = a", 3, []string{"template variable 'x'", "more than 65536 values"}},
		{"doubling 22", doubling(22) + "x = a", 3, []string{"more than 65536 values"}},
		{"doubling in a field", doubling(29) + "x = { y = { a } }", 3, []string{"more than 65536 values"}},
		{"fan-out", "local big = {} for i = 1, 1000 do big[i] = i end\nx = {} for i = 1, 1000 do x[i] = big end", 3, []string{"more than 65536 values"}},
		{"many variables", doubling(15) + "v1 = a v2 = a v3 = a v4 = a", 3, []string{"more than 65536 values"}},
		{"shared string", "local s = string.rep('x', 1e6)\nx = {} for i = 1, 100 do x[i] = s end", 3, []string{"template variable 'x'", "larger than 8.0 MiB"}},
		{"shared key", "local t = {[string.rep('k', 1e6)] = 1}\nx = {} for i = 1, 100 do x[i] = t end", 3, []string{"larger than 8.0 MiB"}},
		{"deep", "local a = {} for i = 1, 40 do a = {a} end\n\nx = a", 4, []string{"template variable 'x'", "nested more than 32 levels"}},
		{"assigned in a function", "local a = {} for i = 1, 40 do a = {a} end\nlocal function f()\n  z = a\nend\nf()", 4, []string{"template variable 'z'", "nested more than 32 levels"}},
		{"deep through sharing", "local a = {} for i = 1, 20 do a = {a} end\nx = {a} y = {{{{{{{{{{{{{{a}}}}}}}}}}}}}}", 3, []string{"template variable 'y'", "nested more than 32 levels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evalWithin(t, tt.code, generous)
			wantError(t, r, tt.line, tt.want...)
			if len(r.Vars) != 0 {
				t.Fatalf("Vars = %d variables, want none after a conversion error", len(r.Vars))
			}
		})
	}
}

// A table that appears many times is scanned once: its entries count every
// time, but its storage (here 100,000 array slots, all but one nil) is not
// walked again for every appearance.
func TestSharedTableScannedOnce(t *testing.T) {
	code := `local h = {} for i = 1, 1e5 do h[i] = i end for i = 2, 1e5 do h[i] = nil end
x = {} for i = 1, 2e4 do x[i] = h end
pair = { a = x[1], b = x[2] }`
	r := evalWithin(t, code, generous)
	wantClean(t, code, r)
	x, ok := r.Vars["x"].([]any)
	if !ok || len(x) != 20000 {
		t.Fatalf("x = %T with %d items, want 20000", r.Vars["x"], len(x))
	}
	wantEqual(t, "x[19999]", x[19999], []any{1})
	wantEqual(t, "pair", r.Vars["pair"], map[string]any{"a": []any{1}, "b": []any{1}})
}

func TestBombOptionWrites(t *testing.T) {
	const tooLarge = "value too large: more than 65536 values"
	targets := []struct {
		stmt, name, want string
	}{
		{"flemma.opt.anthropic = { x = a }", "flemma.opt.anthropic", tooLarge},
		{"flemma.opt.anthropic.x = a", "flemma.opt.anthropic.x", tooLarge},
		{"flemma.opt.parameters.openai = { x = a }", "flemma.opt.parameters.openai", tooLarge},
		{"flemma.opt = { vertex = { x = a } }", "flemma.opt", tooLarge},
		{"flemma.opt.tools = a", "flemma.opt.tools", tooLarge},
		{"flemma.opt.tools:append(a)", "flemma.opt.tools", tooLarge},
		{"flemma.opt.tools = flemma.opt.tools + a", "flemma.opt.tools", tooLarge},
		{"flemma.opt.tools.auto_approve = a", "flemma.opt.tools.auto_approve", tooLarge},
		{"flemma.opt.tools.auto_approve:remove(a)", "flemma.opt.tools.auto_approve", tooLarge},
		// Refused for what they are, without converting the value.
		{"flemma.opt.no_such_key = a", "flemma.opt.no_such_key", "unknown config key"},
		{"flemma.opt.sandbox.writable = a", "flemma.opt.sandbox.writable", "cannot be changed from frontmatter"},
	}
	for _, tt := range targets {
		for _, bomb := range []struct{ name, code string }{
			{"doubling", doubling(28)},
			{"fan-out", "local big = {} for i = 1, 1000 do big[i] = 'x' end local a = {} for i = 1, 1000 do a[i] = big end\n"},
		} {
			t.Run(bomb.name+"/"+tt.stmt, func(t *testing.T) {
				r := evalWithin(t, bomb.code+tt.stmt, generous)
				wantError(t, r, 3, tt.name+": ", tt.want)
			})
		}
	}
}

// A cycle cannot be written to flemma.opt (it is no configuration value).
func TestOptionCycle(t *testing.T) {
	code := "local c = { budget = 1 }\nc.self = c\nflemma.opt.anthropic.x = c"
	r := evalWithin(t, code, Limits{})
	wantError(t, r, 4, "flemma.opt.anthropic.x", "contains itself")
}

// Reading a provider section converts it again on every read; the
// conversions are charged, so a loop of reads ends in an error.
func TestSectionReadsBounded(t *testing.T) {
	code := `local t = {} for i = 1, 1000 do t[i] = i end
flemma.opt.anthropic.x = t
while true do local y = flemma.opt.anthropic.x end`
	r := evalWithin(t, code, generous)
	wantError(t, r, 4, "memory limit exceeded")
}

func TestBombCallInputs(t *testing.T) {
	// A long call deadline, so that the bound on values is what stops the
	// conversion (the deadline would, too).
	f := approveFunc(t, NewEvaluator(generous), `flemma.opt.tools.auto_approve = function(name, input, ctx)
  if name == "count" then return input ~= nil end
  return true
end`)
	dagMap := map[string]any{"leaf": 1}
	for i := 0; i < 30; i++ {
		dagMap = map[string]any{"a": dagMap, "b": dagMap}
	}
	dagSlice := []any{"leaf"}
	for i := 0; i < 30; i++ {
		dagSlice = []any{dagSlice, dagSlice}
	}
	cyclic := map[string]any{}
	cyclic["a"], cyclic["b"] = cyclic, cyclic
	typed := map[string][]int{}
	for i := 0; i < 100000; i++ {
		typed[fmt.Sprint(i)] = []int{i}
	}
	tests := []struct {
		name          string
		input, callCx map[string]any
		want          string
	}{
		{"map DAG", dagMap, nil, "more than 65536 values"},
		{"slice DAG", map[string]any{"x": dagSlice}, nil, "more than 65536 values"},
		{"cyclic map", cyclic, nil, "nested more than 32 levels"},
		{"DAG in ctx", nil, dagMap, "more than 65536 values"},
		{"flat", map[string]any{"x": make([]any, 1e6)}, nil, "more than 65536 values"},
		{"typed map", map[string]any{"x": typed}, nil, "more than 65536 values"},
		{"deep", map[string]any{"x": nest(40)}, nil, "nested more than 32 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := within(t, "Call", func() error {
				_, err := f.Call(context.Background(), "bash", tt.input, tt.callCx)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "auto_approve function (line 2)") {
				t.Fatalf("Call error = %v, want one containing %q", err, tt.want)
			}
			if d, err := f.Call(context.Background(), "count", map[string]any{"n": 1}, nil); err != nil || d != DecisionApprove {
				t.Fatalf("Call after the refused input = %q, %v; want approve", d, err)
			}
		})
	}
}

func nest(n int) any {
	var v any = "leaf"
	for i := 0; i < n; i++ {
		v = []any{v}
	}
	return v
}

// A stored function that errors, spins, allocates or recurses returns an
// error promptly and leaves its VM usable (or, for retained growth,
// disabled).
func TestFuncMisbehaviour(t *testing.T) {
	// Calls that must be stopped by the deadline get a short one; the
	// others a long one, so that a loaded machine cannot turn their
	// outcome into a timeout.
	code := doubling(32) + `flemma.opt.tools.auto_approve = function(name)
  if name == "error" then error("nope") end
  if name == "big error" then error(string.rep("e", 4e6)) end
  if name == "spin" then while true do end end
  if name == "spin in pcall" then pcall(function() while true do end end) while true do end end
  if name == "rep" then local s = string.rep("x", 1e9) end
  if name == "fill" then local t = {} for i = 1, 1e9 do t[i] = {i} end end
  if name == "recurse" then local function r() return 1 + r() end return r() end
  if name == "sort" then local t = {} for i = 1, 1e5 do t[i] = -i end table.sort(t, function(x, y) while true do end end) end
  if name == "bomb" then return a end
  if name == "big string" then return string.rep("s", 4e6) end
  return true
end`
	short := approveFunc(t, NewEvaluator(Limits{CallDeadline: 50 * time.Millisecond}), code)
	long := approveFunc(t, NewEvaluator(generous), code)
	tests := []struct{ name, want string }{
		{"error", "(line 3): line 4: nope"},
		{"big error", "(line 3): line 5: eeee"},
		{"spin", "did not finish within 50ms"},
		{"spin in pcall", "did not finish within 50ms"},
		{"rep", "memory limit exceeded"},
		{"fill", "did not finish within 50ms"},
		{"recurse", "stack overflow"},
		{"sort", "did not finish within 50ms"},
		{"bomb", "returned a table"},
		{"big string", `returned the string "ssss`},
	}
	for _, tt := range tests {
		f := long
		if strings.Contains(tt.want, "did not finish") {
			f = short
		}
		err := within(t, "Call("+tt.name+")", func() error {
			_, err := f.Call(context.Background(), tt.name, nil, nil)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("Call(%s) error = %v, want one containing %q", tt.name, err, tt.want)
		}
		if len(err.Error()) > 2*maxMessageBytes {
			t.Fatalf("Call(%s) error is %d bytes long", tt.name, len(err.Error()))
		}
		if d, err := f.Call(context.Background(), "ok", nil, nil); err != nil || d != DecisionApprove {
			t.Fatalf("Call after %s = %q, %v; want the VM to stay usable", tt.name, d, err)
		}
	}
}

func TestBombHugeSource(t *testing.T) {
	e := NewEvaluator(Limits{})
	huge := strings.Repeat("x = 1\n", 10<<20)
	for _, src := range []Source{
		{Language: "lua", Code: huge, StartLine: 1},
		{Language: "json", Code: huge, StartLine: 1},
		{Language: strings.Repeat("l", 1<<20), Code: "x = 1", StartLine: 1},
	} {
		r := within(t, "Evaluate", func() *Result { return e.Evaluate(src, testSetup) })
		if !r.Blocking() || len(r.Diagnostics) != 1 || len(r.Diagnostics[0].Message) > maxMessageBytes {
			t.Fatalf("Evaluate(huge) diagnostics = %.200v, want one short error", r.Diagnostics)
		}
	}
	// Nothing that large is kept as a cache key.
	if n := e.results.len(); n != 0 {
		t.Fatalf("result cache holds %d entries, want none for oversized sources", n)
	}
}

// Diagnostics stay short whatever text the frontmatter puts into them.
func TestLongMessagesClipped(t *testing.T) {
	long := strings.Repeat("m", 60000)
	tests := []struct{ lang, code string }{
		{"lua", `error(string.rep("x", 4e6))`},
		{"lua", `error({ message = string.rep("x", 4e6) })`},
		{"lua", `assert(false, string.rep("x", 4e6))`},
		{"lua", `local s = string.rep("x", 4e6) local t = {} t[s] = 1 x = t[s] .. nil`},
		{"lua", `flemma.opt.model = 1 error(("frontmatter:1: "):rep(50000))`},
		{"json", `{"x": 1e` + strings.Repeat("9", 60000) + `}`},
		{"json", `{"flemma": {"` + long + `": 1}}`},
		{"json", `{"flemma": {"tools": ["` + long + `"]}}`},
		{"json", `{"flemma": {"anthropic": {"` + long + `": 1}}}`},
	}
	for _, tt := range tests {
		r := within(t, "Evaluate", func() *Result {
			return NewEvaluator(quiet).Evaluate(Source{Language: tt.lang, Code: tt.code, StartLine: 1}, testSetup)
		})
		if !r.Blocking() {
			t.Fatalf("Evaluate(%.80q) = %v, want an error", tt.code, r.Diagnostics)
		}
		for _, d := range r.Diagnostics {
			if len(d.Message) > maxMessageBytes {
				t.Fatalf("Evaluate(%.80q): a diagnostic of %d bytes", tt.code, len(d.Message))
			}
		}
	}
}

// Names and paths built from frontmatter strings are bounded, so
// tostring() of a flemma.opt value cannot become huge.
func TestBombNamesAndPaths(t *testing.T) {
	tests := []struct {
		name, code string
		line       int
		want       string
	}{
		{"inert path", `local p = flemma.opt.nope local k = string.rep("k", 1e5)
for i = 1, 300 do p = p[k] end x = tostring(p)`, 2, "unknown config key"},
		{"flemma path", `local p = flemma[string.rep("k", 1e5)] for i = 1, 300 do p = p[string.rep("j", 1e5)] end x = tostring(p)`, 2, "unknown key"},
		{"long tool names", `local s = string.rep("x", 4e6) local t = {} for i = 1, 200 do t[i] = s:sub(i) end
flemma.opt.tools = t x = tostring(flemma.opt.tools)`, 3, "flemma.opt.tools: value larger than 8.0 MiB"},
		{"long tool names appended", `local s = string.rep("x", 4e6)
for i = 1, 200 do flemma.opt.tools:append(s:sub(i)) end x = tostring(flemma.opt.tools)`, 3, "flemma.opt.tools: name longer than 256 bytes"},
		{"long names in a list", `local s = string.rep("x", 2e4) local t = {} for i = 1, 200 do t[i] = s:sub(i) end
flemma.opt.tools = t x = tostring(flemma.opt.tools)`, 3, "flemma.opt.tools: item 1: name longer than 256 bytes"},
		{"long rules", `local s = "bash(" .. string.rep("x", 4e6) local t = {} for i = 1, 200 do t[i] = s:sub(1, -i) end
flemma.opt.tools.auto_approve = t x = tostring(flemma.opt.tools.auto_approve)`, 3, "value larger than 8.0 MiB"},
		{"long rules appended", `local s = "bash(" .. string.rep("x", 4e6)
for i = 1, 200 do flemma.opt.tools.auto_approve:append(s:sub(1, -i)) end x = tostring(flemma.opt.tools.auto_approve)`, 3, "name longer than 256 bytes"},
		{"long model", `flemma.opt.model = string.rep("m", 1e5) x = flemma.opt.model`, 2, "name longer than 256 bytes"},
		{"long provider", `flemma.opt.provider = string.rep("p", 1e5)`, 2, "name longer than 256 bytes"},
		{"long parameter name", `flemma.opt.anthropic[string.rep("k", 1e5)] = 1`, 2, "parameter name longer than 256 bytes"},
		{"many parameters", `for i = 1, 5000 do flemma.opt.openai["k" .. i] = i end`, 2, "too many parameters"},
		// Every parameter is within the bounds, all of them together are not
		// (they go into one request body).
		{"parameters in all", `local s = string.rep("x", 4e6)
for i = 1, 1000 do flemma.opt.anthropic["k" .. i] = s end`, 3, "the provider parameters are too large"},
		{"parameters in all, sections", `local s = string.rep("x", 4e6)
flemma.opt.anthropic.a = s flemma.opt.openai.b = s flemma.opt.vertex.c = s`, 3, "flemma.opt.vertex.c: the provider parameters are too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evalWithin(t, tt.code, generous)
			wantError(t, r, tt.line, tt.want)
			if s, _ := r.Vars["x"].(string); len(s) > 64<<10 {
				t.Fatalf("x is %d bytes long", len(s))
			}
			bytes := 0
			for _, sec := range []map[string]any{r.Opts.Anthropic, r.Opts.OpenAI, r.Opts.Vertex} {
				if len(sec) > maxConvertEntries {
					t.Fatalf("a provider section has %d keys", len(sec))
				}
				for _, v := range sec {
					if s, ok := v.(string); ok {
						bytes += len(s)
					}
				}
			}
			if bytes > DefaultMaxBytes {
				t.Fatalf("the provider sections hold %s", formatSize(bytes))
			}
		})
	}
}

// table.sort runs in Go: it must check the deadline (gopher-lua's compares
// strings a byte at a time without looking at the clock).
func TestBombSort(t *testing.T) {
	// Substrings of one string cost nothing to make; shuffled, so that the
	// sort cannot notice a run.
	code := `local s = string.rep("a", 1e6) local t = {} for i = 1, 3000 do t[i] = s:sub((i * 7919) % 3000 + 1) end table.sort(t)`
	r := evalWithin(t, code, Limits{})
	wantError(t, r, 2, "did not finish within")

	code = `local t = {} for i = 1, 1e5 do t[i] = (i * 7919) % 100003 end table.sort(t)
ok = true for i = 2, #t do if t[i - 1] > t[i] then ok = false end end
n, first = #t, t[1]
local w = { "pear", "apple", "fig", "apple", "banana" } table.sort(w) words = table.concat(w, ",")
table.sort(w, function(a, b) return a > b end) desc = table.concat(w, ",")
local e = {} table.sort(e) local one = { 5 } table.sort(one) single = one[1]`
	r = evalWithin(t, code, generous)
	wantClean(t, code, r)
	wantEqual(t, "sorted", []any{r.Vars["ok"], r.Vars["n"], r.Vars["words"], r.Vars["desc"], r.Vars["single"]},
		[]any{true, 100000, "apple,apple,banana,fig,pear", "pear,fig,banana,apple,apple", 5})
	for _, bad := range []struct{ code, want string }{
		{`table.sort({ 1, "x", 2 })`, "attempt to compare"},
		{`table.sort({ {}, {} })`, "attempt to compare"},
		{`table.sort({ 1, 2 }, 3)`, "function expected"},
		{`table.sort("x")`, "table expected"},
	} {
		r := evalWithin(t, bad.code, Limits{})
		wantError(t, r, 2, bad.want)
	}
}

// error() and assert() copy their message (adding the position): a huge
// message is charged like any other string built at run time, so a loop
// of them stops allocating at the memory bound (pcall catches the error,
// the loop runs on to the deadline without allocating).
func TestBombErrorMessages(t *testing.T) {
	for _, code := range []string{
		`local s = string.rep("x", 8e6 - 100) while true do pcall(function() error(s) end) end`,
		`local s = string.rep("x", 8e6 - 100) while true do pcall(function() assert(false, s) end) end`,
		`local s = string.rep("x", 8e6 - 100) local n = 0 while true do n = n + 1 pcall(function() error(s) end) if n == 100 then error("after") end end`,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := evalWithin(t, code, Limits{Deadline: time.Second})
		runtime.ReadMemStats(&after)
		if !r.Blocking() {
			t.Fatalf("Evaluate(%q) = %v, want an error", code, r.Diagnostics)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<30 {
			t.Fatalf("Evaluate(%q) allocated %s", code, formatSize(int(n)))
		}
	}
}

// Compiling runs before the deadline starts and cannot be interrupted:
// inputs that would make gopher-lua's compiler quadratic are refused.
func TestBombCompile(t *testing.T) {
	fill := func(prefix, unit, suffix string) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len() < MaxCodeBytes-len(suffix)-40; i++ {
			fmt.Fprintf(&b, unit, i)
		}
		b.WriteString(suffix)
		return b.String()
	}
	tests := []struct{ name, code, want string }{
		{"sum chain", "local a = 1 x = a" + strings.Repeat("+a", MaxCodeBytes/2-20), "expression too complex"},
		{"minus chain", "x = " + strings.Repeat("- ", MaxCodeBytes/2-20) + "1", "too many syntax levels"},
		{"number constants", fill("x = {", "%d,", "}"), "too many constants"},
		{"string constants", fill("x = {", "'%x',", "}"), "too many constants"},
		{"field names", fill("x = {", "k%x=1,", "}"), "too many constants"},
		{"globals", fill("", "g%x = 1\n", ""), "too many constants"},
		{"elseif numbers", fill("local a = 1 if a == 0 then ", "elseif a == %d then ", "end"), "too many syntax levels"},
		{"table of numbers", fill("x = {", "%d,", "}"), "too many constants"},
		{"local constants", fill("local a = 1 ", "a = a .. '%x' ", ""), "too many constants"},
		{"do blocks", strings.Repeat("do ", MaxCodeBytes/8) + strings.Repeat("end ", MaxCodeBytes/8), "too many syntax levels"},
		{"while blocks", strings.Repeat("while false do ", 2000) + strings.Repeat("end ", 2000), "too many syntax levels"},
		{"nested functions", strings.Repeat("local function f() ", 2000) + strings.Repeat("end ", 2000), "too many syntax levels"},
		{"many functions", "local t = {" + strings.Repeat("function() end,", 4000) + "}", "too many functions (more than 100)"},
		{"tables", "x = " + strings.Repeat("{", MaxCodeBytes/2-20) + strings.Repeat("}", MaxCodeBytes/2-20), "too many syntax levels"},
		{"calls", "x = " + strings.Repeat("f(", MaxCodeBytes/3-20) + strings.Repeat(")", MaxCodeBytes/3-20), "too many syntax levels"},
		{"concat", "local a = 'x' x = a" + strings.Repeat("..a", MaxCodeBytes/3-20), "too many syntax levels"},
		{"index", "local t = {} x = t" + strings.Repeat("[1]", MaxCodeBytes/3-20), "too many syntax levels"},
		{"product chain", "local a = 1 x = a" + strings.Repeat("*a", MaxCodeBytes/2-20), "expression too complex"},
		// Long left-associative chains without folding compile in linear
		// time: allowed, as in Lua 5.1.
		{"and chain", "local a = true x = a" + strings.Repeat(" and a", MaxCodeBytes/6-20), ""},
		{"or chain", "local a = false x = a" + strings.Repeat(" or a", MaxCodeBytes/5-20), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.code) > MaxCodeBytes {
				t.Fatalf("test code is %d bytes", len(tt.code))
			}
			r := evalWithin(t, tt.code, Limits{})
			if tt.want == "" {
				wantClean(t, tt.code, r)
				return
			}
			wantError(t, r, 0, tt.want)
		})
	}
}

// The compile limits leave room for large honest frontmatters.
func TestCompileLimitsAllowRealisticCode(t *testing.T) {
	var b strings.Builder
	b.WriteString("glossary = {\n")
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "  term_%d = \"definition number %d of the glossary\",\n", i, i)
	}
	b.WriteString("}\nlist = {")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "%d, ", i*3)
	}
	b.WriteString("}\nsum = 0 for _, v in ipairs(list) do sum = sum + v * 2 - 1 end\n")
	b.WriteString("x = 1 + 2 * 3 - 4 / 5 + 6 * 7 - 8 + 9 * 10 - 11 + 12 * 13 - 14 + 15 * 16 - 17 + 18\n")
	b.WriteString("s = 'a' .. 'b' .. 'c' .. 'd' .. 'e' .. 'f' .. 'g' .. 'h' .. 'i' .. 'j' .. 'k' .. 'l'\n")
	b.WriteString("deep = " + strings.Repeat("{", 30) + strings.Repeat("}", 30) + "\n")
	for i := 0; i < maxFunctions-1; i++ {
		fmt.Fprintf(&b, "local function helper%d(x) return x + %d end\n", i, i)
	}
	b.WriteString("local function f(n) if n == 0 then return 0 elseif n == 1 then return 1 elseif n == 2 then return 2 else return f(n - 1) + f(n - 2) end end\nfib = f(15)\n")
	code := b.String()
	r := evalWithin(t, code, generous)
	wantClean(t, code, r)
	if g, _ := r.Vars["glossary"].(map[string]any); len(g) != 600 || r.Vars["fib"] != 987 || r.Vars["sum"] != 748000 {
		t.Fatalf("glossary %d entries, fib %v, sum %v", len(g), r.Vars["fib"], r.Vars["sum"])
	}
}

// "Did you mean" is computed only for a diagnostic that will be shown: a
// JSON frontmatter of a thousand long unknown names (JSON has no deadline)
// costs at most maxDiagnostics suggestions.
func TestBombSuggestions(t *testing.T) {
	var names []string
	for i := 0; len(strings.Join(names, `","`)) < MaxCodeBytes-200; i++ {
		names = append(names, fmt.Sprintf("%060d", i))
	}
	for len(names)%maxListItems != 0 {
		names = names[:len(names)-1]
	}
	var groups []string
	for i := 0; i < len(names); i += maxListItems {
		groups = append(groups, `"$append": ["`+strings.Join(names[i:i+maxListItems], `","`)+`"]`)
	}
	code := `{"flemma": {"tools": {` + strings.Join(groups, ",") + `}}}`
	if len(code) > MaxCodeBytes || len(groups) < 3 {
		t.Fatalf("test frontmatter: %d bytes, %d groups", len(code), len(groups))
	}
	setup := testSetup
	for i := 0; i < 100; i++ {
		setup.KnownTools = append(setup.KnownTools, fmt.Sprintf("%059d", i))
	}
	before := suggestCalls.Load()
	r := within(t, "Evaluate", func() *Result {
		return NewEvaluator(Limits{}).Evaluate(Source{Language: "json", Code: code, StartLine: 1}, setup)
	})
	wantError(t, r, 0, "too many problems")
	if n := suggestCalls.Load() - before; n > maxDiagnostics {
		t.Fatalf("%d suggestions computed for %d diagnostics", n, len(r.Diagnostics))
	}
}
