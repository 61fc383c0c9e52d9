package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// issue27Setup is issue 27 #1's example as a user writes it: one wrong
// type among keys that must survive it.
const issue27Setup = `{ provider = "openai", tools = { max_concurrent = "two", auto_approve = { "$readonly" } } }`

// TestOneWrongTypeKeepsTheRest (issue 27 #1): tools.max_concurrent = "two"
// is reported once, visibly (a warning), with its path, what it takes and
// the value given, and in :checkhealth; the provider and the stricter
// auto_approve = { "$readonly" } stay — in the plugin and in the host: ls
// runs, a write asks (with the whole setup dropped, $default wrote).
func TestOneWrongTypeKeepsTheRest(t *testing.T) {
	const want = `tools.max_concurrent: expected a whole number (0 or more), got "two" (the default 2 is used)`
	eachNvim(t, issue27Setup, func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "w.chat", toolChat("write", "w1", `{"path": "written.txt", "content": "x\n", "label": "w"}`))
		press(t, s, "<C-]>")
		waitStatus(t, s, "w1", "pending")
		waitIdle(t, s)
		if _, err := os.Stat(filepath.Join(s.Dir, "written.txt")); !os.IsNotExist(err) {
			t.Errorf("the write ran under $readonly (%v)", err)
		}
		mustOpen(t, s, "l.chat", toolChat("ls", "l1", `{"path": ".", "label": "l"}`))
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "l1"); isErr || !strings.Contains(body, "w.chat") {
			t.Errorf("ls under $readonly (error %v):\n%s", isErr, body)
		}
		waitIdle(t, s)
		if st := hostText(t, s, "flemma.status", buf); !strings.Contains(st, "provider: openai") {
			t.Errorf("the host's provider is not openai:\n%s", st)
		}
		var cfg struct {
			Provider    string   `msgpack:"provider"`
			AutoApprove []string `msgpack:"auto_approve"`
			Max         int      `msgpack:"max"`
		}
		if err := s.Lua(&cfg, `local c = require("flemma").config(); return { provider = c.provider, auto_approve = c.tools.auto_approve, max = c.tools.max_concurrent }`); err != nil {
			t.Fatal(err)
		}
		if cfg.Provider != "openai" || strings.Join(cfg.AutoApprove, ",") != "$readonly" || cfg.Max != 2 {
			t.Errorf("the plugin's config: %+v", cfg)
		}
		m := s.Messages()
		if n := strings.Count(m, "tools.max_concurrent"); n != 1 || !strings.Contains(m, want) {
			t.Errorf("want %q once in the messages, found %d:\n%s", want, n, m)
		}
		if strings.Contains(m, "setup (host)") || strings.Contains(m, "rejected") {
			t.Errorf("the host reported the setup too:\n%s", m)
		}

		// Where the user looks: a warning (vim.notify at WARN), one for
		// the setup, naming the key.
		var seen []struct {
			Msg   string `msgpack:"msg"`
			Level int    `msgpack:"level"`
		}
		if err := s.Lua(&seen, `
			local seen, orig = {}, vim.notify
			vim.notify = function(msg, level) table.insert(seen, { msg = msg, level = level or -1 }) end
			local ok, err = pcall(require("flemma").setup, `+issue27Setup+`)
			vim.notify = orig
			assert(ok, err)
			return seen`); err != nil {
			t.Fatal(err)
		}
		var warns int
		for _, n := range seen {
			if strings.Contains(n.Msg, "tools.max_concurrent") {
				warns++
				if n.Level != 3 || !strings.Contains(n.Msg, want) { // vim.log.levels.WARN
					t.Errorf("notified at level %d: %q", n.Level, n.Msg)
				}
			}
		}
		if warns != 1 {
			t.Errorf("%d notifications name tools.max_concurrent: %+v", warns, seen)
		}

		var health string
		if err := s.Nv.Command("checkhealth flemma"); err != nil {
			t.Fatal(err)
		}
		if err := s.Lua(&health, `local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"); vim.cmd("close"); return t`); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(health, "setup "+want) {
			t.Errorf(":checkhealth does not show the replaced value:\n%s", health)
		}
	})
}

