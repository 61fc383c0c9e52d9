package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every attempt is refused with an error diagnostic, and Evaluate returns
// promptly (the bound is generous: this is about "returns", not speed).
func TestEscapeAttempts(t *testing.T) {
	tests := []struct {
		name, code, want string
	}{
		{"os.execute", `os.execute("touch /tmp/pwned")`, "Undefined variable 'os'"},
		{"io.open", `local f = io.open("/etc/passwd")`, "Undefined variable 'io'"},
		{"require", `local os = require("os")`, "Undefined variable 'require'"},
		{"load", `load("return 1")()`, "Undefined variable 'load'"},
		{"loadstring", `loadstring("return 1")()`, "Undefined variable 'loadstring'"},
		{"dofile", `dofile("/etc/passwd")`, "Undefined variable 'dofile'"},
		{"loadfile", `loadfile("/etc/passwd")`, "Undefined variable 'loadfile'"},
		{"module", `module("x")`, "Undefined variable 'module'"},
		{"string.dump", `x = string.dump(print)`, "attempt to call a non-function object"},
		{"debug.getinfo", `x = debug.getinfo(1)`, "Undefined variable 'debug'"},
		{"package.loaded", `x = package.loaded`, "Undefined variable 'package'"},
		{"getmetatable string", `getmetatable("").__index.rep = nil`, "Undefined variable 'getmetatable'"},
		{"string __index", `local mt = ("").__index; x = mt.os`, "attempt to index a non-table object(nil)"},
		{"setmetatable _G", `setmetatable(_G, {})`, "Undefined variable 'setmetatable'"},
		{"rawget _G", `x = rawget(_G, "os")`, "Undefined variable 'rawget'"},
		{"rawset", `rawset({}, 1, 1)`, "Undefined variable 'rawset'"},
		{"getfenv", `x = getfenv(0)`, "Undefined variable 'getfenv'"},
		{"setfenv", `setfenv(1, {})`, "Undefined variable 'setfenv'"},
		{"newproxy", `x = newproxy(true)`, "Undefined variable 'newproxy'"},
		{"collectgarbage", `collectgarbage("stop")`, "Undefined variable 'collectgarbage'"},
		{"coroutine.wrap", `coroutine.wrap(function() end)()`, "Undefined variable 'coroutine'"},
		{"xpcall", `xpcall(print, print)`, "Undefined variable 'xpcall'"},
		{"math.randomseed", `math.randomseed(1)`, "attempt to call a non-function object"},
		{"flemma metatable", `x = getmetatable(flemma.opt)`, "Undefined variable 'getmetatable'"},
		{"replace flemma.opt", `flemma.opt = nil`, "flemma.opt: expected a table, got nil"},
		{"infinite loop", `while true do end`, "frontmatter did not finish within 100ms"},
		{"infinite tail call", `local function f() return f() end f()`, "did not finish within"},
		{"pcall swallowing the deadline", `pcall(function() while true do end end) x = 1`, "did not finish within"},
		{"pcall in a loop", `while true do pcall(error, "x") end`, "did not finish within"},
		{"catastrophic pattern", `x = string.find(string.rep("a", 30), string.rep("a*", 30) .. "b")`, "did not finish within"},
		{"lazy pattern", `x = string.rep("a", 1e5):find(".-.-.-.-.-.-.-.-x")`, "did not finish within"},
		{"gsub pattern", `x = string.rep("a", 1e5):gsub(".-.-.-.-.-x", "")`, "did not finish within"},
		{"gmatch pattern", `for m in string.rep("a", 1e5):gmatch(".-.-.-.-.-x") do end`, "did not finish within"},
		{"match pattern", `x = string.rep("a", 1e5):match(".-.-.-.-.-x")`, "did not finish within"},
		{"loop in gsub callback", `x = ("abc"):gsub(".", function() while true do end end)`, "did not finish within"},
		{"loop in sort comparator", `local t = {3, 2, 1} table.sort(t, function() while true do end end)`, "did not finish within"},
		{"string.rep bomb", `x = string.rep("x", 1e9)`, "memory limit exceeded: string.rep would need"},
		{"method rep bomb", `x = ("x"):rep(1e9)`, "memory limit exceeded"},
		{"nested rep bomb", `x = string.rep(string.rep("x", 1e6), 1e6)`, "memory limit exceeded"},
		{"huge rep count", `x = string.rep("xy", 2^62)`, "memory limit exceeded"},
		{"doubling concat", `local s = "x" for i = 1, 64 do s = s .. s end`, "memory limit exceeded: a concatenation"},
		{"concat many", `local t = {} for i = 1, 100 do t[i] = string.rep("x", 1e6) .. "" end`, "memory limit exceeded"},
		{"table.concat bomb", `local t = {} local s = string.rep("x", 1e6) for i = 1, 20 do t[i] = s end x = table.concat(t)`, "memory limit exceeded: table.concat"},
		{"gsub bomb", `x = string.rep("x", 1e5):gsub("", string.rep("y", 1e3))`, "memory limit exceeded: string.gsub"},
		{"format width", `x = string.format("%099999999d", 1)`, "invalid format (width or precision too long)"},
		{"format bomb", `local s = string.rep("x", 1e6) x = string.format(string.rep("%s", 20), s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s)`, "memory limit exceeded: string.format"},
		{"format precision", `x = string.format("%.999999999f", 1)`, "invalid format (width or precision too long)"},
		{"format flags", `x = string.format("%-+ #0-d", 1)`, "invalid format (repeated flags)"},
		// %q writes up to 4 bytes per byte: it stops at the limit, not after the whole string
		{"format %q bomb", `x = string.format("%q", string.rep("\0", 3e6))`, "memory limit exceeded: string.format would need 8.0 MiB"},
		{"format %q of binary, repeated", `local s = string.rep("\0\r\"\255", 5e5) for i = 1, 100 do local y = string.format("%q", s) end`, "memory limit exceeded: the frontmatter built more than"},
		{"format many %s", `x = string.format(string.rep("%s", 1e5), "x")`, "bad argument #3 to format (no value)"},
		{"format in a loop", `local s = string.rep("x", 4e6) for i = 1, 100 do local y = string.format("%s%s", s, "") end`, "memory limit exceeded: the frontmatter built more than"},
		{"upper in a loop", `local s = string.rep("x", 4e6) while true do s:upper() end`, "memory limit exceeded|did not finish within"},
		{"sparse table", `local t = {} t[6e7] = 1`, "memory limit exceeded: table index 60000000 would need 915.5 MiB"},
		{"sparse table computed", `local t, k = {}, 2^25 t[k] = 1`, "memory limit exceeded"},
		{"sparse constructor", `local t = {[6e7] = 1}`, "memory limit exceeded"},
		{"sparse constructor computed", `local k = 3e7 local t = {[k] = 1}`, "memory limit exceeded"},
		{"sparse insert", `local t = {} table.insert(t, 6e7, 1)`, "memory limit exceeded: table.insert"},
		{"sparse multi-assign", `local t, u = {}, {} t[1], u[6e7] = 1, 2`, "memory limit exceeded"},
		{"sparse tables in a loop", `local keep = {} for i = 1, 1e6 do keep[i] = {[5000] = true} end`, "memory limit exceeded|did not finish within"},
		{"table-filling loop", `local t = {} local i = 0 while true do i = i + 1 t[i] = i end`, "did not finish within"},
		{"table-filling loop of tables", `local t = {} for i = 1, 1e9 do t[#t + 1] = { i } end`, "did not finish within"},
		{"string-keyed fill", `local t = {} for i = 1, 1e9 do t["k" .. i] = i end`, ""},
		{"deep recursion", `local function f(n) return 1 + f(n + 1) end f(1)`, "stack overflow"},
		{"deep recursion through pcall", `local function f() pcall(f) end f() error("after")`, ""},
		{"mutual recursion", `local g local function f() return 1 + g() end g = function() return 1 + f() end f()`, "stack overflow"},
		{"recursion through gsub", `local function f(s) return (s:gsub(".", f)) end f("ab")`, "stack overflow"},
		{"recursion through tostring", `local t = flemma.opt x = tostring(t) local function f() return f() + 1 end f()`, "stack overflow"},
		{"unpack bomb", `x = { unpack({}, 1, 1e8) }`, "too many results to unpack"},
		{"byte bomb", `x = { string.rep("x", 1e6):byte(1, -1) }`, "string slice too long"},
		{"select bomb", `local t = {} for i = 1, 5000 do t[i] = i end x = select("#", unpack(t))`, "too many results to unpack"},
		{"char varargs", `local t = {} for i = 1, 1e5 do t[i] = 65 end x = string.char(unpack(t, 1, 4096))`, ""},
		{"huge constructor", `x = {` + strings.Repeat("1,", 20000) + `}`, ""},
		{"deep nesting", `x = ` + strings.Repeat("{", 300) + strings.Repeat("}", 300), ""},
		{"malformed pattern", `x = ("x"):find("[a")`, "malformed pattern (missing ']')"},
		{"pattern too complex", `x = string.rep("a", 300):find(string.rep("a?", 300))`, "pattern too complex"},
		{"error with a table", `error({})`, "error called with a table value"},
		{"error with nil", `error()`, "Lua error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var limits Limits
			if !strings.Contains(tt.want, "did not finish") {
				// The other bounds must fire by themselves, not the
				// deadline of a busy (or race-instrumented) test machine.
				limits.Deadline = time.Minute
			}
			r := evalPromptly(t, tt.code, limits)
			if !r.Blocking() {
				if tt.want == "" && (tt.name == "char varargs" || tt.name == "huge constructor" || tt.name == "deep nesting") {
					return // harmless: allowed
				}
				t.Fatalf("Evaluate(%q) = %v, want a blocking error", tt.code, r.Diagnostics)
			}
			if tt.want == "" {
				return
			}
			for _, want := range strings.Split(tt.want, "|") {
				for _, d := range r.Diagnostics {
					if strings.Contains(d.Message, want) {
						return
					}
				}
			}
			t.Fatalf("Evaluate(%q) = %v, want an error containing %q", tt.code, r.Diagnostics, tt.want)
		})
	}
}

