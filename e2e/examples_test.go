package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// docExample is a Lua example of README.md or doc/flemma.txt.
type docExample struct {
	where, code string
}

// luaExamples returns the Lua examples of README.md (```lua blocks) and of
// the help (">lua" blocks, and ">" blocks whose text is Lua: a plugin
// manager's spec, a setup() call, a fragment of the setup table).
func luaExamples(t *testing.T) []docExample {
	t.Helper()
	root := nvimtest.RepoRoot()
	var out []docExample
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```lua\n(.*?)```").FindAllStringSubmatchIndex(string(readme), -1) {
		line := strings.Count(string(readme[:m[0]]), "\n") + 1
		out = append(out, docExample{"README.md:" + itoa(line), string(readme[m[2]:m[3]])})
	}
	for _, ex := range docBlocks(t) {
		// Chat text, tool output and SSE scripts are examples too, but not
		// Lua. (A message template, "{%"/"{{", is run by
		// TestHelpTemplateExample.)
		code := ex.code
		if strings.HasPrefix(code, "@") || strings.HasPrefix(code, "**") || strings.HasPrefix(code, "```") ||
			strings.HasPrefix(code, "{%") || strings.HasPrefix(code, "{{") ||
			strings.HasPrefix(code, "delay:") || !strings.ContainsAny(code, "=(") || strings.Contains(code, "LSP diagnostics") {
			continue
		}
		out = append(out, ex)
	}
	return out
}

// docBlocks returns the example blocks of the help (">" or ">lua" to "<"),
// dedented.
func docBlocks(t *testing.T) []docExample {
	t.Helper()
	help, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "doc", "flemma.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	lines := strings.Split(string(help), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasSuffix(lines[i], ">") && !strings.HasSuffix(lines[i], ">lua") {
			continue
		}
		start := i + 1
		var block []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "<") && (lines[i] == "" || strings.HasPrefix(lines[i], " ") || strings.HasPrefix(lines[i], "\t")); i++ {
			block = append(block, lines[i])
		}
		out = append(out, docExample{"doc/flemma.txt:" + itoa(start), dedent(block)})
	}
	return out
}

func dedent(lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " \t")); indent < 0 || n < indent {
			indent = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimSpace(b.String()) + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

// runExample runs one example as a user would paste it into init.lua: a
// statement as it is; a table expression as a plugin manager's spec (its
// opts go to setup); use({...}) as packer's; a fragment of the setup table
// (models = {…}) inside require("flemma").setup({ … }). It returns the
// error, or what setup reported (unknown or mistyped keys), or "".
const runExample = `
local code = ...
local reported = {}
local notify = vim.notify
vim.notify = function(msg, level, o)
  if (level or 0) >= vim.log.levels.WARN then table.insert(reported, msg) end
  return notify(msg, level, o)
end
local function finish(err)
  vim.notify = notify
  if err then return err end
  return table.concat(reported, "\n")
end
local function run(src, env)
  local fn, err = loadstring(src, "example")
  if not fn then return nil, err end
  if env then setfenv(fn, setmetatable(env, { __index = _G })) end
  local ok, res = pcall(fn)
  if not ok then return nil, tostring(res) end
  return true, res
end
if loadstring(code) then
  local spec
  local ok, err = run(code, { use = function(s) spec = s end })
  if not ok then return finish(err) end
  if spec then
    if spec.run and not spec.run:match("^:Flemma ") then return finish("packer run is not a :Flemma command") end
    if vim.fn.exists(":Flemma") ~= 2 then return finish(":Flemma does not exist") end
  end
  return finish()
end
local ok, spec = run("return " .. code)
if ok and type(spec) == "table" and spec[1] then
  require("flemma").setup(spec.opts or {})
  return finish()
end
local ok2, err = run('require("flemma").setup({\n' .. code .. '\n})')
if not ok2 then return finish("neither Lua nor a fragment of the setup table: " .. tostring(err)) end
return finish()
`

// TestEveryLuaExampleRuns (issue 27, done-when): every Lua example of
// README.md and :help flemma runs as written in a real Neovim with the
// plugin — no Lua error, and setup reports nothing (no unknown option, no
// value of the wrong type).
func TestEveryLuaExampleRuns(t *testing.T) {
	examples := luaExamples(t)
	if len(examples) < 15 {
		t.Fatalf("found only %d Lua examples: the extraction is broken", len(examples))
	}
	eachNvim(t, `{}`, func(t *testing.T, s *nvimtest.Session) {
		for i, ex := range examples {
			if strings.Contains(ex.code, "flemma.opt.") {
				frontmatterExample(t, s, i, ex)
				continue
			}
			var problem string
			if err := s.Lua(&problem, runExample, ex.code); err != nil {
				t.Errorf("%s: %v\n%s", ex.where, err, ex.code)
				continue
			}
			if problem != "" {
				t.Errorf("%s: %s\n%s", ex.where, problem, ex.code)
			}
		}
	})
}

// frontmatterExample runs a frontmatter example as the frontmatter of a
// chat: the press evaluates it, and it must leave no diagnostic.
func frontmatterExample(t *testing.T, s *nvimtest.Session, i int, ex docExample) {
	t.Helper()
	mustOpen(t, s, "example"+itoa(i)+".chat", "```lua\n"+ex.code+"```\n"+calcChat)
	press(t, s, "<C-]>")
	waitIdle(t, s)
	var diags []string
	if err := s.Lua(&diags, `local out = {}
		for _, d in ipairs(vim.diagnostic.get(0)) do table.insert(out, (d.lnum + 1) .. ": " .. d.message) end
		return out`); err != nil {
		t.Fatal(err)
	}
	if len(diags) > 0 {
		t.Errorf("%s: the frontmatter example has diagnostics %v\n%s", ex.where, diags, ex.code)
	}
}