// TestEveryOptionWrongValueInLua: the plugin's side of issue 27 #1 for
// every option of the schema (lua/flemma/schema.lua): a value of the wrong
// type is reported once with its path, what it takes and the value given,
// and replaced by the stricter choice or the default; the provider and
// auto_approve = { "$readonly" } survive it. So for every table of options
// given as something else (tools = "x"), and for every key of an entry
// of providers, models and mcp_servers. (options'
// TestEveryOptionWrongValue is the host's side.)
func TestEveryOptionWrongValueInLua(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		var problems []string
		if err := s.Lua(&problems, `
			local config, schema = require("flemma.config"), require("flemma.schema")
			local function get(t, path)
				for part in path:gmatch("[^.]+") do
					if type(t) ~= "table" then return nil end
					t = t[part]
				end
				return t
			end
			local function put(t, path, v)
				local parts = vim.split(path, ".", { plain = true })
				for i = 1, #parts - 1 do
					t[parts[i]] = t[parts[i]] or {}
					t = t[parts[i]]
				end
				t[parts[#parts]] = v
			end
			local out = {}
			for _, o in ipairs(schema.options) do
				local bad
				for _, v in ipairs({ "two", 5, true, { x = 1 }, -1, 1.5, { 5 } }) do
					if not config.check(o, v) then bad = v break end
				end
				if bad == nil then
					table.insert(out, o.path .. ": no wrong value")
				else
					local user = { provider = "openai", tools = { auto_approve = { "$readonly" } } }
					put(user, o.path, bad)
					local cfg, errors = config.resolve(user)
					local mine = 0
					for _, e in ipairs(errors) do
						if e:find(o.path .. ": expected " .. o.want .. ", got " .. config.literal(bad), 1, true) == 1 then
							mine = mine + 1
						end
					end
					if #errors ~= 1 or mine ~= 1 then
						table.insert(out, o.path .. ": errors " .. vim.inspect(errors))
					end
					if o.path ~= "provider" and cfg.provider ~= "openai" then
						table.insert(out, o.path .. ": provider lost")
					end
					if o.path ~= "tools.auto_approve" and not vim.deep_equal(cfg.tools.auto_approve, { "$readonly" }) then
						table.insert(out, o.path .. ": auto_approve lost")
					end
					local want = get(config.defaults, o.path)
					if o.fallback ~= nil then
						want = o.fallback
					elseif o.keep == "strings" then
						want = {}
					end
					if not vim.deep_equal(get(cfg, o.path), want) then
						table.insert(out, o.path .. ": replaced by " .. vim.inspect(get(cfg, o.path)) .. ", want " .. vim.inspect(want))
					end
				end
			end
			-- A table of options given as something else: reported once,
			-- its options get their defaults (autopilot: off).
			local groups = {}
			for _, o in ipairs(schema.options) do
				local parts = vim.split(o.path, ".", { plain = true })
				for i = 1, #parts - 1 do
					groups[table.concat(parts, ".", 1, i)] = true
				end
			end
			for g in pairs(groups) do
				local user = { provider = "openai" }
				put(user, g, "x")
				local cfg, errors = config.resolve(user)
				if #errors ~= 1 or errors[1]:find(g .. ": expected a table", 1, true) ~= 1 or cfg.provider ~= "openai" or type(get(cfg, g)) ~= "table" then
					table.insert(out, g .. ' = "x": errors ' .. vim.inspect(errors))
				end
				if g == "tools.autopilot" and cfg.tools.autopilot.enabled ~= false then
					table.insert(out, 'tools.autopilot = "x" left autopilot on')
				end
			end
			-- The keys of an entry of providers, models, mcp_servers.
			local prefix = { providers = "providers.x.%s: ", models = 'models["x"].%s: ', mcp_servers = "mcp_servers.x: %s: " }
			for table_name, keys in pairs(schema.entries) do
				for _, o in ipairs(keys) do
					local bad
					for _, v in ipairs({ "two", 5, true, { x = 1 }, -1, 1.5, { 5 } }) do
						if not config.check(o, v) then bad = v break end
					end
					local entry = table_name == "mcp_servers" and { command = "srv" } or { model = "m" }
					if table_name == "models" then entry = { context_window = 1000 } end
					entry[o.path] = bad
					local cfg, errors = config.resolve({ provider = "openai", [table_name] = { x = entry } })
					local want = string.format(prefix[table_name], o.path)
					if bad == nil or #errors ~= 1 or errors[1]:find(want, 1, true) ~= 1 or cfg.provider ~= "openai" then
						table.insert(out, table_name .. "." .. o.path .. ": errors " .. vim.inspect(errors))
					end
				end
			end
			return out`); err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	})
}
