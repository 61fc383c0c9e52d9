package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// toolChat is a conversation whose assistant calls tool `name` with input.
func toolChat(name, id, input string) string {
	return "@You:\nPlease.\n\n@Assistant:\nCalling " + name + ".\n\n**Tool Use:** `" + name + "` (`" + id + "`)\n\n```json\n" + input + "\n```\n"
}

// resultOf returns the body of id's result block in text, or "" if none.
func resultOf(text, id string) (body string, isError bool, ok bool) {
	h := "**Tool Result:** `" + id + "`"
	i := strings.Index(text, h)
	if i < 0 {
		return "", false, false
	}
	rest := text[i+len(h):]
	isError = strings.HasPrefix(rest, " (error)")
	open := strings.Index(rest, "```")
	if open < 0 {
		return "", isError, false
	}
	rest = rest[open:]
	nl := strings.Index(rest, "\n")
	fence := strings.TrimRight(rest[:strings.IndexFunc(rest, func(r rune) bool { return r != '`' })], "\n")
	info := rest[len(fence):nl]
	if strings.HasPrefix(info, "flemma:tool") {
		return "", isError, false // still a placeholder
	}
	rest = rest[nl+1:]
	end := strings.Index(rest, "\n"+fence)
	if end < 0 {
		if strings.HasPrefix(rest, fence) {
			return "", isError, true
		}
		return "", isError, false
	}
	return rest[:end], isError, true
}

// waitLua waits until the Lua expression expr is true.
func waitLua(t *testing.T, s *nvimtest.Session, expr, what string) {
	t.Helper()
	if _, err := s.Wait(10*time.Second, func(string) bool {
		var ok bool
		_ = s.Lua(&ok, "return "+expr)
		return ok
	}); err != nil {
		t.Fatalf("never: %s (%s)", what, expr)
	}
}

// releaseSlow finishes the slow_async call started with a negative ms once
// its execute has run.
func releaseSlow(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	waitLua(t, s, "_G.release_slow ~= nil", "the tool's execute ran")
	if err := s.Lua(nil, "_G.release_slow()"); err != nil {
		t.Fatal(err)
	}
}

func waitResult(t *testing.T, s *nvimtest.Session, id string) (string, bool) {
	t.Helper()
	var body string
	var isErr bool
	got, err := s.Wait(10*time.Second, func(x string) bool {
		var ok bool
		body, isErr, ok = resultOf(x, id)
		return ok
	})
	if err != nil {
		t.Fatalf("no result for %s:\n%s\nmessages: %s", id, got, s.Messages())
	}
	return body, isErr
}

const registerTools = `
local tools = require("flemma.tools")
tools.register("echo_ctx", {
  description = "Report the execution context",
  input_schema = { type = "object", properties = { x = { type = "string" } }, required = { "x" } },
  execute = function(input, ctx)
    return { success = true, output = {
      bufnr = ctx.bufnr, cwd = ctx.cwd, timeout = ctx.timeout, dirname = ctx.__dirname,
      filename = ctx.__filename, resolved = ctx.path.resolve("sub/file.txt"), x = input.x,
      config = ctx:get_config(), max_lines = ctx.truncate.MAX_LINES, max_bytes = ctx.truncate.MAX_BYTES,
    } }
  end,
})
tools.register("boom", {
  description = "Throws",
  input_schema = { type = "object", properties = {} },
  execute = function()
    error("cannot open /home/alice/.secrets/token.txt: denied")
  end,
})
tools.register("slow_async", {
  description = "Answers after a timer",
  async = true,
  input_schema = { type = "object", properties = { ms = { type = "number" } }, required = { "ms" } },
  execute = function(input, ctx, callback)
    _G.flemma_test_started = true
    if input.ms < 0 then
      _G.release_slow = function()
        callback({ success = true, output = "released" })
      end
      return function() end
    end
    local timer = vim.loop.new_timer()
    timer:start(input.ms, 0, vim.schedule_wrap(function()
      timer:close()
      callback({ success = true, output = "waited " .. input.ms .. "ms" })
      callback({ success = true, output = "second call must be ignored" })
    end))
    return function()
      _G.flemma_test_cancelled = true
      if not timer:is_closing() then timer:close() end
    end
  end,
})
`

const approveAll = `{ tools = { auto_approve = { "$default", "echo_ctx", "boom", "slow_async", "shout", "late_tool", "calculator" }, modules = { "flemma_test.tools" } } }`

func startTools(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	if err := s.Lua(nil, `vim.opt.runtimepath:append(...)`, nvimtest.RepoRoot()+"/testdata"); err != nil {
		t.Fatal(err)
	}
	if err := s.Lua(nil, registerTools); err != nil {
		t.Fatal(err)
	}
}

