package frontmatter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Every statement and expression form that can hold a concatenation or a
// computed index goes through the rewriter; the compiled chunk must contain
// no raw OP_CONCAT, and the program must still compute the right values.
func TestRewriterReachesEveryForm(t *testing.T) {
	code := `local s = "a" .. "b"
local t = { "x" .. 1, k = "y" .. 2, ["z" .. 3] = 3, [2 + 1] = "c" .. "d" }
do local d = s .. "!" ; t.d = d end
local i = 0
while i < 2 do i = i + 1; t["w" .. i] = i .. "w" end
repeat i = i - 1 until ("" .. i) == "0"
if ("q" .. 1) == "q1" then t.if1 = "then" .. "" elseif s .. "" == "" then t.if1 = "no" else t.if1 = "else" .. "" end
for n = 1, #("ab" .. "c") do t["n" .. n] = n end
for k, v in pairs({ a = "p" .. "q" }) do t[k .. "_"] = v .. "" end
local function f(x) return "f" .. x, ("g" .. x) end
function t.method(self, x) return "m" .. x end
t.m2 = function(...) return select("#", ...) .. "" end
local a, b = f("1")
t[1], t.two, t["th" .. "ree"] = a .. b, "2" .. "", (function() return "3" .. "" end)()
t.neg = -(#("ab" .. "c")) .. ""
t.notv = not ("" .. "") and "x" .. "" or "y"
t.cmp = ("a" .. "b") < ("a" .. "c")
t.call = t:method("x" .. "y") .. t.m2(1, 2 .. "")
goto done
t.skipped = true
::done::
result = t
return "r" .. "v"`
	c, err := compile(code)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if !concatFree(c.proto) {
		t.Fatalf("compiled chunk still contains OP_CONCAT")
	}
	r := evalLua(t, code)
	wantClean(t, code, r)
	want := map[string]any{
		"1": "f1g1", "w1": "1w", "w2": "2w", "3": "cd", "k": "y2", "z3": 3, "d": "ab!", "if1": "then",
		"n1": 1, "n2": 2, "n3": 3, "a_": "pq", "two": "2", "three": "3", "neg": "-3", "notv": "y",
		"cmp": true, "call": "mxy2",
	}
	got := r.Vars["result"].(map[string]any)
	for k, w := range want {
		if !equalAny(got[k], w) {
			t.Errorf("result[%q] = %#v, want %#v", k, got[k], w)
		}
	}
	if _, ok := got["skipped"]; ok {
		t.Errorf("goto did not skip")
	}
}

func equalAny(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestCompileErrors(t *testing.T) {
	// Too many locals is a compile error.
	var names []string
	for i := 0; i < 300; i++ {
		names = append(names, fmt.Sprintf("a%d", i))
	}
	code := "x = 1\nlocal " + strings.Join(names, ", ") + " = 1"
	wantDiag(t, code, evalLua(t, code), SeverityError, 0, "Lua compile error")
	// A chain of 300 concatenations nests too deeply, as in Lua 5.1.
	code = "x = 1\ny = 'a'" + strings.Repeat(" .. 'a'", 300)
	wantDiag(t, code, evalLua(t, code), SeverityError, 3, "chunk has too many syntax levels")
	if _, err := compile("x = 1"); err != nil {
		t.Fatalf("compile(x = 1) = %v", err)
	}
}

func TestScalarReads(t *testing.T) {
	code := `flemma.opt.tools.autopilot = { enabled = false, max_turns = 3 }
flemma.opt.tools.max_concurrent = 2
flemma.opt.sandbox = true
flemma.opt.thinking = "low"
flemma.opt.temperature = 0.5
flemma.opt.anthropic.effort = "high"
r = { flemma.opt.tools.autopilot.enabled, flemma.opt.tools.autopilot.max_turns, flemma.opt.tools.max_concurrent,
  flemma.opt.sandbox.enabled, flemma.opt.thinking, flemma.opt.parameters.temperature, flemma.opt.anthropic.effort,
  tostring(flemma.opt.sandbox), tostring(flemma), flemma.opt.anthropic.missing == nil, #flemma.opt.sandbox }`
	r := evalLua(t, code)
	wantClean(t, code, r)
	wantEqual(t, "r", r.Vars["r"], []any{false, 3, 2, true, "low", 0.5, "high", "flemma.opt.sandbox", "flemma", true, 0})
}

func TestFuncInputConversion(t *testing.T) {
	f := approveFunc(t, NewEvaluator(quiet), `flemma.opt.tools.auto_approve = function(name, input, ctx)
  local parts = {}
  for _, k in ipairs({ "i", "i64", "u", "f32", "num", "raw", "strs", "smap", "typed", "ptr", "nilptr", "tm" }) do
    local v = input[k]
    if k == "raw" then v = v.a[2] end
    if type(v) == "table" then
      local keys = {}
      for kk, vv in pairs(v) do keys[#keys + 1] = tostring(kk) .. "=" .. tostring(vv) end
      table.sort(keys)
      v = "{" .. table.concat(keys, ",") .. "}"
    end
    parts[#parts + 1] = k .. ":" .. tostring(v)
  end
  if table.concat(parts, " ") == ctx.want then return true end
  error(table.concat(parts, " "))
end`)
	n := 7
	input := map[string]any{
		"i": 1, "i64": int64(2), "u": uint64(3), "f32": float32(0.5), "num": json.Number("4"),
		"raw": json.RawMessage(`{"a":[1,2]}`), "strs": []string{"a", "b"}, "smap": map[string]string{"k": "v"},
		"typed": []int{5, 6}, "ptr": &n, "nilptr": (*int)(nil), "tm": map[int]bool{1: true},
	}
	want := "i:1 i64:2 u:3 f32:0.5 num:4 raw:2 strs:{1=a,2=b} smap:{k=v} typed:{1=5,2=6} ptr:7 nilptr:nil tm:{1=true}"
	got, err := f.Call(context.Background(), "x", input, map[string]any{"want": want})
	if err != nil || got != DecisionApprove {
		t.Fatalf("Call = %q, %v", got, err)
	}
	if (&Evaluator{limits: Limits{}.withDefaults()}).Limits().Deadline != DefaultDeadline {
		t.Fatalf("Limits() does not report the defaults")
	}
}
