package e2e

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestFrontmatterApprovalFunction: a frontmatter function approving the
// calculator makes one <C-]> run it with no pending step.
func TestFrontmatterApprovalFunction(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		fm := "```lua\nflemma.opt.tools.auto_approve = function(tool_name, input, ctx)\n  if tool_name == \"calculator\" and input.expression == \"2^10\" then return true end\n  return nil\nend\n```\n"
		mustOpen(t, s, "fm.chat", fm+calcChat)
		press(t, s, "<C-]>")
		want := fm + strings.TrimSuffix(calcChat, "\n") + "\n\n@You:\n\n**Tool Result:** `toolu_01`\n\n```\n1024\n```"
		waitText(t, s, want)
	})
}

// TestFrontmatterSyntaxError: a syntax error is a diagnostic on its .chat
// line, and nothing is executed or inserted.
func TestFrontmatterSyntaxError(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		fm := "```lua\nflemma.opt.tools.auto_approve = { \"calculator\" }\nlocal x = = 1\n```\n"
		content := fm + calcChat
		mustOpen(t, s, "bad-fm.chat", content)
		press(t, s, "<C-]>")
		waitIdle(t, s)
		if got := text(t, s); got != strings.TrimSuffix(content, "\n") {
			t.Errorf("buffer changed despite the frontmatter error:\n%s", got)
		}
		var diags []struct {
			Lnum     int    `msgpack:"lnum"`
			Severity int    `msgpack:"severity"`
			Message  string `msgpack:"message"`
		}
		if err := s.Lua(&diags, `return vim.diagnostic.get(0)`); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range diags {
			if d.Lnum+1 == 3 && d.Severity == 1 && strings.Contains(d.Message, "frontmatter") {
				found = true
			}
		}
		if !found {
			t.Errorf("no error diagnostic on line 3; got %+v", diags)
		}
		waitMessage(t, s, "frontmatter has errors")
	})
}
