package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The editor's tools (diagnostics, lsp, buffers) and the diagnostics after
// an edit, against a real language server: gopls, which `make test`
// installs (scripts/provision-gopls.sh). The project imports a module that
// lives under a .ssh folder (deny_read by default), so a language server
// answer that points there must never reach the model.

// gopls returns the gopls binary the tests use; with CI set, a missing one
// fails the test.
func gopls(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FLEMMA_GOPLS"), filepath.Join(nvimtest.RepoRoot(), ".cache", "gopls-v0.23.0", "gopls")} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	msg := "gopls not found: run scripts/provision-gopls.sh (make test does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// goEnv is the environment gopls needs here: the machine's Go caches (the
// tests' XDG_CACHE_HOME would make every run cold) and no network.
func goEnv(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2], "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off",
		// gopls's own cache, shared by the runs (it outlives the test's folders).
		"GOPLSCACHE=" + filepath.Join(nvimtest.RepoRoot(), ".cache", "gopls-cache")}
}

const mainGo = `package main

import (
	"fmt"

	"example.com/app/lib"
	"example.com/keys"
)

func main() {
	fmt.Println(lib.Helper(), keys.Secret)
}
`

// goProject writes proj/ (module example.com/app, with lib/) and
// home/.ssh/keys (module example.com/keys, which proj requires through a
// replace) under dir; returns proj.
func goProject(t *testing.T, dir string) string {
	t.Helper()
	files := map[string]string{
		"proj/go.mod":              "module example.com/app\n\ngo 1.22\n\nrequire example.com/keys v0.0.0\n\nreplace example.com/keys => ../home/.ssh/keys\n",
		"proj/main.go":             mainGo,
		"proj/lib/lib.go":          "package lib\n\n// Helper returns the answer.\nfunc Helper() int { return 42 }\n",
		"proj/lib/more.go":         "package lib\n\n// More is one more.\nfunc More() int { return Helper() + 1 }\n",
		"home/.ssh/keys/go.mod":    "module example.com/keys\n\ngo 1.22\n",
		"home/.ssh/keys/keys.go":   "package keys\n\n// Secret is what must not leak: hunter2-do-not-leak.\nconst Secret = \"hunter2-do-not-leak\"\n\nfunc use() string { return Secret }\n",
		"home/.ssh/keys/keys2.go":  "package keys\n\nvar again = Secret + \"hunter2-do-not-leak\"\n",
		"proj/notes/readme.txt":    "notes\n",
		"proj/.flemma-test-marker": "",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "proj")
}

// lspConfig is what a user's config does to get gopls for Go files: on
// Neovim 0.8+ vim.lsp.start, on 0.7 start_client + buf_attach_client. It
// also counts the FileType events per file, which flemma must not cause.
const lspConfig = `
local gopls = ...
vim.cmd("filetype on")
_G.filetype_events = {}
vim.api.nvim_create_autocmd("FileType", {
  pattern = "*",
  callback = function(ev)
    local name = vim.api.nvim_buf_get_name(ev.buf)
    _G.filetype_events[name] = (_G.filetype_events[name] or 0) + 1
  end,
})
vim.api.nvim_create_autocmd("FileType", {
  pattern = "go",
  callback = function(ev)
    local found = vim.fn.findfile("go.mod", vim.fn.fnamemodify(vim.api.nvim_buf_get_name(ev.buf), ":p:h") .. ";")
    local root = vim.fn.fnamemodify(found, ":p:h")
    if vim.lsp.start then
      vim.lsp.start({ name = "gopls", cmd = { gopls }, root_dir = root })
    else
      _G.gopls_id = _G.gopls_id or vim.lsp.start_client({ name = "gopls", cmd = { gopls }, root_dir = root })
      vim.lsp.buf_attach_client(ev.buf, _G.gopls_id)
    end
  end,
})
`

