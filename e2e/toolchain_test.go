package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestToolChainFromReadme: the README's chain, registered exactly as
// written, with the policy the README gives for it. The model's call of it
// runs both steps on one <C-]>, and the result lists them with their
// status and duration. :Flemma tools shows the chain with its steps.
func TestToolChainFromReadme(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false }, tools = { auto_approve = { "$default", "count_lines", "bash(wc -l *)" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `register_chain({`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		buf := mustOpen(t, s, "c.chat", toolChat("count_lines", "ch1", `{"path": "notes.txt"}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "ch1")
		if isErr {
			t.Fatalf("error result:\n%s", body)
		}
		for _, want := range []string{"chain count_lines: all 2 steps ok", "  one\n  two\n  three", "3 notes.txt", `"name":"count","tool":"bash","status":"ok"`} {
			if !strings.Contains(body, want) {
				t.Errorf("result lacks %q:\n%s", want, body)
			}
		}
		if m := regexp.MustCompile(`step \d \w+(?: \(bash\))?: ok \d+ ms`).FindAllString(body, -1); len(m) != 2 {
			t.Errorf("step lines %q in:\n%s", m, body)
		}
		waitIdle(t, s)
		out := hostText(t, s, "flemma.tools", buf, "count_lines")
		if !strings.Contains(out, "count_lines  [chain, lua]") || !strings.Contains(out, "1 read (read)") || !strings.Contains(out, "2 count (bash)") {
			t.Errorf(":Flemma tools:\n%s", out)
		}
	})
}

// TestToolChainStepAsks: without the bash rule, the chain call waits for
// the user (its count step would ask), its preview shows the steps; the
// user's <M-CR> approves and runs it.
func TestToolChainStepAsks(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false }, tools = { auto_approve = { "$default", "count_lines" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `register_chain({`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "c.chat", toolChat("count_lines", "ch1", `{"path": "notes.txt"}`))
		press(t, s, "<C-]>")
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") }); err != nil {
			t.Fatalf("never pending: %v", err)
		}
		waitIdle(t, s)
		var preview string
		for _, m := range marks(t, s) {
			if m.Kind == "preview" {
				preview = m.Text
			}
		}
		if !strings.Contains(preview, "count_lines: chain of 2: 1 read: notes.txt") {
			t.Errorf("preview %q", preview)
		}
		cursorTo(t, s, "status=pending")
		press(t, s, "<M-CR>")
		body, isErr := waitResult(t, s, "ch1")
		if isErr || !strings.Contains(body, "step 2 count (bash): ok") || !strings.Contains(body, "2 notes.txt") {
			t.Fatalf("result (error %v):\n%s", isErr, body)
		}
	})
}

// TestToolChainFromModule: a module in tools.modules that exports chains
// registers them; the second step's input comes from the first's output
// (the calculator is approved by the policy, so it runs).
func TestToolChainFromModule(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default", "calculator", "calc_twice" }, modules = { "flemma_test.chains" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `vim.opt.runtimepath:append(...)`, nvimtest.RepoRoot()+"/testdata"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "c.chat", toolChat("calc_twice", "ch1", `{"expr": "2^10"}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "ch1")
		if isErr || !strings.Contains(body, "step 2 again (calculator): ok") || !strings.Contains(body, "\n  2048") {
			t.Fatalf("result (error %v):\n%s", isErr, body)
		}
	})
}

// TestToolChainCancel: <C-c> while a chain's step runs stops the chain:
// the running step is aborted, the later steps are skipped (and never
// run), and the buffer is editable again.
func TestToolChainCancel(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false }, tools = { auto_approve = { "slow", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `require("flemma.tools").register_chain({
			name = "slow",
			steps = {
				{ name = "wait", tool = "bash", input = { command = "echo on > started.txt; sleep 30", label = "waiting" } },
				{ name = "after", tool = "bash", input = { command = "echo ran > after.txt", label = "after" } },
			},
		})`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "slow.chat", toolChat("slow", "ch1", `{}`))
		press(t, s, "<C-]>")
		waitRunning(t, s, 1)
		// The chain call runs from the press; its first step from a little
		// later (it is decided first): cancel once that step's command runs.
		waitFile(t, filepath.Join(s.Dir, "started.txt"), "on\n")
		press(t, s, "<C-c>")
		body, isErr := waitResult(t, s, "ch1")
		if !isErr {
			t.Errorf("a cancelled chain is not an error:\n%s", body)
		}
		for _, want := range []string{"chain slow: stopped at step 1 'wait' (bash)", "User aborted tool execution.", "step 2 after (bash): skipped"} {
			if !strings.Contains(body, want) {
				t.Errorf("result lacks %q:\n%s", want, body)
			}
		}
		waitUnlocked(t, s)
		if _, err := os.Stat(filepath.Join(s.Dir, "after.txt")); err == nil {
			t.Error("the step after the cancelled one ran")
		}
	})
}