// evalPromptly evaluates code under the watchdog (see within): it asserts
// that Evaluate returns, not how fast — the deadline and the other bounds
// are what the tests check, on the outcome.
func evalPromptly(t *testing.T, code string, limits Limits) *Result {
	t.Helper()
	return evalWithin(t, code, limits)
}

// A frontmatter that replaces library functions affects only its own VM.
func TestNoPersistenceAcrossEvaluations(t *testing.T) {
	e := NewEvaluator(quiet)
	evil := `string.rep = function() return "pwned" end
string.format = nil
table.concat = nil
flemma.opt.tools.auto_approve = function() return ("x"):rep(2) end`
	r := e.Evaluate(Source{Language: "lua", Code: evil, StartLine: 1}, testSetup)
	wantClean(t, evil, r)
	if d, err := r.Opts.AutoApproveFunc.Call(context.Background(), "bash", nil, nil); err == nil {
		t.Fatalf("Call = %q, want an error (returned a string other than deny)", d)
	}
	code := `a = ("x"):rep(2); b = string.format("%d", 3); c = table.concat({"p", "q"})`
	r = e.Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	wantClean(t, code, r)
	wantEqual(t, "Vars", r.Vars, map[string]any{"a": "xx", "b": "3", "c": "pq"})
}

func approveFunc(t *testing.T, e *Evaluator, code string) *Func {
	t.Helper()
	r := e.Evaluate(Source{Language: "lua", Code: code, StartLine: 1}, testSetup)
	wantClean(t, code, r)
	if r.Opts.AutoApproveFunc == nil {
		t.Fatalf("Evaluate(%q): no AutoApproveFunc", code)
	}
	return r.Opts.AutoApproveFunc
}

