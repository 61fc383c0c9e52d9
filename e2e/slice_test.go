package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

const calcChat = "@You:\nWhat is 2^10?\n\n@Assistant:\nLet me calculate that.\n\n**Tool Use:** `calculator` (`toolu_01`)\n\n```json\n{\"expression\": \"2^10\", \"label\": null}\n```\n"

// TestCalculatorSlice walks the first vertical slice: <C-]> categorizes the
// call as pending, the user approves by editing the fence, <C-]> runs it.
func TestCalculatorSlice(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "calc.chat", calcChat)
		var ft string
		if err := s.Lua(&ft, "return vim.bo.filetype"); err != nil || ft != "chat" {
			t.Fatalf("filetype = %q, %v; want chat", ft, err)
		}

		press(t, s, "<C-]>")
		pending := strings.TrimSuffix(calcChat, "\n") + "\n\n@You:\n\n**Tool Result:** `toolu_01`\n\n```flemma:tool status=pending\n```"
		waitText(t, s, pending)
		if got := cursorLine(t, s); got != 17 {
			t.Errorf("cursor on line %d after categorize, want 17 (the pending call's status word)", got)
		}

		press(t, s, ":%s/status=pending/status=approved/<CR>")
		press(t, s, "<C-]>")
		done := strings.TrimSuffix(calcChat, "\n") + "\n\n@You:\n\n**Tool Result:** `toolu_01`\n\n```\n1024\n```"
		waitText(t, s, done)

		var modifiable bool
		if err := s.Lua(&modifiable, "return vim.bo.modifiable"); err != nil || !modifiable {
			t.Errorf("buffer modifiable = %v, %v after the run; want true", modifiable, err)
		}
	})
}

// TestInsertModeKey: <C-]> works from insert mode too.
func TestInsertModeKey(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "calc.chat", calcChat)
		press(t, s, "i<C-]>")
		if _, err := s.Wait(5*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") }); err != nil {
			t.Fatalf("no placeholder after insert-mode <C-]>:\n%s", text(t, s))
		}
	})
}

// TestMalformedBuffer: bad blocks get diagnostics with line numbers, nothing
// is lost, and the well-formed call still works.
func TestMalformedBuffer(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		content := readTestdata(t, "malformed.chat")
		mustOpen(t, s, "bad.chat", content)
		press(t, s, "<C-]>")
		got, err := s.Wait(5*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") })
		if err != nil {
			t.Fatalf("the valid call was not categorized:\n%s\nmessages: %s", got, s.Messages())
		}
		// Every original line is still there, in order.
		rest := got
		for _, line := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
			i := strings.Index(rest, line)
			if i < 0 {
				t.Fatalf("line %q of the original was lost:\n%s", line, got)
			}
			rest = rest[i+len(line):]
		}
		var diags []struct {
			Lnum    int    `msgpack:"lnum"`
			Message string `msgpack:"message"`
		}
		if err := s.Lua(&diags, `return vim.diagnostic.get(0)`); err != nil {
			t.Fatal(err)
		}
		// Each on the line of its block in the text as it is now, after the
		// press inserted a placeholder above the orphan result (issue 12: it
		// landed on the placeholder's line).
		lineOf := func(prefix string) int {
			for i, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, prefix) {
					return i + 1
				}
			}
			t.Fatalf("no line starts with %q", prefix)
			return 0
		}
		want := map[string]int{ // message fragment -> 1-based line
			"Failed to parse tool input":   10,
			"requires a fenced code block": 14,
			"unknown tool use":             lineOf("**Tool Result:** `toolu_ghost`"),
		}
		for frag, line := range want {
			ok := false
			for _, d := range diags {
				if strings.Contains(d.Message, frag) && d.Lnum+1 == line {
					ok = true
				}
			}
			if !ok {
				t.Errorf("no diagnostic %q on line %d; got %+v", frag, line, diags)
			}
		}
	})
}

// TestHealth: :checkhealth flemma reports the host version, which is the
// plugin's (lua/flemma/VERSION, read by the Lua side, embedded by the host).
func TestHealth(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		if err := s.Nv.Command("checkhealth flemma"); err != nil {
			t.Fatal(err)
		}
		out := text(t, s)
		for _, want := range []string{"host version " + flemma.Version + " (matches the plugin)", "host binary:", "tools registered"} {
			if !strings.Contains(out, want) {
				t.Errorf("checkhealth output lacks %q:\n%s", want, out)
			}
		}
		// The active provider (anthropic) has no credential here: a
		// warning, not information.
		warned := false
		for _, l := range strings.Split(out, "\n") {
			warned = warned || strings.Contains(l, "anthropic credentials not set") && strings.Contains(l, "WARNING")
		}
		if !warned {
			t.Errorf("checkhealth does not warn about the active provider's missing credential:\n%s", out)
		}
	})
}

// TestHostCrashRestart: a host that dies is reported once with the log path
// and restarted on the next use.
func TestHostCrashRestart(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "calc.chat", calcChat)
		var pid int
		if err := s.Lua(&pid, `require("flemma.host").ensure(require("flemma").config()); local chan = select(1, require("flemma.host").running()) and vim.fn.jobpid(require("flemma.host")._chan()) ; return chan`); err != nil {
			t.Fatal(err)
		}
		// Killed from outside, as a crash happens (a kill run by Neovim's
		// system() would deliver the exit inside that API call, whose
		// error messages Neovim 0.7 keeps out of :messages).
		// What flemma tells the user goes through vim.notify (where
		// nvim-notify and the like take it): observed there. (:messages of
		// an embedded Neovim 0.7.2 without a UI drops this one error, shown
		// on a real terminal — checked by hand in tmux.)
		if err := s.Lua(nil, `_G.flemma_test_notes = {}; local orig = vim.notify; vim.notify = function(m, l, o) table.insert(_G.flemma_test_notes, m); return orig(m, l, o) end`); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var running bool
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := s.Lua(&running, `return (require("flemma.host").running())`); err != nil {
				t.Fatal(err)
			}
			if !running || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if running {
			t.Fatal("host still marked running after kill -9")
		}
		// The notice is scheduled: wait for it (a state, not a time).
		notes := func() string {
			var n []string
			_ = s.Lua(&n, `return _G.flemma_test_notes`)
			return strings.Join(n, "\n")
		}
		if _, err := s.Wait(10*time.Second, func(string) bool {
			n := notes()
			return strings.Contains(n, "host exited unexpectedly") && strings.Contains(n, s.LogFile)
		}); err != nil {
			t.Errorf("no crash notice naming the log file; notices:\n%s", notes())
		}
		press(t, s, "<C-]>")
		if _, err := s.Wait(5*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") }); err != nil {
			t.Fatalf("the restarted host did not categorize:\n%s", text(t, s))
		}
	})
}
