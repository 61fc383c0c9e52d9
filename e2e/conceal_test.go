package e2e

import (
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestConcealFencesOnly (issue 27 item 8): chat.conceal_fences hides the
// backticks of fences and nothing else: not **, not inline backticks, not
// the fence's flemma:tool.
func TestConcealFencesOnly(t *testing.T) {
	eachNvim(t, `{ chat = { conceal_fences = true } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := "@You:\nSay **this** and `that`.\n\n@Assistant:\nOk.\n\n**Tool Use:** `calculator` (`c1`)\n\n```json\n{\"expression\": \"1+1\"}\n```\n\n@You:\n\n**Tool Result:** `c1`\n\n```flemma:tool status=pending\n```\n"
		// Neovim's defaults (syntax on), which -u NONE leaves out.
		if err := s.Nv.Command("syntax on | filetype plugin on"); err != nil {
			t.Fatal(err)
		}
		mustOpenForeign(t, s, "c.chat", chat)
		var got struct {
			TS      bool   `msgpack:"ts"`
			Level   int    `msgpack:"level"`
			Shown   string `msgpack:"shown"`
			Fence   string `msgpack:"fence"`
			FenceNo string `msgpack:"fence_no"`
		}
		// What each line shows: its characters that syntax does not conceal.
		err := s.Lua(&got, `
			local function shown(lnum)
				local line, out = vim.fn.getline(lnum), {}
				for col = 1, #line do
					if vim.fn.synconcealed(lnum, col)[1] == 0 then out[#out + 1] = line:sub(col, col) end
				end
				return table.concat(out)
			end
			local hl = vim.treesitter.highlighter and vim.treesitter.highlighter.active or {}
			local n = vim.fn.search("^`+"```"+`flemma:tool", "n")
			return { ts = hl[vim.api.nvim_get_current_buf()] ~= nil, level = vim.wo.conceallevel,
				shown = shown(2), fence = shown(n), fence_no = vim.fn.getline(n) }`)
		if err != nil {
			t.Fatal(err)
		}
		if got.Level == 0 {
			t.Fatalf("conceallevel is 0: nothing is concealed")
		}
		if got.TS {
			t.Errorf("treesitter highlights the chat: its queries conceal **, inline backticks and info strings")
		}
		if got.Shown != "Say **this** and `that`." {
			t.Errorf("line 2 shows %q, want all of it", got.Shown)
		}
		if got.Fence != "flemma:tool status=pending" {
			t.Errorf("the fence %q shows %q, want its info string without the backticks", got.FenceNo, got.Fence)
		}
	})
}
