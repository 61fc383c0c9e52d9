package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestParseOnlyMode: calls are shown and never run; the user supplies
// results with :Flemma tool:result / tool:error.
func TestParseOnlyMode(t *testing.T) {
	eachNvim(t, `{ tools = { mode = "parse_only", auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "po.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))
		setLines(t, s, withResults(chat, placeholder("c1", "approved", ""), placeholder("c2", "pending", "")))
		press(t, s, "<C-]>")
		waitIdle(t, s)
		waitMessage(t, s, `tools.mode = "parse_only"`)
		if msgs := s.Messages(); !strings.Contains(msgs, "c1") {
			t.Errorf("no parse_only notice naming c1; messages:\n%s", msgs)
		}
		press(t, s, ":Flemma tool:result c1 four, by hand<CR>")
		press(t, s, ":Flemma tool:error c2 could not compute<CR>")
		waitText(t, s, withResults(chat, result("c1", "four, by hand", false), result("c2", "could not compute", true)))
	})
}

// TestDisabledMode: no call runs; each gets a clear error result.
func TestDisabledMode(t *testing.T) {
	eachNvim(t, `{ tools = { mode = "disabled", auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2")
		mustOpen(t, s, "dis.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", `Tools are disabled (tools.mode = "disabled"): the call was not run.`, true)))
	})
}

// TestToolSelection: a buffer that selects its tools refuses the others.
func TestToolSelection(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		fm := "```lua\nflemma.opt.tools = { \"echo_ctx\" }\n```\n"
		chat := calcCalls("2+2")
		mustOpen(t, s, "sel.chat", fm+chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(fm+chat, result("c1", "Tool 'calculator' is not enabled in this buffer (see flemma.opt.tools). Available tools: echo_ctx.", true)))
	})
}

// TestAbortedResponse: calls of an interrupted response are not run.
func TestAbortedResponse(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2") + "<!-- flemma:aborted: Response interrupted by the user. -->\n"
		mustOpen(t, s, "ab.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "Response interrupted by the user.", true)))
	})
}

// TestHostDeathUnlocks: if the host dies while a tool runs, the buffer
// becomes modifiable again.
func TestHostDeathUnlocks(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "d.chat", toolChat("slow_async", "t1", `{"ms": 20000}`))
		press(t, s, "<C-]>")
		var modifiable bool
		if err := s.Lua(&modifiable, "return vim.bo.modifiable"); err != nil || modifiable {
			t.Fatalf("buffer modifiable while running = %v, %v", modifiable, err)
		}
		if err := s.Lua(nil, `vim.fn.system({"kill", "-9", tostring(vim.fn.jobpid(require("flemma.host")._chan()))})`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(5*time.Second, func(string) bool {
			_ = s.Lua(&modifiable, "return vim.bo.modifiable")
			return modifiable
		}); err != nil {
			t.Error("buffer still locked after the host died")
		}
	})
}