func TestFuncDecisions(t *testing.T) {
	code := `flemma.opt.tools.auto_approve = function(tool_name, input, ctx)
  if tool_name == "calculator" then return true end
  if tool_name == "bash" and input.command:match("rm %-rf") then return "deny" end
  if tool_name == "bash" then return false end
  if tool_name == "read" and ctx and ctx.cwd == "/work" then return true end
  if tool_name == "weird" then return 42 end
  if tool_name == "str" then return "yes" end
  if tool_name == "boom" then error("boom") end
  if tool_name == "nested" then return input.a.b[2] == "y" end
  return nil
end`
	f := approveFunc(t, NewEvaluator(quiet), code)
	ctx := context.Background()
	tests := []struct {
		tool    string
		input   map[string]any
		callCtx map[string]any
		want    string
		err     string
	}{
		{"calculator", nil, nil, DecisionApprove, ""},
		{"bash", map[string]any{"command": "rm -rf /"}, nil, DecisionDeny, ""},
		{"bash", map[string]any{"command": "ls"}, nil, DecisionRequireApproval, ""},
		{"read", nil, map[string]any{"cwd": "/work"}, DecisionApprove, ""},
		{"read", nil, nil, DecisionPass, ""},
		{"write", map[string]any{"path": "x"}, nil, DecisionPass, ""},
		{"weird", nil, nil, "", "returned a number"},
		{"str", nil, nil, "", `returned the string "yes"`},
		{"boom", nil, nil, "", "line 9: boom"},
		{"nested", map[string]any{"a": map[string]any{"b": []any{"x", "y", nil, 1.5, true}}}, nil, DecisionApprove, ""},
	}
	for _, tt := range tests {
		got, err := f.Call(ctx, tt.tool, tt.input, tt.callCtx)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "auto_approve function (line 2)") {
				t.Errorf("Call(%s) = %q, %v; want an error containing %q", tt.tool, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Call(%s, %v) = %q, %v; want %q", tt.tool, tt.input, got, err, tt.want)
		}
	}
	// The function still works after errors.
	if got, err := f.Call(ctx, "calculator", nil, nil); err != nil || got != DecisionApprove {
		t.Fatalf("Call after errors = %q, %v", got, err)
	}
}

