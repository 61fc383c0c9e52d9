package cycle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/preview"
	"github.com/flemma-dev/flemma/tools"
)

// inspect is the chain the tests register: it reads a file, counts its
// lines with bash (input from the chain's input alone), and echoes the
// count with bash again (input from the count step's output).
func inspect() tools.ChainSpec {
	return tools.ChainSpec{
		Name:        "inspect",
		Description: "Read a file and count its lines.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}},
		Steps: []tools.ChainStep{
			{Name: "read", Tool: "read", Input: map[string]any{"path": "{{ input.path }}", "label": "reading"}},
			{Name: "count", Tool: "bash", Input: map[string]any{"command": "wc -l < {{ input.path }}", "label": "counting"}},
			{Name: "say", Tool: "bash", Input: map[string]any{"command": "echo 'lines: {{ steps.count.output }}'", "label": "saying"}},
		},
	}
}

var inspectCall = call{"toolu_ch", "inspect", map[string]any{"path": "notes.txt"}}

// chainEnv is an engine with the inspect chain registered (from Go) and a
// notes.txt of three lines, whose model calls inspect once and then ends.
func chainEnv(t *testing.T, spec tools.ChainSpec, c call, toolsCfg map[string]any) *testEnv {
	t.Helper()
	env := newEnv(t, with(noSandbox(), script(t,
		turn{text: "Inspecting.", calls: []call{c}},
		turn{text: "Done."},
	), map[string]any{"tools": toolsCfg}))
	if err := env.h.registerChain(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.dir, "notes.txt"), []byte("a\nb\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\ninspect notes.txt\n")
	return env
}

func (env *testEnv) toolList() string {
	env.t.Helper()
	r, err := env.h.onToolList(1)
	if err != nil {
		env.t.Fatal(err)
	}
	return r.Text
}

func mustContain(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

var stepLine = regexp.MustCompile(`step (\d) (\w+)(?: \((\w+)\))?: (\w+) (\d+) ms`)

// Everything the policy approves: the chain runs all its steps, the
// result lists each with its status and duration, and the conversation
// goes on.
func TestChainAutoApprovedRunsAllSteps(t *testing.T) {
	env := chainEnv(t, inspect(), inspectCall, map[string]any{"auto_approve": []any{"$default", "inspect", "bash"}})
	env.press(1)
	env.ed.waitText(t, 1, "Done.")
	env.ed.waitIdle(t, env.h, 1)
	text := env.ed.String(1)
	mustContain(t, text, "chain inspect: all 3 steps ok", "step 1 read: ok", "step 2 count (bash): ok", "\n  3\n", "step 3 say (bash): ok", "lines: 3",
		`chain: {"status":"ok","duration_ms":`, `"steps":[{"name":"read","tool":"read","status":"ok","duration_ms":`)
	if !regexp.MustCompile(`chain inspect: all 3 steps ok in \d+ ms`).MatchString(text) {
		t.Errorf("no chain duration in the header:\n%s", text)
	}
	if m := stepLine.FindAllStringSubmatch(text, -1); len(m) != 3 {
		t.Fatalf("want 3 step lines with a duration, got %q", m)
	}
	if strings.Contains(text, "(error)") {
		t.Fatalf("an error result:\n%s", text)
	}
}

// A step from the chain's input alone that the policy asks about makes the
// chain call pending, even though the chain's own name is auto-approved;
// the preview shows the steps. The user approves it: the step they saw
// runs, the step whose input comes from an earlier output does not, even
// so (needs_approval), and the result says which step stopped the chain.
func TestChainStepThatAsksMakesItPendingAndOutputsNeverRideOnTheApproval(t *testing.T) {
	env := chainEnv(t, inspect(), inspectCall, map[string]any{"auto_approve": []any{"$default", "inspect"}, "autopilot": map[string]any{"enabled": false}})
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	phase, _ := env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if phase != "categorize" {
		t.Fatalf("phase %q", phase)
	}
	mustContain(t, env.ed.String(1), "```flemma:tool status=pending")
	mustContain(t, env.toolList(), "inspect (toolu_ch): pending", "require_approval by step 2 'count' (bash): default")
	var mark string
	env.ed.mu.Lock()
	for _, m := range env.ed.bufs[1].marks {
		if m.Kind == "preview" {
			mark = m.Text
		}
	}
	env.ed.mu.Unlock()
	mustContain(t, mark, "inspect: chain of 3: 1 read: notes.txt  # reading → 2 count=bash: $ wc -l < not…")
	// A wider window shows the reference to the earlier step's output.
	ct, _ := env.h.chainOf("inspect")
	mustContain(t, ct.chainPreview(inspectCall.input, 200, preview.Options{}),
		"1 read: notes.txt  # reading → 2 count=bash: $ wc -l < notes.txt  # counting → 3 say=bash: $ echo 'lines: {{ steps.count.output }}'  # saying")

	env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	env.press(1)
	env.ed.waitText(t, 1, "**Tool Result:** `toolu_ch` (error)")
	env.ed.waitIdle(t, env.h, 1)
	text := env.ed.String(1)
	mustContain(t, text, "chain inspect: stopped at step 3 'say' (bash): needs_approval", "step 1 read: ok", "step 2 count (bash): ok", "\n  3\n",
		"step 3 say (bash): needs_approval", "its input comes from an earlier step's output", "Call bash on its own")
	if strings.Contains(text, "lines: 3") {
		t.Fatalf("the step fed by an output ran:\n%s", text)
	}
}

// Without the user's approval, a step the policy asks about never runs,
// even when its input is the chain's own: a chain approved by the policy
// whose later step asks at run time stops there.
func TestChainStepThatAsksAtRunTimeStops(t *testing.T) {
	spec := inspect()
	spec.Steps = spec.Steps[:1]
	spec.Steps = append(spec.Steps, tools.ChainStep{Name: "show", Tool: "bash", Input: map[string]any{"command": "cat <<'EOF'\n{{ steps.read.output }}\nEOF", "label": "showing"}})
	env := chainEnv(t, spec, inspectCall, map[string]any{"auto_approve": []any{"$default", "inspect"}})
	env.press(1)
	env.ed.waitText(t, 1, "Done.")
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "(error)", "chain inspect: stopped at step 2 'show' (bash): needs_approval", "nobody approved it")
}

