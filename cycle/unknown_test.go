package cycle

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
)

// A call to a tool that does not exist gets its error result at once, with
// a did-you-mean, and autopilot goes on: no approval is asked for a call
// that cannot run (issue 28 item 5).
func TestUnknownToolFailsAtOnce(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t,
		turn{text: "Reading.", calls: []call{{"toolu_x", "raed", map[string]any{"path": "a.txt"}}}},
		turn{text: "Sorry, I misspelt it."},
	)))
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nread a.txt\n")
	env.press(1)
	env.ed.waitText(t, 1, "Sorry, I misspelt it.")
	env.ed.waitIdle(t, env.h, 1)
	text := env.ed.String(1)
	for _, want := range []string{"**Tool Result:** `toolu_x` (error)", "Unknown tool: raed. Did you mean read?", "Available tools: bash, calculator"} {
		if !strings.Contains(text, want) {
			t.Errorf("buffer lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "status=pending") {
		t.Errorf("the unknown call asked for approval:\n%s", text)
	}
}

// A tool the buffer does not enable, a tool chain calling an unknown tool,
// and a known tool in a file with autopilot off: the first two get their
// error result in the categorize step, the third waits for approval; the
// chain runs nothing (issue 28 items 5 and 10).
func TestDisabledToolAndBrokenChainFailAtOnce(t *testing.T) {
	env := newEnv(t, noSandbox())
	spec := tools.ChainSpec{Name: "count", Steps: []tools.ChainStep{
		{Name: "read", Tool: "read", Input: map[string]any{"path": "{{ input.path }}"}},
		{Name: "wc", Tool: "wordcount", Input: map[string]any{"text": "{{ steps.read.output }}"}},
	}}
	if err := env.h.registerChain(spec); err != nil {
		t.Fatal(err)
	}
	chat := "```lua\nflemma.opt.tools = { \"read\", \"count\", \"bash\" }\n```\n@You:\nGo.\n\n@Assistant:\n" +
		useBlock("toolu_c", "calculator", `{"expression": "1+1"}`) + "\n" +
		useBlock("toolu_n", "count", `{"path": "a.txt"}`) + "\n" +
		useBlock("toolu_b", "bash", `{"command": "true", "label": null, "timeout": null}`)
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, chat)
	env.ed.trust(1)
	phase, _ := env.press(1)
	if phase != "categorize" {
		t.Fatalf("phase %q, want categorize (bash waits):\n%s", phase, env.ed.String(1))
	}
	text := env.ed.String(1)
	for _, want := range []string{
		"**Tool Result:** `toolu_c` (error)", "Tool 'calculator' is not enabled in this buffer (see flemma.opt.tools).",
		"**Tool Result:** `toolu_n` (error)", "Tool chain 'count' cannot run: step 2 'wc': Unknown tool: wordcount.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("buffer lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "status=pending") != 1 {
		t.Errorf("want only bash pending:\n%s", text)
	}
}

// A chain whose step's tool disappeared after the call was categorized
// (a Lua tool re-registered away) fails at the start of its run: no
// earlier step runs (issue 28 item 10).
func TestChainRunRefusesAStepWhoseToolIsGone(t *testing.T) {
	env := chainEnv(t, inspect(), inspectCall, map[string]any{"auto_approve": []any{"read"}})
	env.press(1)
	env.ed.waitText(t, 1, "status=pending")
	env.ed.waitIdle(t, env.h, 1)
	env.h.Registry.Remove("bash")
	line := 0
	for i, l := range env.ed.text(1) {
		if strings.Contains(l, "status=pending") {
			line = i + 1
		}
	}
	if _, err := env.h.onExecuteAt(1, line); err != nil {
		t.Fatal(err)
	}
	env.ed.waitText(t, 1, "**Tool Result:** `toolu_ch` (error)")
	env.ed.waitIdle(t, env.h, 1)
	mustContain(t, env.ed.String(1), "chain inspect: stopped at step 2 'count' (bash): error", "step 2 'count': unknown tool 'bash'", "step 1 read: skipped", "step 3 say (bash): skipped")
}