func TestLuaToolContext(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		if err := s.Lua(nil, `require("flemma").setup(vim.tbl_deep_extend("force", require("flemma").config(), { tools = { echo_ctx = { greeting = "hi" } } }))`); err != nil {
			t.Fatal(err)
		}
		buf := mustOpen(t, s, "proj/ctx.chat", toolChat("echo_ctx", "t1", `{"x": "hello"}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		if isErr {
			t.Fatalf("echo_ctx failed: %s", body)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("result is not JSON: %v\n%s", err, body)
		}
		dir := s.Dir + "/proj"
		want := map[string]any{
			"bufnr": float64(buf), "cwd": s.Dir, "timeout": float64(30), "dirname": dir,
			"filename": dir + "/ctx.chat", "resolved": dir + "/sub/file.txt", "x": "hello",
			"max_lines": float64(2000), "max_bytes": float64(51200),
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("ctx %s = %v, want %v", k, got[k], v)
			}
		}
		if cfg, _ := got["config"].(map[string]any); cfg["greeting"] != "hi" {
			t.Errorf("ctx:get_config() = %v, want {greeting = hi}", got["config"])
		}
	})
}

func TestLuaToolErrorIsScrubbed(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "boom.chat", toolChat("boom", "t1", `{}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		if !isErr || body != `{"error":"InternalError","message":"Tool 'boom' failed — see logs"}` {
			t.Errorf("boom result = %q (error %v)", body, isErr)
		}
		if all := text(t, s); strings.Contains(all, "alice") || strings.Contains(all, "secrets") {
			t.Errorf("the path leaked into the buffer:\n%s", all)
		}
		if !strings.Contains(s.HostLog(), "/home/alice/.secrets/token.txt") {
			t.Errorf("the detail is not in the host log")
		}
	})
}