func TestFuncDeadline(t *testing.T) {
	e := NewEvaluator(Limits{CallDeadline: 20 * time.Millisecond})
	f := approveFunc(t, e, `flemma.opt.tools.auto_approve = function(name)
  if name == "loop" then while true do end end
  if name == "pattern" then return string.rep("a", 1e5):find(".-.-.-.-.-.-x") ~= nil end
  return true
end`)
	for _, name := range []string{"loop", "pattern"} {
		err := within(t, "Call("+name+")", func() error {
			_, err := f.Call(context.Background(), name, nil, nil)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "did not finish within 20ms") {
			t.Fatalf("Call(%s) error = %v, want the call deadline", name, err)
		}
	}
	if got, err := f.Call(context.Background(), "ok", nil, nil); err != nil || got != DecisionApprove {
		t.Fatalf("Call after a deadline = %q, %v; want approve", got, err)
	}
	// The caller's context is honoured too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Call(ctx, "ok", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call(cancelled) error = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := f.Call(ctx, "loop", nil, nil); err == nil {
		t.Fatalf("Call(loop) with a 5ms context succeeded")
	}
}

func TestFuncCannotChangeOptions(t *testing.T) {
	f := approveFunc(t, NewEvaluator(quiet), `flemma.opt.tools.auto_approve = function(name)
  if name == "write" then flemma.opt.tools.auto_approve = { "bash" } end
  if name == "append" then flemma.opt.tools:append("read") end
  if name == "read" then return flemma.opt.tools[1] == "bash" end
end`)
	for _, name := range []string{"write", "append"} {
		if _, err := f.Call(context.Background(), name, nil, nil); err == nil || !strings.Contains(err.Error(), "only be changed while the frontmatter runs") {
			t.Fatalf("Call(%s) error = %v, want flemma.opt to be frozen", name, err)
		}
	}
	if got, err := f.Call(context.Background(), "read", nil, nil); err != nil || got != DecisionApprove {
		t.Fatalf("Call(read) = %q, %v; reads should still work", got, err)
	}
}

