package e2e

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestDiagnosticsClearedWhenTheProblemIsGone: a press on a text without
// problems clears the diagnostics an earlier press set (flemma.buf skips
// vim.diagnostic.set only when there is nothing to set and nothing to
// clear, issue 23).
func TestDiagnosticsClearedWhenTheProblemIsGone(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "diag/c.chat", readTestdata(t, "malformed.chat"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "toolu_good", buffer.StatusPending)
		const count = `return #vim.diagnostic.get(0, { namespace = require("flemma.buf").namespaces().diagnostics })`
		var n int
		if err := s.Lua(&n, count); err != nil || n == 0 {
			t.Fatalf("no diagnostics on the malformed chat (%d, %v)", n, err)
		}
		waitIdle(t, s)
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., "\n", { plain = true }))`, strings.TrimSuffix(calcCalls("1+1"), "\n")); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		waitIdle(t, s) // the press's step, its write included, is done
		if err := s.Lua(&n, count); err != nil || n != 0 {
			t.Fatalf("%d diagnostics left after a press on a text without problems (%v):\n%s", n, err, text(t, s))
		}
	})
}