// A step the policy denies denies the chain call at categorize time (the
// reason names the step); one it denies at run time stops the chain there.
func TestChainDenied(t *testing.T) {
	deny := map[string]any{"auto_approve": []any{"$default", "$nobash", "inspect"}, "presets": map[string]any{"$nobash": map[string]any{"deny": []any{"bash"}}}}
	t.Run("categorize", func(t *testing.T) {
		env := chainEnv(t, inspect(), inspectCall, deny)
		env.press(1)
		env.ed.waitText(t, 1, "Done.")
		env.ed.waitIdle(t, env.h, 1)
		mustContain(t, env.ed.String(1), "The tool was denied by a policy.")
		mustContain(t, env.toolList(), "deny by urn:flemma:approval:config (step 2 'count' (bash): $nobash)")
	})
	t.Run("run", func(t *testing.T) {
		spec := inspect()
		spec.Steps = append(spec.Steps[:1], tools.ChainStep{Name: "show", Tool: "bash", Input: map[string]any{"command": "echo {{ steps.read.output }}", "label": "showing"}})
		env := chainEnv(t, spec, inspectCall, deny)
		env.press(1)
		env.ed.waitText(t, 1, "Done.")
		env.ed.waitIdle(t, env.h, 1)
		mustContain(t, env.ed.String(1), "chain inspect: stopped at step 2 'show' (bash): denied", "was denied by a policy", "step 1 read: ok")
	})
}

// A failing step stops the chain: the result is an error naming it, and
// the later steps are skipped. An unknown tool fails its step the same way.
func TestChainFailureStopsAndNamesTheStep(t *testing.T) {
	auto := map[string]any{"auto_approve": []any{"$default", "inspect", "bash"}}
	t.Run("failing step", func(t *testing.T) {
		env := chainEnv(t, inspect(), call{"toolu_ch", "inspect", map[string]any{"path": "missing.txt"}}, auto)
		env.press(1)
		env.ed.waitText(t, 1, "Done.")
		env.ed.waitIdle(t, env.h, 1)
		mustContain(t, env.ed.String(1), "**Tool Result:** `toolu_ch` (error)", "chain inspect: stopped at step 1 'read' (read): error", "step 2 count (bash): skipped", "step 3 say (bash): skipped")
	})
	t.Run("unknown tool", func(t *testing.T) {
		spec := inspect()
		spec.Steps[1].Tool = "bsh"
		env := chainEnv(t, spec, inspectCall, map[string]any{"auto_approve": []any{"$default", "inspect", "bsh", "bash"}})
		env.press(1)
		env.ed.waitText(t, 1, "Done.")
		env.ed.waitIdle(t, env.h, 1)
		// Known to be missing at the call: the chain fails before its
		// first step runs (issue 28 item 10), without asking.
		mustContain(t, env.ed.String(1), "Tool chain 'inspect' cannot run: step 2 'count': Unknown tool: bsh. Did you mean bash?", "Nothing was run.")
	})
}

