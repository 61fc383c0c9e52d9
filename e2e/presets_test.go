package e2e

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// Named presets (issue 27, "switching"): setup's presets = {…}, applied by
// :Flemma switch $name (a model or key=value after it wins), completed on
// the command line, offered by the picker; a bad preset is refused with
// what is wrong and changes nothing.
func TestSwitchPresets(t *testing.T) {
	setup := `{ presets = {
		fast = { provider = "openai", model = "gpt-4o-mini", parameters = { max_tokens = 1234, temperature = 0.5 } },
		["$deep"] = "anthropic claude-opus-4-6 thinking=high",
		broken = { provider = "openai", parameters = { max_tokens = "lots" } },
		typo = { provider = "openai", parametres = {} },
	} }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "pr.chat", "@You:\nhi\n")
		if got := strings.Join(complete(t, s, "Flemma switch $"), " "); got != "$broken $deep $fast $typo" {
			t.Errorf("'Flemma switch $' completes %q", got)
		}
		if got := strings.Join(complete(t, s, "Flemma switch $fast gpt-4o"), " "); got != "gpt-4o gpt-4o-mini" {
			t.Errorf("'Flemma switch $fast gpt-4o' completes the preset provider's models: %q", got)
		}

		press(t, s, ":Flemma switch $fast<CR>")
		waitMessage(t, s, "Provider openai, model gpt-4o-mini.")
		st := hostText(t, s, "flemma.status", buf)
		for _, want := range []string{"provider: openai  model: gpt-4o-mini", "max_tokens=1234"} {
			if !strings.Contains(st, want) {
				t.Errorf("status after $fast lacks %q:\n%s", want, st)
			}
		}
		// What a restarted host is given again: the preset as it expands.
		var spec string
		if err := s.Lua(&spec, `return require("flemma.state").host.runtime.switch`); err != nil {
			t.Fatal(err)
		}
		if spec != "openai gpt-4o-mini max_tokens=1234 temperature=0.5" {
			t.Errorf("the switch kept for a restarted host: %q", spec)
		}
		var line string
		if err := s.Lua(&line, `return require("flemma").statusline()`); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "openai gpt-4o-mini") {
			t.Errorf("statusline after $fast: %q", line)
		}

		// A model and parameters after the name win over the preset's.
		press(t, s, ":Flemma switch $deep claude-sonnet-4-6 max_tokens=999<CR>")
		waitMessage(t, s, "Provider anthropic, model claude-sonnet-4-6.")
		st = hostText(t, s, "flemma.status", buf)
		for _, want := range []string{"provider: anthropic  model: claude-sonnet-4-6", "max_tokens=999", `thinking="high"`} {
			if !strings.Contains(st, want) {
				t.Errorf("status after $deep with overrides lacks %q:\n%s", want, st)
			}
		}

		// Bad presets: refused with what is wrong, nothing changed.
		for _, c := range []struct{ cmd, want string }{
			{"$nope", "unknown preset $nope (presets: $broken, $deep, $fast, $typo); nothing was changed"},
			{"$broken", "preset $broken: parameters.max_tokens must be a whole number"},
			{"$typo", `preset $typo: unknown key "parametres"`},
		} {
			press(t, s, ":Flemma switch "+c.cmd+"<CR>")
			waitMessage(t, s, c.want)
			if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "provider: anthropic  model: claude-sonnet-4-6") || !strings.Contains(st, "max_tokens=999") {
				t.Errorf("the refused %s changed something:\n%s", c.cmd, st)
			}
		}

		// The picker (vim.ui.select, whatever plugin replaces it) lists the
		// presets, the catalogue's models and the providers; picking a
		// preset applies it.
		if err := s.Lua(nil, `
			_G.labels = nil
			vim.ui.select = function(items, opts, cb)
				_G.labels = {}
				for i, it in ipairs(items) do
					_G.labels[i] = opts.format_item and opts.format_item(it) or it
				end
				for i, l in ipairs(_G.labels) do
					if l:find("^%$fast ") then
						return cb(items[i], i)
					end
				end
				cb(nil)
			end`); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":Flemma switch<CR>")
		waitMessage(t, s, "Provider openai, model gpt-4o-mini.")
		var labels []string
		if err := s.Lua(&labels, `return _G.labels`); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(labels, "\n")
		for _, want := range []string{"$fast  openai gpt-4o-mini max_tokens=1234 temperature=0.5", "$deep  anthropic claude-opus-4-6 thinking=high", "anthropic claude-sonnet-4-6", "openai …"} {
			if !strings.Contains(all, want) {
				t.Errorf("the picker lacks %q:\n%s", want, all)
			}
		}
	})
}

// TestReadmePresets: the README's presets, exactly as written, are
// accepted by setup and each applies.
func TestReadmePresets(t *testing.T) {
	eachNvim(t, `{}`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, readmeBlock(t, `deep = "anthropic claude-opus`)); err != nil {
			t.Fatalf("the README example: %v", err)
		}
		mustOpen(t, s, "rp.chat", "@You:\nhi\n")
		press(t, s, ":Flemma switch $fast<CR>")
		waitMessage(t, s, "Provider anthropic, model claude-haiku-4-5.")
		press(t, s, ":Flemma switch $deep<CR>")
		waitMessage(t, s, "Provider anthropic, model claude-opus-4-6.")
		for _, bad := range []string{"unknown option", "must be", "E5108", "preset $"} {
			if strings.Contains(s.Messages(), bad) {
				t.Errorf("a problem with the README's presets:\n%s", s.Messages())
			}
		}
	})
}
