package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// cursorTo puts the cursor on the first line matching a Vim pattern.
func cursorTo(t *testing.T, s *nvimtest.Session, pattern string) {
	t.Helper()
	var line int
	if err := s.Lua(&line, `vim.fn.cursor(1, 1); return vim.fn.search(..., "cW")`, pattern); err != nil || line == 0 {
		t.Fatalf("no line matches %q (%v)", pattern, err)
	}
}

// TestApproveRejectCommands: :Flemma tool:approve and :Flemma tool:reject
// <message> act on the block under the cursor, as typed by a user.
func TestApproveRejectCommands(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "ex.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))
		cursorTo(t, s, "`c1`")
		press(t, s, ":Flemma tool:approve<CR>")
		cursorTo(t, s, "Tool Result:\\*\\* `c2`")
		press(t, s, ":Flemma tool:reject not this one, thanks<CR>")
		waitText(t, s, withResults(chat, placeholder("c1", "approved", ""), placeholder("c2", "rejected", "not this one, thanks")))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "4", false), result("c2", "not this one, thanks", true)))
	})
}

// TestToolCancelCommand: :Flemma tool:cancel stops the running call under
// the cursor only.
func TestToolCancelCommand(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		chat := "@You:\ngo\n\n@Assistant:\nTwo waits.\n\n**Tool Use:** `slow_async` (`w1`)\n\n```json\n{\"ms\": 20000}\n```\n\n**Tool Use:** `slow_async` (`w2`)\n\n```json\n{\"ms\": -1}\n```\n"
		mustOpen(t, s, "tc.chat", chat)
		press(t, s, "<C-]>")
		if _, err := s.Wait(3*time.Second, func(x string) bool { return strings.Contains(x, "`w2`\n\n```flemma:tool status=approved") }); err != nil {
			t.Fatalf("not executing: %s", text(t, s))
		}
		waitRunning(t, s, 2) // w1 runs until cancelled, w2 until released
		cursorTo(t, s, "Tool Result:\\*\\* `w1`")
		press(t, s, ":Flemma tool:cancel<CR>")
		waitText(t, s, withResults(chat, result("w1", "User aborted tool execution.", true), placeholder("w2", "approved", "")))
		releaseSlow(t, s)
		waitText(t, s, withResults(chat, result("w1", "User aborted tool execution.", true), result("w2", "released", false)))
	})
}

// TestCursorAfterResultNext: with "next" the cursor goes to the end of the
// @You: message holding the result, where the user types on.
func TestCursorAfterResultNext(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "calculator" }, cursor_after_result = "next" } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2")
		mustOpen(t, s, "next.chat", chat)
		press(t, s, "gg")
		press(t, s, "<C-]>")
		want := withResults(chat, result("c1", "4", false))
		waitText(t, s, want)
		if got, last := cursorLine(t, s), strings.Count(want, "\n")+1; got != last {
			t.Errorf("cursor on line %d, want %d (end of the @You: message)", got, last)
		}
	})
}

// TestCommandCompletionAndUnknown: :Flemma completes its subcommands and
// names the known ones for an unknown one.
func TestCommandCompletionAndUnknown(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		var got []string
		if err := s.Lua(&got, `return vim.fn.getcompletion("Flemma tool:", "cmdline")`); err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(got, " ")
		for _, want := range []string{"tool:approve", "tool:reject", "tool:result", "tool:cancel-all", "tool:list"} {
			if !strings.Contains(joined, want) {
				t.Errorf("completion of 'Flemma tool:' = %v, lacks %s", got, want)
			}
		}
		err := s.Nv.Command("Flemma bogus")
		msgs := s.Messages()
		if err != nil {
			msgs += err.Error()
		}
		if !strings.Contains(msgs, "unknown subcommand 'bogus'") || !strings.Contains(msgs, "tool:approve") {
			t.Errorf("unknown subcommand message = %q", msgs)
		}
	})
}

// TestLogCommand: :Flemma log opens the host's log in a window; q closes it.
func TestLogCommand(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "log.chat", "@You:\nhi\n")
		if err := s.Lua(nil, `require("flemma.host").ensure(require("flemma").config())`); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":Flemma log<CR>")
		var name string
		if err := s.Lua(&name, `return vim.api.nvim_buf_get_name(0)`); err != nil {
			t.Fatal(err)
		}
		if name != s.LogFile || !strings.Contains(text(t, s), "flemma-host 0.1.0 starting") {
			t.Errorf(":Flemma log opened %q:\n%s", name, text(t, s))
		}
		press(t, s, "q")
		if n := windows(t, s); n != 1 {
			t.Errorf("%d windows after q in the log", n)
		}
	})
}

// TestJSONFrontmatter: {"flemma": {...}} sets options without code.
func TestJSONFrontmatter(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		fm := "```json\n{\"flemma\": {\"tools\": {\"auto_approve\": [\"calculator\"]}}, \"project\": \"demo\"}\n```\n"
		chat := fm + calcCalls("2^3")
		mustOpen(t, s, "j.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "8", false)))
	})
}

// TestFileCallsAskFirstLuaTools: calls to Lua tools that were in a file
// from someone else ask, whether the tool declares side_effects or not; in
// the user's own (trusted) file the policy decides.
func TestFileCallsAskFirstLuaTools(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "deploy", "safe" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			local tools = require("flemma.tools")
			local schema = { type = "object", properties = {} }
			tools.register("deploy", { description = "ships it", input_schema = schema, capabilities = { "side_effects" },
				execute = function() return { success = true, output = "shipped" } end })
			tools.register("safe", { description = "harmless", input_schema = schema,
				execute = function() return { success = true, output = "ok" } end })`); err != nil {
			t.Fatal(err)
		}
		chat := "@You:\ngo\n\n@Assistant:\nBoth.\n\n**Tool Use:** `deploy` (`d1`)\n\n```json\n{}\n```\n\n**Tool Use:** `safe` (`s1`)\n\n```json\n{}\n```\n"
		// In a file from someone else every call asks, side effects or not
		// (issue 11, class 6) …
		mustOpenForeign(t, s, "se.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("d1", "pending", ""), placeholder("s1", "pending", "")))
		// … and in the user's own file the policy decides.
		mustOpen(t, s, "own.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("d1", "shipped", false), result("s1", "ok", false)))
	})
}