func TestFuncState(t *testing.T) {
	// State kept between calls is allowed but bounded.
	e := NewEvaluator(Limits{MaxBytes: 64 << 10, CallDeadline: time.Minute})
	f := approveFunc(t, e, `local seen = {}
local n = 0
flemma.opt.tools.auto_approve = function(name)
  n = n + 1
  for i = 1, 1000 do seen[#seen + 1] = name .. i end
  return n < 1000
end`)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = f.Call(context.Background(), "bash", nil, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Fatalf("growing state: error = %v, want the memory limit", err)
	}
	if _, err := f.Call(context.Background(), "bash", nil, nil); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("Call after the memory limit = %v, want disabled", err)
	}
}

func TestFuncConcurrent(t *testing.T) {
	// A deadline no busy machine reaches: this is about concurrency.
	f := approveFunc(t, NewEvaluator(Limits{CallDeadline: time.Minute}), `local calls = 0
flemma.opt.tools.auto_approve = function(name, input)
  calls = calls + 1
  local s = name .. ":" .. input.n
  if input.n % 3 == 0 then return "deny" end
  return #s > 0
end`)
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				n := g*50 + i
				got, err := f.Call(context.Background(), "bash", map[string]any{"n": n}, map[string]any{"g": g})
				want := DecisionApprove
				if n%3 == 0 {
					want = DecisionDeny
				}
				if err != nil || got != want {
					errs <- fmt.Errorf("Call(n=%d) = %q, %v; want %q", n, got, err, want)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDeadlinesAreSeparate(t *testing.T) {
	// The evaluation runs under Deadline, a stored function under
	// CallDeadline: a chunk that runs far longer than CallDeadline is fine.
	e := NewEvaluator(Limits{Deadline: 5 * time.Second, CallDeadline: time.Millisecond})
	code := `local t0 = 0 for i = 1, 3e5 do t0 = t0 + i end
flemma.opt.tools.auto_approve = function() while true do end end`
	f := approveFunc(t, e, code)
	if _, err := f.Call(context.Background(), "bash", nil, nil); err == nil || !strings.Contains(err.Error(), "did not finish within 1ms") {
		t.Fatalf("Call error = %v, want the 1ms call deadline", err)
	}
	r := NewEvaluator(Limits{Deadline: 30 * time.Millisecond}).Evaluate(Source{Language: "lua", Code: "while true do end", StartLine: 1}, testSetup)
	wantDiag(t, "loop", r, SeverityError, 2, "did not finish within 30ms")
}

func TestNilFunc(t *testing.T) {
	var f *Func
	if _, err := f.Call(context.Background(), "x", nil, nil); err == nil {
		t.Fatalf("nil Func.Call succeeded")
	}
}

// Evaluations share the compiled chunk, the schema and the library table;
// run them concurrently for the race detector.
func TestConcurrentEvaluations(t *testing.T) {
	e := NewEvaluator(quiet)
	src := Source{Language: "lua", Code: `flemma.opt.tools:remove("bash")
x = ("%s-%d"):format("n", 1) .. string.rep("y", 2)
flemma.opt.tools.auto_approve = function(name) return name == "read" end`, StartLine: 1}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			setup := testSetup
			setup.Tools = append([]string{fmt.Sprintf("tool%d", g)}, testSetup.Tools...)
			setup.KnownTools = append([]string{fmt.Sprintf("tool%d", g)}, testSetup.KnownTools...)
			for i := 0; i < 5; i++ {
				r := e.evaluate(src, setup)
				if len(r.Diagnostics) > 0 || r.Vars["x"] != "n-1yy" || r.Opts.Tools[0] != setup.Tools[0] {
					t.Errorf("goroutine %d: %v %v %v", g, r.Diagnostics, r.Vars, r.Opts.Tools)
					return
				}
				if d, err := r.Opts.AutoApproveFunc.Call(context.Background(), "read", nil, nil); err != nil || d != DecisionApprove {
					t.Errorf("goroutine %d: Call = %q, %v", g, d, err)
				}
			}
		}(g)
	}
	wg.Wait()
}