// editorSession opens proj/main.go in a window (gopls starts for it and
// has loaded the workspace), then the chat in a split; returns proj.
func editorSession(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	proj := goProject(t, s.Dir)
	if err := s.Lua(nil, lspConfig, gopls(t)); err != nil {
		t.Fatal(err)
	}
	// gopls writes under the test's folders until it exits: stop it before
	// they are removed (this runs before the session closes).
	t.Cleanup(func() {
		_ = s.Lua(nil, `local lsp = vim.lsp; lsp.stop_client(lsp.get_clients and lsp.get_clients() or lsp.get_active_clients())`)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			if err := s.Lua(&n, `local lsp = vim.lsp; return #(lsp.get_clients and lsp.get_clients() or lsp.get_active_clients())`); err != nil || n == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	// The user works in the project: Neovim's cwd is its folder.
	if err := s.Lua(nil, `vim.cmd("cd " .. vim.fn.fnameescape(...))`, proj); err != nil {
		t.Fatal(err)
	}
	if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(proj, "main.go")); err != nil {
		t.Fatal(err)
	}
	// gopls is ready once it answers a hover on main.go.
	ready := `
		local lsp = vim.lsp
		local cs = lsp.get_clients and lsp.get_clients() or lsp.get_active_clients()
		if #cs == 0 or not cs[1].initialized then return false end
		local res = lsp.buf_request_sync(0, "textDocument/hover", { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 10, character = 18 } }, 2000)
		for _, r in pairs(res or {}) do
			if r.result then return true end
		end
		return false`
	deadline := time.Now().Add(90 * time.Second)
	for {
		var ok bool
		err := s.Lua(&ok, ready)
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gopls never answered on main.go (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return proj
}

// waitResultLong is waitResult with room for a language server under load.
func waitResultLong(t *testing.T, s *nvimtest.Session, id string) (string, bool) {
	t.Helper()
	var body string
	var isErr bool
	got, err := s.Wait(120*time.Second, func(x string) bool {
		var ok bool
		body, isErr, ok = resultOf(x, id)
		return ok
	})
	if err != nil {
		t.Fatalf("no result for %s:\n%s\nmessages: %s", id, got, s.Messages())
	}
	return body, isErr
}

// chatCalls is a conversation whose assistant makes the calls (id, tool,
// input) in one message.
func chatCalls(calls ...[3]string) string {
	var b strings.Builder
	b.WriteString("@You:\nLook at the code.\n\n@Assistant:\nLooking.\n")
	for _, c := range calls {
		fmt.Fprintf(&b, "\n**Tool Use:** `%s` (`%s`)\n\n```json\n%s\n```\n", c[1], c[0], c[2])
	}
	return b.String()
}

func lspCall(id, op, path string, line int, symbol string) [3]string {
	p, l, sym, q := "null", "null", "null", "null"
	if path != "" {
		p = fmt.Sprintf("%q", path)
	}
	if line > 0 {
		l = fmt.Sprint(line)
	}
	if op == "workspace_symbols" {
		q = fmt.Sprintf("%q", symbol)
	} else if symbol != "" {
		sym = fmt.Sprintf("%q", symbol)
	}
	return [3]string{id, "lsp", fmt.Sprintf(`{"label": "asking", "operation": %q, "path": %s, "line": %s, "symbol": %s, "column": null, "query": %s}`, op, p, l, sym, q)}
}

const editorSetup = `{ tools = { editor = { timeout = 60, diagnostics_wait = 60 }, auto_approve = { "$default", "save" }, auto_approve_file_calls = true } }`

// saveTool is a Lua tool with the diff capability (README's example).
const saveTool = `
require("flemma.tools").register("save", {
  description = "Replace a file's whole text",
  input_schema = {
    type = "object",
    properties = { path = { type = "string" }, text = { type = "string" } },
    required = { "path", "text" },
  },
  diff = function(input, ctx)
    return { path = input.path, content = input.text }
  end,
  execute = function(input, ctx)
    vim.fn.writefile(vim.split(input.text, "\n", { plain = true }), ctx.path.resolve(input.path), "b")
    return { success = true, output = "saved " .. input.path }
  end,
})`

// windows is the layout the user sees: each window and its buffer.
func userWindows(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	var out string
	if err := s.Lua(&out, `
		local parts = {}
		for _, w in ipairs(vim.api.nvim_list_wins()) do
			table.insert(parts, w .. "=" .. vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)))
		end
		return table.concat(parts, " ") .. " current=" .. vim.api.nvim_get_current_win()`); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEditorToolsWithGopls(t *testing.T) {
	eachNvimEnv(t, editorSetup, goEnv(t), func(t *testing.T, s *nvimtest.Session) {
		proj := editorSession(t, s)
		if err := s.Nv.Command("vsplit"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "proj/notes/look.chat", chatCalls(
			lspCall("t1", "definition", "../main.go", 11, "Helper"),
			lspCall("t2", "references", "../lib/lib.go", 4, "Helper"),
			lspCall("t3", "hover", "../main.go", 11, "Helper"),
			lspCall("t4", "document_symbols", "../lib/lib.go", 0, ""),
			lspCall("t5", "workspace_symbols", "", 0, "Helper"),
			[3]string{"t6", "buffers", `{"label": "open files"}`},
			[3]string{"t7", "diagnostics", `{"label": "all", "path": null, "severity": null}`},
			lspCall("t8", "document_symbols", "../lib/more.go", 0, ""),
		))
		// The user has lib/more.go in the buffer list, not loaded (:badd):
		// asked about, it is loaded for the question and unloaded after,
		// never deleted.
		if err := s.Lua(nil, `vim.cmd("badd " .. vim.fn.fnameescape(...))`, filepath.Join(proj, "lib", "more.go")); err != nil {
			t.Fatal(err)
		}
		before := userWindows(t, s)
		press(t, s, "<C-]>")

		want := map[string][]string{
			"t1": {"1 definition(s) of Helper (gopls):", "lib/lib.go:4:6: func Helper() int { return 42 }"},
			"t2": {"3 reference(s) of Helper (gopls):", "lib/more.go:4:26: func More() int { return Helper() + 1 }", "main.go:11:18: fmt.Println(lib.Helper(), keys.Secret)", "lib/lib.go:4:6: func Helper() int"},
			"t3": {"func lib.Helper() int", "Helper returns the answer.", "Defined at lib/lib.go:4:6"},
			"t4": {"symbol(s) (gopls):", "lib/lib.go:4:6: function Helper"},
			"t5": {"symbol(s) (gopls):\nlib/lib.go:4:6: function example.com/app/lib.Helper\n"},
			"t6": {"main.go", "lsp: gopls", "none with unsaved changes"},
			"t7": {"No diagnostics in the files open in the editor"},
			"t8": {"lib/more.go:4:6: function More"},
		}
		for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"} {
			body, isErr := waitResultLong(t, s, id)
			for _, w := range want[id] {
				if isErr || !strings.Contains(body, w) {
					t.Errorf("%s = %q (error %v), want it to contain %q", id, body, isErr, w)
				}
			}
		}
		waitIdle(t, s)
		if after := userWindows(t, s); after != before {
			t.Errorf("the user's windows changed:\nbefore %s\nafter  %s", before, after)
		}
		var stats struct {
			Pending int `msgpack:"pending"`
			Temp    int `msgpack:"temp"`
		}
		if err := s.Lua(&stats, `return require("flemma.editor")._stats()`); err != nil {
			t.Fatal(err)
		}
		if stats.Pending != 0 || stats.Temp != 0 {
			t.Errorf("left behind: %d questions, %d hidden buffers", stats.Pending, stats.Temp)
		}
		var events int
		if err := s.Lua(&events, `return _G.filetype_events[...] or 0`, filepath.Join(proj, "lib", "lib.go")); err != nil {
			t.Fatal(err)
		}
		if events != 0 {
			t.Errorf("lib/lib.go, loaded hidden for gopls, ran %d FileType autocommands", events)
		}
		var listed bool
		if err := s.Lua(&listed, `return vim.fn.buflisted(vim.fn.bufnr(...)) == 1`, filepath.Join(proj, "lib", "lib.go")); err != nil {
			t.Fatal(err)
		}
		if listed {
			t.Error("lib/lib.go is left in the buffer list")
		}
		var more struct {
			Listed bool `msgpack:"listed"`
			Loaded bool `msgpack:"loaded"`
		}
		if err := s.Lua(&more, `local b = vim.fn.bufnr(...); return { listed = b ~= -1 and vim.fn.buflisted(b) == 1, loaded = b ~= -1 and vim.api.nvim_buf_is_loaded(b) }`, filepath.Join(proj, "lib", "more.go")); err != nil {
			t.Fatal(err)
		}
		if !more.Listed || more.Loaded {
			t.Errorf("the user's unloaded buffer of lib/more.go: listed %v, loaded %v (want listed, not loaded)", more.Listed, more.Loaded)
		}
	})
}

// A language server's answer that points into a deny_read file (here a
// module under ~/.ssh-like folder) is filtered: references and definitions
// there are dropped, a hover on a symbol defined there is refused (its text
// is that file's content), and the file itself is refused outright.
func TestEditorToolsDenyReadThroughLSP(t *testing.T) {
	eachNvimEnv(t, editorSetup, goEnv(t), func(t *testing.T, s *nvimtest.Session) {
		proj := editorSession(t, s)
		keys := filepath.Join(filepath.Dir(proj), "home", ".ssh", "keys", "keys.go")
		mustOpen(t, s, "proj/look.chat", chatCalls(
			lspCall("d1", "references", "main.go", 11, "Secret"),
			lspCall("d2", "hover", "main.go", 11, "Secret"),
			lspCall("d3", "definition", "main.go", 11, "Secret"),
			lspCall("d4", "document_symbols", keys, 0, ""),
			lspCall("d5", "workspace_symbols", "", 0, "Secret"),
			[3]string{"d6", "diagnostics", fmt.Sprintf(`{"label": "x", "path": %q, "severity": null}`, keys)},
			lspCall("d7", "references", keys, 4, "Secret"),
		))
		press(t, s, "<C-]>")
		results := map[string]string{}
		for _, id := range []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7"} {
			body, isErr := waitResultLong(t, s, id)
			results[id] = body
			// A refusal names the path the model gave; nothing else may
			// name the module, and nothing may show its content.
			refused := id == "d4" || id == "d6" || id == "d7"
			if strings.Contains(body, "hunter2") || !refused && (strings.Contains(body, ".ssh") || strings.Contains(body, "keys.go")) {
				t.Errorf("%s leaked the deny_read module: %q", id, body)
			}
			switch id {
			case "d1":
				if isErr || !strings.Contains(body, "main.go:11:33") || !strings.Contains(body, "were left out") {
					t.Errorf("d1 references = %q (error %v): want main.go's and a note that the others were left out", body, isErr)
				}
			case "d2":
				if !isErr || !strings.Contains(body, "hover denied") {
					t.Errorf("d2 hover = %q (error %v): want a refusal", body, isErr)
				}
			case "d3":
				if isErr || !strings.Contains(body, "No definition found") {
					t.Errorf("d3 definition = %q (error %v)", body, isErr)
				}
			case "d4", "d6", "d7":
				if !isErr || !strings.Contains(body, "deny_read") {
					t.Errorf("%s = %q (error %v): want the path refused", id, body, isErr)
				}
			}
		}
		// The refused paths never reached Neovim: no buffer holds them.
		var n int
		if err := s.Lua(&n, `return vim.fn.bufnr(...)`, keys); err != nil {
			t.Fatal(err)
		}
		if n != -1 {
			t.Errorf("keys.go was loaded into buffer %d", n)
		}
	})
}

// After write and edit, the result carries the language server's new
// diagnostics of the file; a file no server serves gets nothing.
func TestDiagnosticsAfterEdit(t *testing.T) {
	eachNvimEnv(t, editorSetup, goEnv(t), func(t *testing.T, s *nvimtest.Session) {
		proj := editorSession(t, s)
		if err := s.Lua(nil, saveTool); err != nil {
			t.Fatal(err)
		}
		if err := s.Nv.Command("vsplit"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "proj/edit.chat", chatCalls(
			[3]string{"e1", "edit", `{"label": "break it", "path": "main.go", "oldText": "lib.Helper(), keys.Secret", "newText": "lib.Helper(), keys.Secret, undefinedThing"}`},
		))
		press(t, s, "<C-]>")
		body, isErr := waitResultLong(t, s, "e1")
		if isErr || !strings.Contains(body, "LSP diagnostics after the edit (gopls): 1 error") || !strings.Contains(body, "main.go:11:41: error: undefined: undefinedThing") {
			t.Errorf("edit result = %q (error %v)", body, isErr)
		}
		// The user's buffer of main.go, unmodified, shows the new text.
		var line string
		if err := s.Lua(&line, `return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 10, 11, false)[1]`, filepath.Join(proj, "main.go")); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, "undefinedThing") {
			t.Errorf("main.go's buffer was not read again: %q", line)
		}
		waitIdle(t, s)

		more := "\n@Assistant:\nMore.\n\n**Tool Use:** `write` (`e2`)\n\n```json\n{\"label\": \"new file\", \"path\": \"lib/other.go\", \"content\": \"package lib\\n\\nfunc Other() int { return missing }\\n\"}\n```\n" +
			"\n**Tool Use:** `write` (`e3`)\n\n```json\n{\"label\": \"notes\", \"path\": \"notes/todo.txt\", \"content\": \"todo\\n\"}\n```\n" +
			"\n**Tool Use:** `save` (`e4`)\n\n```json\n{\"path\": \"lib/third.go\", \"text\": \"package lib\\n\\nvar Third = nowhere\\n\"}\n```\n"
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, vim.split(..., "\n", { plain = true }))`, strings.TrimSuffix(more, "\n")); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		body, isErr = waitResultLong(t, s, "e2")
		if isErr || !strings.Contains(body, "lib/other.go:3:27: error: undefined: missing") {
			t.Errorf("write result = %q (error %v)", body, isErr)
		}
		body, isErr = waitResultLong(t, s, "e3")
		if isErr || strings.Contains(body, "LSP") || strings.Contains(body, "diagnostics") {
			t.Errorf("a file no server serves: %q (error %v)", body, isErr)
		}
		body, isErr = waitResultLong(t, s, "e4")
		if isErr || !strings.HasPrefix(body, "saved lib/third.go") || !strings.Contains(body, "lib/third.go:3:13: error: undefined: nowhere") {
			t.Errorf("a Lua tool with the diff capability: %q (error %v)", body, isErr)
		}
		waitIdle(t, s)
		var stats struct {
			Temp int `msgpack:"temp"`
		}
		if err := s.Lua(&stats, `return require("flemma.editor")._stats()`); err != nil {
			t.Fatal(err)
		}
		if stats.Temp != 0 {
			t.Errorf("%d hidden buffers left", stats.Temp)
		}
	})
}
