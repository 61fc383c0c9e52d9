package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

type extmark struct {
	Row  int
	Text string
	Kind string
}

// marks returns flemma's extmarks of the current buffer.
func marks(t *testing.T, s *nvimtest.Session) []extmark {
	t.Helper()
	var raw []struct {
		Row  int    `msgpack:"row"`
		Text string `msgpack:"text"`
		Kind string `msgpack:"kind"`
	}
	err := s.Lua(&raw, `
		local ns = require("flemma.buf").namespaces().marks
		local out = {}
		for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
			local d = m[4]
			if d.virt_lines then
				for _, vl in ipairs(d.virt_lines) do
					table.insert(out, { row = m[2], text = vl[1][1], kind = "preview" })
				end
			elseif d.virt_text then
				table.insert(out, { row = m[2], text = d.virt_text[1][1], kind = "status" })
			end
		end
		return out`)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]extmark, len(raw))
	for i, r := range raw {
		out[i] = extmark{r.Row, r.Text, r.Kind}
	}
	return out
}

func TestPreviews(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			require("flemma.tools").register("search_kb", {
				description = "Search",
				input_schema = { type = "object", properties = { query = { type = "string" } } },
				format_preview = function(input, max_length) return '"' .. input.query .. '" (max ' .. max_length .. ')' end,
				execute = function(input) return { success = true, output = "found" } end,
			})`); err != nil {
			t.Fatal(err)
		}
		chat := calcCalls("2^10") + "\n**Tool Use:** `search_kb` (`k1`)\n\n```json\n{\"query\": \"go modules\"}\n```\n"
		mustOpen(t, s, "p.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("k1", "pending", "")))
		got := marks(t, s)
		if len(got) != 2 {
			t.Fatalf("want one preview per pending placeholder, got %+v", got)
		}
		lines := strings.Split(text(t, s), "\n")
		for _, m := range got {
			if m.Kind != "preview" || !strings.HasPrefix(lines[m.Row], "```flemma:tool status=pending") {
				t.Errorf("preview %+v is not on a pending placeholder's fence (line %q)", m, lines[m.Row])
			}
		}
		if got[0].Text != "calculator: 2^10" {
			t.Errorf("calculator preview = %q", got[0].Text)
		}
		// 100 columns, minus "search_kb: " (11) = 89 for the custom formatter.
		if got[1].Text != `search_kb: "go modules" (max 89)` {
			t.Errorf("custom preview = %q", got[1].Text)
		}

		// Resizing re-cuts the line to the new width.
		if err := s.Lua(nil, `vim.o.columns = 20`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(3*time.Second, func(string) bool {
			m := marks(t, s)
			return len(m) == 2 && m[1].Text == `search_kb: "go modu…`
		}); err != nil {
			t.Errorf("after resize to 20 columns: %+v", marks(t, s))
		}
		if err := s.Lua(nil, `vim.o.columns = 100`); err != nil {
			t.Fatal(err)
		}

		// Typing into a block removes its preview.
		if err := s.Lua(nil, `local l = vim.fn.search("status=pending"); vim.api.nvim_buf_set_lines(0, l, l, false, { "typed by hand" })`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(3*time.Second, func(string) bool { return len(marks(t, s)) == 1 }); err != nil {
			t.Errorf("after typing into c1's block: %+v", marks(t, s))
		}

		// After approval and execution no preview remains.
		setLines(t, s, withResults(chat, placeholder("c1", "approved", ""), placeholder("k1", "approved", "")))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "1024", false), result("k1", "found", false)))
		if m := marks(t, s); len(m) != 0 {
			t.Errorf("marks left after execution: %+v", m)
		}
	})
}

// TestRunningIndicator: a running tool shows a spinner mark on its header,
// cleared when it finishes.
func TestRunningIndicator(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "r.chat", toolChat("slow_async", "t1", `{"ms": 800}`))
		press(t, s, "<C-]>")
		if _, err := s.Wait(2*time.Second, func(string) bool {
			m := marks(t, s)
			return len(m) == 1 && m[0].Kind == "status" && strings.Contains(m[0].Text, "running")
		}); err != nil {
			t.Errorf("no running indicator: %+v", marks(t, s))
		}
		waitResult(t, s, "t1")
		if m := marks(t, s); len(m) != 0 {
			t.Errorf("marks left after the run: %+v", m)
		}
	})
}