func TestLuaToolValidation(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "v.chat", toolChat("echo_ctx", "t1", `{"y": 1}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		if !isErr || !strings.Contains(body, "Invalid input for tool 'echo_ctx'") || !strings.Contains(body, "x") {
			t.Errorf("validation result = %q (error %v)", body, isErr)
		}
	})
}

func TestAsyncLuaTool(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "a.chat", toolChat("slow_async", "t1", `{"ms": -1}`))
		press(t, s, "<C-]>")
		// ms -1 waits for _G.release_slow: the tool surely runs while the
		// lock is checked.
		waitLua(t, s, "_G.release_slow ~= nil", "the tool's execute ran")
		var modifiable bool
		if err := s.Lua(&modifiable, "return vim.bo.modifiable"); err != nil || modifiable {
			t.Errorf("buffer modifiable while the tool runs = %v, %v; want false", modifiable, err)
		}
		releaseSlow(t, s)
		body, isErr := waitResult(t, s, "t1")
		if isErr || body != "released" {
			t.Errorf("slow_async = %q (error %v)", body, isErr)
		}
	})
}

func TestAsyncLuaToolCancel(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "c.chat", toolChat("slow_async", "t1", `{"ms": 20000}`))
		press(t, s, "<C-]>")
		waitRunning(t, s, 1)
		// The call shows as running once the host starts it; its execute
		// runs a moment later: cancel once it has, so that there is a
		// cancel function to call.
		waitLua(t, s, "_G.flemma_test_started == true", "the tool's execute ran")
		press(t, s, "<C-c>")
		body, isErr := waitResult(t, s, "t1")
		if !isErr || body != "User aborted tool execution." {
			t.Errorf("cancelled result = %q (error %v)", body, isErr)
		}
		var cancelled bool
		if err := s.Lua(&cancelled, "return _G.flemma_test_cancelled == true"); err != nil || !cancelled {
			t.Errorf("the tool's cancel function was not called (%v)", err)
		}
		var modifiable bool
		if _, err := s.Wait(2*time.Second, func(string) bool {
			_ = s.Lua(&modifiable, "return vim.bo.modifiable")
			return modifiable
		}); err != nil {
			t.Error("buffer not modifiable again after cancel")
		}
	})
}

func TestModuleTool(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "m.chat", toolChat("shout", "t1", `{"word": "hey"}`))
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "t1"); isErr || body != "HEY" {
			t.Errorf("shout = %q (error %v)", body, isErr)
		}
	})
}

func TestAsyncSource(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		if err := s.Lua(nil, `
			vim.api.nvim_create_autocmd("User", { pattern = "FlemmaBootComplete", callback = function() _G.booted = true end })
			require("flemma.tools").register(function(register, done)
				-- The test says when the source finishes (after the press).
				_G.finish_source = function()
					register("late_tool", {
						description = "Registered late",
						input_schema = { type = "object", properties = {} },
						execute = function() return { success = true, output = "late but here" } end,
					})
					done()
					done() -- idempotent
				end
			end)`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "late.chat", toolChat("late_tool", "t1", `{}`))
		press(t, s, "<C-]>")
		waitMessage(t, s, "Waiting for tool definitions to load")
		if err := s.Lua(nil, "_G.finish_source()"); err != nil {
			t.Fatal(err)
		}
		if body, isErr := waitResult(t, s, "t1"); isErr || body != "late but here" {
			t.Errorf("late_tool = %q (error %v)", body, isErr)
		}
		var booted bool
		if err := s.Lua(&booted, "return _G.booted == true"); err != nil || !booted {
			t.Error("User FlemmaBootComplete did not fire")
		}
	})
}

func TestFlemmaToolsCommand(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		mustOpen(t, s, "x.chat", "@You:\nhi\n")
		var out string
		if err := s.Lua(&out, `require("flemma.host").ensure(require("flemma").config()); return require("flemma.host").request("flemma.tools", 0, "echo").text`); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"echo_ctx", "[lua]", "approval: approve by urn:flemma:approval:config", "  parameters:\n    x  string, required", "  $commands: read, grep, find, ls, diagnostics, lsp, buffers, write, edit, bash"} {
			if !strings.Contains(out, want) {
				t.Errorf(":Flemma tools echo lacks %q:\n%s", want, out)
			}
		}
		press(t, s, ":Flemma tools calc<CR>")
		if out := listingWindow(t, s, "tools"); !strings.Contains(out, "calculator  [built-in]") {
			t.Errorf(":Flemma tools calc output:\n%s", out)
		}
	})
}

// TestLuaToolContextHost: ctx.sandbox and ctx.truncate answer through the
// host.
func TestLuaToolContextHost(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "ctx_host" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			require("flemma.tools").register("ctx_host", {
				description = "sandbox and truncate through ctx",
				input_schema = { type = "object", properties = {} },
				execute = function(input, ctx)
					local big = string.rep("line\n", 3000)
					local tr = ctx.truncate.truncate_head(big)
					local argv = ctx.sandbox.wrap_command({ "echo", "hi" })
					return { success = true, output = {
						here = ctx.sandbox.is_path_writable("out.txt"),
						etc = ctx.sandbox.is_path_writable("/etc/passwd"),
						truncated = tr.truncated, kept = tr.output_lines, total = tr.total_lines,
						size = ctx.truncate.format_size(12345),
						wrapped = type(argv) == "table" and #argv >= 2,
					} }
				end,
			})`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "proj/h.chat", toolChat("ctx_host", "t1", `{}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		var got map[string]any
		if isErr || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("ctx_host = %q (error %v)", body, isErr)
		}
		want := map[string]any{"here": true, "etc": false, "truncated": true, "kept": float64(2000), "total": float64(3001), "size": "12.1KB", "wrapped": true}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
			}
		}
	})
}

// TestRegisterForms: an array of definitions and a { resolve, timeout }
// table; a source that never calls done times out with a warning.
func TestRegisterForms(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "arr_a", "arr_b", "tbl_tool" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			local tools = require("flemma.tools")
			local function def(name, out)
				return { name = name, description = name, input_schema = { type = "object", properties = {} },
					execute = function() return { success = true, output = out } end }
			end
			tools.register({ def("arr_a", "A"), def("arr_b", "B") })
			tools.register({ timeout = 5, resolve = function(register, done) register("tbl_tool", def("tbl_tool", "T")); done() end })
			tools.register({ timeout = 0.2, resolve = function() end }) -- never calls done`); err != nil {
			t.Fatal(err)
		}
		chat := "@You:\ngo\n\n@Assistant:\nThree.\n"
		for _, id := range []string{"arr_a", "arr_b", "tbl_tool"} {
			chat += "\n**Tool Use:** `" + id + "` (`" + id + "_1`)\n\n```json\n{}\n```\n"
		}
		mustOpen(t, s, "forms.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("arr_a_1", "A", false), result("arr_b_1", "B", false), result("tbl_tool_1", "T", false)))
		if msgs := s.Messages(); !strings.Contains(msgs, "Async tool source failed: Timed out after 0.2s") {
			t.Errorf("no timeout warning; messages:\n%s", msgs)
		}
	})
}

// TestCursorAfterResultStay: with "stay" the cursor does not move when a
// result is written.
func TestCursorAfterResultStay(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "calculator" }, cursor_after_result = "stay" } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2")
		mustOpen(t, s, "stay.chat", chat)
		press(t, s, "gg")
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "4", false)))
		if got := cursorLine(t, s); got != 1 {
			t.Errorf("cursor on line %d, want 1 (stay)", got)
		}
	})
}
