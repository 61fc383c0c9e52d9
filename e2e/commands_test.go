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

// Every key of setup() is checked against the schema's type, and a key
// set to false is no key at all.
func TestSetupTypesChecked(t *testing.T) {
	eachNvim(t, `{ tools = { truncate = { max_lines = "many" } }, sandbox = { writable = "." }, keymaps = { cancel = false }, highlights = 5 }`, func(t *testing.T, s *nvimtest.Session) {
		m := s.Messages()
		for _, want := range []string{`tools.truncate.max_lines: expected a whole number (0 or more), got "many" (the default 2000 is used)`,
			`sandbox.writable: expected a list of strings, got "." (the default is used: a wrong list keeps its strings; with none, the default roots)`,
			"highlights: expected a table, got 5 (its defaults are used)"} {
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

// complete is what Neovim completes for a command line.
func complete(t *testing.T, s *nvimtest.Session, cmdline string) []string {
	t.Helper()
	var got []string
	if err := s.Lua(&got, `return vim.fn.getcompletion(..., "cmdline")`, cmdline); err != nil {
		t.Fatal(err)
	}
	return got
}

// :Flemma switch completes the providers, then the models of the provider
// typed (the built-in catalogue's and those setup describes), then its
// parameters; a misspelt model is refused with the one it probably meant,
// and a model flemma does not know that is no near miss is taken.
func TestSwitchCompletesAndRefusesTypos(t *testing.T) {
	eachNvim(t, `{ models = { ["my-local-llm"] = { max_output_tokens = 4096, thinking = "none" } } }`, func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "sw.chat", "@You:\nhi\n")
		if got := strings.Join(complete(t, s, "Flemma switch "), " "); got != "anthropic copilot gemini openai replay vertex" {
			t.Errorf("providers completed: %q", got)
		}
		if got := complete(t, s, "Flemma switch op"); len(got) != 1 || got[0] != "openai" {
			t.Errorf("'Flemma switch op' completes %v", got)
		}
		sonnets := strings.Join(complete(t, s, "Flemma switch anthropic claude-sonnet-4-"), " ")
		for _, want := range []string{"claude-sonnet-4-5", "claude-sonnet-4-6"} {
			if !strings.Contains(sonnets, want) {
				t.Errorf("'claude-sonnet-4-' completes %q, lacks %s", sonnets, want)
			}
		}
		if strings.Contains(" "+sonnets+" ", " claude-sonnet-4- ") {
			t.Errorf("a family prefix is offered as a model: %q", sonnets)
		}
		if got := strings.Join(complete(t, s, "Flemma switch openai gpt-4o"), " "); got != "gpt-4o gpt-4o-mini" {
			t.Errorf("'openai gpt-4o' completes %q", got)
		}
		if got := complete(t, s, "Flemma switch openai my-"); len(got) != 1 || got[0] != "my-local-llm" {
			t.Errorf("a model of setup's models is not completed: %v", got)
		}
		if got := strings.Join(complete(t, s, "Flemma switch openai gpt-4o max"), " "); got != "max_tokens=" {
			t.Errorf("parameters completed: %q", got)
		}

		press(t, s, ":Flemma switch anthropic claude-sonet-4-6<CR>")
		if m := s.Messages(); !strings.Contains(m, `unknown model "claude-sonet-4-6" for anthropic — did you mean claude-sonnet-4-6?`) {
			t.Errorf("a misspelt model was not refused:\n%s", m)
		}
		if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "provider: anthropic  model: claude-sonnet-4-6 (default)") {
			t.Errorf("the refused switch changed something:\n%s", st)
		}
		press(t, s, ":Flemma switch anthropic claude-opus-6<CR>")
		if m := s.Messages(); !strings.Contains(m, "Provider anthropic, model claude-opus-6.") {
			t.Errorf("a plausible new model was refused:\n%s", m)
		}
		if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "model: claude-opus-6  ") || !strings.Contains(st, "not listed: taken for the family claude-") {
			t.Errorf("status after switching to an unlisted model of a known family:\n%s", st)
		}
	})
}

// :Flemma status names the model a send uses, the provider's default when
// none is set, and what flemma knows of it.
func TestStatusNamesTheDefaultModel(t *testing.T) {
	eachNvim(t, `{ provider = "openai" }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "st.chat", "@You:\nhi\n")
		press(t, s, ":Flemma status<CR>")
		m := listingWindow(t, s, "status")
		for _, want := range []string{"provider: openai  model: gpt-5.4 (default)", "max_tokens=64000 (default)", "model info: context 1,050,000 · output limit 128,000 · thinking effort"} {
			if !strings.Contains(m, want) {
				t.Errorf(":Flemma status lacks %q:\n%s", want, m)
			}
		}
		if strings.Contains(m, "model: (default)") {
			t.Errorf(":Flemma status names no model:\n%s", m)
		}
	})
}

// A wrong field of setup's models = {…} is reported and left out; the rest
// of the entry applies.
func TestModelsSetupChecked(t *testing.T) {
	eachNvim(t, `{ models = { ["my-llm"] = { max_output_token = 5, thinking = "deep", context_window = 64000 } } }`, func(t *testing.T, s *nvimtest.Session) {
		m := s.Messages()
		for _, want := range []string{
			`unknown option models["my-llm"].max_output_token (did you mean max_output_tokens?)`,
			`models["my-llm"].thinking: expected one of "adaptive", "budget", "effort", "none", got "deep"`,
		} {
			if !strings.Contains(m, want) {
				t.Errorf("no %q in the messages:\n%s", want, m)
			}
		}
		buf := mustOpen(t, s, "m.chat", "@You:\nhi\n")
		hostText(t, s, "flemma.switch", "openai my-llm")
		if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "model info: context 64,000 · thinking none") {
			t.Errorf("the valid field does not apply:\n%s", st)
		}
	})
}
