package e2e

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

func hostText(t *testing.T, s *nvimtest.Session, method string, args ...any) string {
	t.Helper()
	var out string
	code := `local m = ...; local res, err = require("flemma.host").request(m, select(2, ...)); if err then return "ERROR " .. err end; return res.text or res.message or ""`
	if err := s.Lua(&out, code, append([]any{method}, args...)...); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSandboxStatus(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "proj/s.chat", "@You:\nhi\n")
		out := hostText(t, s, "flemma.sandbox_status", buf)
		if !strings.Contains(out, "bwrap") && !strings.Contains(out, "none") {
			t.Errorf("sandbox:status names no backend:\n%s", out)
		}
		if !strings.Contains(out, "writable:") || !strings.Contains(out, "deny_read:") {
			t.Errorf("sandbox:status lacks the rules:\n%s", out)
		}
		var w struct {
			In  bool `msgpack:"inside"`
			Out bool `msgpack:"out"`
		}
		if err := s.Lua(&w, `local b, dir = ...
			local h = require("flemma.host")
			return { inside = h.request("flemma.sandbox_writable", b, dir .. "/proj/new.txt").writable,
				out = h.request("flemma.sandbox_writable", b, "/etc/flemma-test").writable }`, buf, s.Dir); err != nil {
			t.Fatal(err)
		}
		if !w.In || w.Out {
			t.Errorf("writable beside the buffer = %v (want true), in /etc = %v (want false)", w.In, w.Out)
		}
		press(t, s, ":Flemma sandbox:status<CR>")
		if m := listingWindow(t, s, "sandbox-status"); !strings.Contains(m, "sandbox: enabled") {
			t.Errorf(":Flemma sandbox:status said:\n%s", m)
		}
	})
}

func TestSwitchAndStatus(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "st.chat", "@You:\nhi\n")
		if got := hostText(t, s, "flemma.switch", `openai gpt-test max_tokens=123 thinking="high"`); got != "Provider openai, model gpt-test." {
			t.Errorf("switch = %q", got)
		}
		status := hostText(t, s, "flemma.status", buf)
		for _, want := range []string{"provider: openai", "model: gpt-test", "max_tokens=123", `thinking="high"`, "credentials: missing", "tools in this buffer: "} {
			if !strings.Contains(status, want) {
				t.Errorf("status lacks %q:\n%s", want, status)
			}
		}
		if got := hostText(t, s, "flemma.switch", "nope"); !strings.Contains(got, `unknown provider "nope"`) {
			t.Errorf("switch nope = %q", got)
		}
		// A buffer's frontmatter wins over :Flemma switch.
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, 0, 0, false, { "`+"```"+`lua", 'flemma.opt.provider = "anthropic"', 'flemma.opt.model = "claude-test"', "`+"```"+`" })`); err != nil {
			t.Fatal(err)
		}
		status = hostText(t, s, "flemma.status", buf)
		if !strings.Contains(status, "provider: anthropic  model: claude-test") {
			t.Errorf("frontmatter did not win:\n%s", status)
		}
		if got := hostText(t, s, "flemma.autopilot", "disable"); !strings.Contains(got, "Autopilot disabled") {
			t.Errorf("autopilot:disable = %q", got)
		}
	})
}

// highlights.tool_preview decides how previews look: a group to link to, and
// it survives a :colorscheme.
func TestToolPreviewHighlight(t *testing.T) {
	eachNvim(t, `{ highlights = { tool_preview = "ErrorMsg" } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "hl.chat", "@You:\nhi\n")
		check := func(when string) {
			var same bool
			if err := s.Lua(&same, `return vim.fn.synIDtrans(vim.fn.hlID("FlemmaToolPreview")) == vim.fn.synIDtrans(vim.fn.hlID("ErrorMsg"))`); err != nil {
				t.Fatal(err)
			}
			if !same {
				t.Errorf("%s: FlemmaToolPreview is not ErrorMsg", when)
			}
		}
		check("after setup")
		press(t, s, ":colorscheme default<CR>")
		check("after :colorscheme")
	})
}

// A typo in setup() is reported, with the key it was probably meant to be,
// and the rest of the configuration still applies.
func TestUnknownSetupKeysWarn(t *testing.T) {
	eachNvim(t, `{ provder = "openai", tools = { auto_aprove = { "bash" }, presets = { ["$mine"] = { approve = { "ls" } } }, my_tool = { level = 3 } }, parameters = { anthropic = { anything = 1 } }, sandbox = { netwrk = false } }`, func(t *testing.T, s *nvimtest.Session) {
		m := s.Messages()
		for _, want := range []string{
			"unknown option provder (did you mean provider?)",
			"unknown option tools.auto_aprove (did you mean tools.auto_approve?)",
			"unknown option sandbox.netwrk (did you mean sandbox.network?)",
		} {
			if !strings.Contains(m, want) {
				t.Errorf("no %q in the messages:\n%s", want, m)
			}
		}
		for _, quiet := range []string{"$mine", "anything", "my_tool"} {
			if strings.Contains(m, quiet) {
				t.Errorf("a key of the user's own (%s) was reported:\n%s", quiet, m)
			}
		}
	})
}

// Every key of setup() is checked against the type of its default, and a key
// set to false is no key at all.
func TestSetupTypesChecked(t *testing.T) {
	eachNvim(t, `{ tools = { truncate = { max_lines = "many" } }, sandbox = { writable = "." }, keymaps = { cancel = false }, highlights = 5 }`, func(t *testing.T, s *nvimtest.Session) {
		m := s.Messages()
		for _, want := range []string{"tools.truncate.max_lines: expected number, got string", "sandbox.writable: expected table, got string", "highlights: expected table, got number (the default is used)"} {
			if !strings.Contains(m, want) {
				t.Errorf("no %q in the messages:\n%s", want, m)
			}
		}
		if strings.Contains(m, "keymaps.cancel") {
			t.Errorf("keymaps.cancel = false was reported:\n%s", m)
		}
		mustOpen(t, s, "k.chat", "@You:\nhi\n")
		var mapped string
		if err := s.Lua(&mapped, `return vim.fn.maparg("<C-c>", "n")`); err != nil {
			t.Fatal(err)
		}
		if mapped != "" {
			t.Errorf("<C-c> is mapped although keymaps.cancel = false: %q", mapped)
		}
	})
}