// RegisterChain validates what it registers, and :Flemma tools shows a
// chain with its steps.
func TestRegisterChain(t *testing.T) {
	env := newEnv(t, noSandbox())
	bad := inspect()
	bad.Steps[2].Input = map[string]any{"command": "{{ steps.cont.output }}"}
	err := env.h.registerChain(bad)
	if err == nil || err.Error() != "chain 'inspect': step 3 'say': reference {{ steps.cont.output }}: no earlier step named 'cont'" {
		t.Fatalf("err = %v", err)
	}
	if err := env.h.registerChain(inspect()); err != nil {
		t.Fatal(err)
	}
	if err := env.h.registerChain(inspect()); err != nil {
		t.Fatalf("re-registering: %v", err)
	}
	if err := env.h.registerChain(tools.ChainSpec{Name: "outer", Steps: []tools.ChainStep{{Name: "a", Tool: "inspect"}}}); err == nil || !strings.Contains(err.Error(), "chains cannot be nested") {
		t.Fatalf("nested: %v", err)
	}
	if err := env.h.registerChain(tools.ChainSpec{Name: "read", Steps: []tools.ChainStep{{Name: "a", Tool: "ls"}}}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("over a built-in: %v", err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	r, err := env.h.onTools(1, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r.Text, "inspect  [chain, go]", "chain steps (each also decided on its own): 1 read (read) {\"label\":\"reading\",\"path\":\"{{ input.path }}\"} → 2 count (bash)")
	// From Lua: the same validation, reported back.
	dr, err := env.h.onDefineChains(`[{"name":"lua_chain","steps":[{"name":"a","tool":"ls","input":[]}]},{"name":"broken","steps":[]}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(dr.Errors) != 1 || dr.Errors[0] != "register_chain: chain 'broken': a chain needs at least one step" {
		t.Fatalf("errors %q", dr.Errors)
	}
	if _, ok := env.h.chainOf("lua_chain"); !ok {
		t.Fatal("lua_chain not registered")
	}
}

// The model's input is substituted into a step's command, and the bash
// rules judge the command that results: a path that smuggles a second
// command does not match "bash(wc -l *)", so the chain call asks instead
// of running it.
func TestChainInjectedInputIsJudgedAsTheStepsCall(t *testing.T) {
	spec := tools.ChainSpec{Name: "count_lines", Steps: []tools.ChainStep{
		{Name: "count", Tool: "bash", Input: map[string]any{"command": "wc -l {{ input.path }}", "label": "counting"}},
	}}
	auto := map[string]any{"auto_approve": []any{"$default", "count_lines", "bash(wc -l *)"}, "autopilot": map[string]any{"enabled": false}}
	t.Run("plain path runs", func(t *testing.T) {
		env := chainEnv(t, spec, call{"toolu_ch", "count_lines", map[string]any{"path": "notes.txt"}}, auto)
		env.press(1)
		env.ed.waitIdle(t, env.h, 1)
		env.press(1)
		env.ed.waitText(t, 1, "chain count_lines: all 1 steps ok")
	})
	t.Run("injected command asks", func(t *testing.T) {
		evil := call{"toolu_ch", "count_lines", map[string]any{"path": "notes.txt; echo run >> runs"}}
		env := chainEnv(t, spec, evil, auto)
		env.press(1)
		env.ed.waitIdle(t, env.h, 1)
		env.press(1)
		env.ed.waitIdle(t, env.h, 1)
		mustContain(t, env.ed.String(1), "```flemma:tool status=pending")
		mustContain(t, env.toolList(), "count_lines (toolu_ch): pending", "step 1 'count' (bash)")
		if env.runs() != 0 {
			t.Fatal("the injected command ran")
		}
	})
}

// <C-c> stops a running chain: the running step is cancelled, the later
// ones never start, and the result says so.
func TestChainCancel(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	spec := tools.ChainSpec{Name: "slow", Steps: []tools.ChainStep{
		{Name: "wait", Tool: "bash", Input: map[string]any{"command": "echo > " + started + "; sleep 30", "label": "waiting"}},
		{Name: "after", Tool: "bash", Input: map[string]any{"command": "echo run >> runs", "label": "counting"}},
	}}
	env := chainEnv(t, spec, call{"toolu_ch", "slow", map[string]any{}}, map[string]any{"auto_approve": []any{"slow", "bash"}, "autopilot": map[string]any{"enabled": false}})
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	env.press(1)
	env.ed.wait(t, 1, "the first step runs", func(*fakeBuf) bool {
		_, err := os.Stat(started)
		return err == nil
	})
	if _, err := env.h.Cancel(1); err != nil {
		t.Fatal(err)
	}
	env.ed.waitText(t, 1, "**Tool Result:** `toolu_ch` (error)")
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "chain slow: stopped at step 1 'wait' (bash): error", "User aborted tool execution.", "step 2 after (bash): skipped")
	if env.runs() != 0 {
		t.Fatal("the step after the cancelled one ran")
	}
}

