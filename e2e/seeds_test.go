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

// The seeds' remaining promises (issue 28), each as a user meets it.

// TestUnknownToolAnswersAtOnce (item 5): the model calls a tool that does
// not exist; its call gets an error result with a did-you-mean at once,
// nothing asks for approval, and autopilot sends it on.
func TestUnknownToolAnswersAtOnce(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("Reading.", [3]string{"toolu_x", "raed", `{"path": "a.txt"}`}),
		sse("I misspelt it."),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "u.chat", "@You:\nRead a.txt.\n")
		press(t, s, "<C-]>")
		waitHas(t, s, "I misspelt it.")
		waitIdle(t, s)
		body, isErr := waitResult(t, s, "toolu_x")
		if !isErr || !strings.Contains(body, "Unknown tool: raed. Did you mean read?") {
			t.Errorf("result (error %v): %q", isErr, body)
		}
		if x := text(t, s); strings.Contains(x, "status=pending") {
			t.Errorf("the unknown call asked:\n%s", x)
		}
	})
}

// TestChainResultAndMissingStep (item 10): a chain's result carries the
// chain's status and duration; a chain with a step whose tool does not
// exist fails at once, before its first step runs.
func TestChainResultAndMissingStep(t *testing.T) {
	setup := `{ sandbox = { enabled = false }, tools = { auto_approve = { "$default", "show", "broken" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		err := s.Lua(nil, `
			local tools = require("flemma.tools")
			tools.register_chain({ name = "show", steps = {
				{ name = "read", tool = "read", input = { path = "{{ input.path }}", label = "reading" } },
			} })
			tools.register_chain({ name = "broken", steps = {
				{ name = "touch", tool = "write", input = { path = "touched.txt", content = "x" } },
				{ name = "count", tool = "wordcount", input = { text = "{{ steps.touch.output }}" } },
			} })`)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "c.chat", toolChat("show", "ch1", `{"path": "notes.txt"}`)+"\n"+
			"**Tool Use:** `broken` (`ch2`)\n\n```json\n{}\n```\n")
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "ch1")
		if isErr || !regexp.MustCompile(`chain show: all 1 steps ok in \d+ ms`).MatchString(body) || !strings.Contains(body, `chain: {"status":"ok","duration_ms":`) {
			t.Errorf("result (error %v):\n%s", isErr, body)
		}
		body, isErr = waitResult(t, s, "ch2")
		if !isErr || !strings.Contains(body, "Tool chain 'broken' cannot run: step 2 'count': Unknown tool: wordcount.") {
			t.Errorf("result (error %v):\n%s", isErr, body)
		}
		waitIdle(t, s)
		if _, err := os.Stat(filepath.Join(s.Dir, "touched.txt")); err == nil {
			t.Errorf("the broken chain's first step ran")
		}
	})
}

// waitHas waits until the current buffer holds want.
func waitHas(t *testing.T, s *nvimtest.Session, want string) {
	t.Helper()
	if got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, want) }); err != nil {
		t.Fatalf("buffer never held %q:\n%s\nmessages: %s", want, got, s.Messages())
	}
}
