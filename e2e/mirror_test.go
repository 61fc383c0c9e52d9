package e2e

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestMirrorFollowsEdits: the host's copy of the buffer follows edits in the
// middle, undo, and :e! reloads — it never acts on stale text.
func TestMirrorFollowsEdits(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "m.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))

		// Edit one line in the middle (c1's input) and approve c1 by changing
		// one line: the host must run the edited input.
		if err := s.Lua(nil, `
			local l = vim.fn.search('"2+2"') - 1
			vim.api.nvim_buf_set_lines(0, l, l + 1, false, { '{"expression": "5+5"}' })
			vim.fn.cursor(1, 1); local p = vim.fn.search("status=pending", "cW") - 1
			vim.api.nvim_buf_set_lines(0, p, p + 1, false, { "`+"```"+`flemma:tool status=approved" })`); err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(chat, `"2+2"`, `"5+5"`, 1)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(edited, result("c1", "10", false), placeholder("c2", "pending", "")))
		waitUnlocked(t, s)
		waitIdle(t, s) // the step after the jobs (autopilot's look) is done: the undo below is the last change

		// Undo the execution phase: the approved placeholder is back, but
		// the call already ran: a press does not run it again silently, it
		// asks (issue 12) …
		press(t, s, "u")
		waitText(t, s, withResults(edited, placeholder("c1", "approved", ""), placeholder("c2", "pending", "")))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(edited, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))
		// The notice follows the edit (a message after the write).
		waitMessage(t, s, "c1 (line 21): it already ran in this session")
		// … and runs it when the user approves it again.
		if err := s.Lua(nil, `
			vim.fn.cursor(1, 1); local p = vim.fn.search("status=pending", "cW") - 1
			vim.api.nvim_buf_set_lines(0, p, p + 1, false, { "`+"```"+`flemma:tool status=approved" })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		waitText(t, s, withResults(edited, result("c1", "10", false), placeholder("c2", "pending", "")))

		// Reload the file from disk (the original, without any result).
		press(t, s, ":e!<CR>")
		waitText(t, s, strings.TrimSuffix(chat, "\n"))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", "")))
	})
}