// A cancel that lands while a step is being decided (before its tool
// runs) aborts the step: the chain does not report the decision the
// cancel caused ("asks, by canceled") as the policy's.
func TestChainCancelWhileDeciding(t *testing.T) {
	env := chainEnv(t, inspect(), inspectCall, map[string]any{"auto_approve": []any{"inspect", "bash"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &stepRunner{h: env.h, chain: "inspect", call: tools.Call{ID: "toolu_ch", Tool: "inspect", Bufnr: 1, Cwd: env.dir},
		eff: env.h.session(1).effective(nil), budget: frontmatter.NewBudget(0)}
	got := r.run(ctx, 1, inspect().Steps[1], json.RawMessage(`{"command": "echo run >> runs", "label": "counting"}`), false)
	if got.Status != tools.StepError || got.Output != tools.Aborted {
		t.Errorf("step = %s %q, want error %q", got.Status, got.Output, tools.Aborted)
	}
	if env.runs() != 0 {
		t.Error("the cancelled step ran")
	}
}

// The buffer's frontmatter narrows the policy for the steps too: the
// config approves bash, this file does not, so the chain call asks.
func TestChainFrontmatterNarrowsSteps(t *testing.T) {
	env := chainEnv(t, inspect(), inspectCall, map[string]any{"auto_approve": []any{"$default", "inspect", "bash"}, "autopilot": map[string]any{"enabled": false}})
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "```lua\nflemma.opt.tools.auto_approve = { \"$default\", \"inspect\" }\n```\n@You:\ninspect notes.txt\n")
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "```flemma:tool status=pending")
	mustContain(t, env.toolList(), "inspect (toolu_ch): pending", "step 2 'count' (bash)")
}

// A chain that wrote a file and then failed keeps what it changed:
// :Flemma tool:undo on the chain call takes the write back.
func TestChainFailedAfterWriteIsUndoable(t *testing.T) {
	spec := tools.ChainSpec{Name: "scribble", Steps: []tools.ChainStep{
		{Name: "write", Tool: "write", Input: map[string]any{"path": "{{ input.path }}", "content": "new\n", "label": "writing"}},
		{Name: "read", Tool: "read", Input: map[string]any{"path": "missing.txt", "label": "reading"}},
	}}
	env := chainEnv(t, spec, call{"toolu_ch", "scribble", map[string]any{"path": "out.txt"}}, map[string]any{"auto_approve": []any{"$default", "scribble"}, "autopilot": map[string]any{"enabled": false}})
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	env.press(1)
	env.ed.waitText(t, 1, "**Tool Result:** `toolu_ch` (error)")
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "step 1 write: ok", "stopped at step 2 'read' (read): error")
	out := filepath.Join(env.dir, "out.txt")
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	res, err := env.h.onUndo(1, resultLine(env, 1, "toolu_ch"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("out.txt still there after undo (%s)", res.Message)
	}
}

// A chain's own input "path" is not a path it writes: only its steps'
// writes meet the protected-path gate (reading .envrc is no write).
func TestChainPathInputIsNotAWrite(t *testing.T) {
	env := chainEnv(t, inspect(), call{"toolu_ch", "inspect", map[string]any{"path": ".envrc"}}, map[string]any{"auto_approve": []any{"$default", "inspect", "bash"}})
	if err := os.WriteFile(filepath.Join(env.dir, ".envrc"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.press(1)
	env.ed.waitText(t, 1, "Done.")
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "chain inspect: all 3 steps ok")
}
