package e2e

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// calcCalls is a conversation whose assistant makes one calculator call per
// expression, ids c1, c2, ...
func calcCalls(exprs ...string) string {
	var b strings.Builder
	b.WriteString("@You:\nCompute these.\n\n@Assistant:\nSure.\n")
	for i, e := range exprs {
		fmt.Fprintf(&b, "\n**Tool Use:** `calculator` (`c%d`)\n\n```json\n{\"expression\": %q}\n```\n", i+1, e)
	}
	return b.String()
}

func placeholder(id, status, body string) string {
	s := "**Tool Result:** `" + id + "`\n\n```flemma:tool status=" + status + "\n"
	if body != "" {
		s += body + "\n"
	}
	return s + "```"
}

func result(id, body string, isErr bool) string {
	h := "**Tool Result:** `" + id + "`"
	if isErr {
		h += " (error)"
	}
	return h + "\n\n```\n" + body + "\n```"
}

// withResults is chat followed by a @You: message holding blocks.
func withResults(chat string, blocks ...string) string {
	return strings.TrimSuffix(chat, "\n") + "\n\n@You:\n\n" + strings.Join(blocks, "\n\n")
}

func setLines(t *testing.T, s *nvimtest.Session, content string) {
	t.Helper()
	if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., "\n", { plain = true }))`, content); err != nil {
		t.Fatal(err)
	}
}

func messages(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	return s.Messages()
}

// TestThreePhases walks seed 004's cycle: categorize → the user approves one
// call, rejects one with a message and one without → execute.
func TestThreePhases(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3", "1/0")
		mustOpen(t, s, "three.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", ""), placeholder("c3", "pending", "")))
		// The cursor is on the word to change: the status of the first
		// pending placeholder (issue 27 item 8).
		first := strings.Count(chat, "\n") + 6
		var pos []int
		if err := s.Lua(&pos, "return vim.api.nvim_win_get_cursor(0)"); err != nil {
			t.Fatal(err)
		}
		if want := []int{first, len("```flemma:tool status=")}; !reflect.DeepEqual(pos, want) {
			t.Errorf("cursor at %v, want %v (on the status word of the first pending placeholder)", pos, want)
		}
		// A second press with everything pending changes nothing.
		press(t, s, "<C-]>")
		waitIdle(t, s)
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), placeholder("c2", "pending", ""), placeholder("c3", "pending", "")))

		setLines(t, s, withResults(chat, placeholder("c1", "approved", ""), placeholder("c2", "rejected", "Not this one."), placeholder("c3", "rejected", "")))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "4", false), result("c2", "Not this one.", true), result("c3", "This tool has been rejected by the user.", true)))
		// Phase 3 follows: no credential in the test environment, so it
		// says so and leaves the buffer as it is.
		if _, err := s.Wait(5*time.Second, func(string) bool { return strings.Contains(messages(t, s), "no credential: set ANTHROPIC_API_KEY") }); err != nil {
			t.Errorf("phase 3 did not report the missing credential; messages:\n%s", messages(t, s))
		}
		waitText(t, s, withResults(chat, result("c1", "4", false), result("c2", "Not this one.", true), result("c3", "This tool has been rejected by the user.", true)))
	})
}

// TestPendingAndApprovedContent: text in a pending block is the result; text
// in an approved block is never overwritten and the cycle pauses.
func TestPendingAndApprovedContent(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "content.chat", withResults(chat, placeholder("c1", "pending", "4, I did it by hand"), placeholder("c2", "approved", "my own notes")))
		press(t, s, "<C-]>")
		want := withResults(chat, "**Tool Result:** `c1`\n\n```\n4, I did it by hand\n```", placeholder("c2", "approved", "my own notes"))
		waitText(t, s, want)
		waitMessage(t, s, "edited content inside an approved flemma:tool block")
		if msgs := messages(t, s); !strings.Contains(msgs, "c2") {
			t.Errorf("no warning naming c2; messages:\n%s", msgs)
		}
		if msgs := messages(t, s); strings.Contains(msgs, "credential") {
			t.Errorf("the cycle went on to send despite the protected block; messages:\n%s", msgs)
		}
	})
}

// TestAltEnter: <M-CR> on one call runs just that call.
func TestAltEnter(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "alt.chat", chat)
		line := strings.Index(chat, "`c2`")
		row := strings.Count(chat[:line], "\n") + 1
		if err := s.Lua(nil, `vim.api.nvim_win_set_cursor(0, { ..., 0 })`, row); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<M-CR>")
		waitText(t, s, withResults(chat, result("c2", "9", false)))
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("c1", "pending", ""), result("c2", "9", false)))
		// <M-CR> on the pending placeholder approves and runs it.
		if err := s.Lua(nil, `vim.fn.search("status=pending"); vim.cmd("normal! k")`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<M-CR>")
		waitText(t, s, withResults(chat, result("c1", "4", false), result("c2", "9", false)))
	})
}

// TestParallelOrder: approved async calls finish in any order but their
// results stay in call order; at most max_concurrent run at once.
func TestParallelOrder(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "slow_async" }, max_concurrent = 2 } }`, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		if err := s.Lua(nil, `
			_G.running, _G.peak = 0, 0
			vim.api.nvim_create_autocmd("User", { pattern = "FlemmaToolExecuting", callback = function()
				_G.running = _G.running + 1; _G.peak = math.max(_G.peak, _G.running) end })
			vim.api.nvim_create_autocmd("User", { pattern = "FlemmaToolFinished", callback = function()
				_G.running = _G.running - 1 end })`); err != nil {
			t.Fatal(err)
		}
		chat := "@You:\ngo\n\n@Assistant:\nThree waits.\n"
		for i, ms := range []int{300, 50, 150} {
			chat += fmt.Sprintf("\n**Tool Use:** `slow_async` (`w%d`)\n\n```json\n{\"ms\": %d}\n```\n", i+1, ms)
		}
		mustOpen(t, s, "par.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("w1", "waited 300ms", false), result("w2", "waited 50ms", false), result("w3", "waited 150ms", false)))
		var peak int
		if err := s.Lua(&peak, "return _G.peak"); err != nil {
			t.Fatal(err)
		}
		if peak != 2 {
			t.Errorf("peak concurrency %d, want 2 (max_concurrent)", peak)
		}
	})
}

// TestUndoPhase: one phase is one undo step.
func TestUndoPhase(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "calculator" } } }`, func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2", "3*3")
		mustOpen(t, s, "undo.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, result("c1", "4", false), result("c2", "9", false)))
		// Autopilot's next step (a send, refused: no credential) follows the
		// results: undo once the host is idle, as a user who reads them would.
		waitIdle(t, s)
		press(t, s, "u")
		got := text(t, s)
		if got != withResults(chat, placeholder("c1", "approved", ""), placeholder("c2", "approved", "")) {
			t.Errorf("one undo after execution should restore the approved placeholders, got:\n%s", got)
		}
		press(t, s, "u")
		if got := text(t, s); got != strings.TrimSuffix(chat, "\n") {
			t.Errorf("a second undo should restore the original, got:\n%s", got)
		}
	})
}

// TestSendRefusedWithoutResult: :Flemma send names the call without a result.
func TestSendRefusedWithoutResult(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		chat := calcCalls("2+2")
		mustOpen(t, s, "send.chat", chat)
		press(t, s, ":Flemma send<CR>")
		got := messages(t, s)
		if !strings.Contains(got, "Cannot send") || !strings.Contains(got, "(c1) on line 7") {
			t.Errorf("send not refused naming the call; got:\n%s", got)
		}
		if got := text(t, s); got != strings.TrimSuffix(chat, "\n") {
			t.Errorf(":Flemma send changed the buffer:\n%s", got)
		}
	})
}

// approvalCase: a setup, optional Lua to run first, and the status each call gets.
func TestApprovalSources(t *testing.T) {
	chat := calcCalls("1+1", "6*7")
	cases := []struct {
		name, setup, lua, fm string
		want                 []string // final block per call
	}{
		{"setup list", `{ tools = { auto_approve = { "$default", "calculator" } } }`, "", "",
			[]string{result("c1", "2", false), result("c2", "42", false)}},
		{"preset with deny", `{ tools = { presets = { ["$calc"] = { approve = { "calculator" } }, ["$nocalc"] = { deny = { "calculator" } } }, auto_approve = { "$calc", "$nocalc" } } }`, "", "",
			[]string{result("c1", "The tool was denied by a policy.", true), result("c2", "The tool was denied by a policy.", true)}},
		{"function in setup", `{ tools = { auto_approve = function(tool, input) if input.expression == "1+1" then return true end return false end } }`, "", "",
			[]string{placeholder("c1", "approved", ""), placeholder("c2", "pending", "")}},
		{"module path", `{ tools = { auto_approve = "flemma_test.approval", require_approval = false } }`, "", "",
			[]string{result("c1", "2", false), result("c2", "The tool was denied by a policy.", true)}},
		{"frontmatter list", "", "", "```lua\nflemma.opt.tools.auto_approve = { \"calculator\" }\n```\n",
			[]string{result("c1", "2", false), result("c2", "42", false)}},
		{"lua resolver at 200 overrides config", `{ tools = { auto_approve = { "calculator" } } }`,
			`require("flemma.tools.approval").register("no_big_math", { priority = 200, resolve = function(tool, input) if input.expression == "6*7" then return "deny" end end })`, "",
			[]string{result("c1", "2", false), result("c2", "The tool was denied by a policy.", true)}},
		{"require_approval = false", `{ tools = { auto_approve = {}, require_approval = false } }`, "", "",
			[]string{result("c1", "2", false), result("c2", "42", false)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eachNvim(t, tc.setup, func(t *testing.T, s *nvimtest.Session) {
				if err := s.Lua(nil, `vim.opt.runtimepath:append(...)`, nvimtest.RepoRoot()+"/testdata"); err != nil {
					t.Fatal(err)
				}
				if tc.lua != "" {
					if err := s.Lua(nil, tc.lua); err != nil {
						t.Fatal(err)
					}
				}
				mustOpen(t, s, "a.chat", tc.fm+chat)
				press(t, s, "<C-]>")
				waitText(t, s, withResults(tc.fm+chat, tc.want...))
			})
		})
	}
}

// TestLuaApprovalAPI: register/get/get_all/count/unregister.
func TestLuaApprovalAPI(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		var res struct {
			Count     int      `msgpack:"count"`
			Names     []string `msgpack:"names"`
			Prio      int      `msgpack:"prio"`
			HasFn     bool     `msgpack:"has_fn"`
			Removed   bool     `msgpack:"removed"`
			After     int      `msgpack:"after"`
			DotsError string   `msgpack:"dots_error"`
		}
		err := s.Lua(&res, `
			local a = require("flemma.tools.approval")
			a.register("mine", { resolve = function() return nil end, description = "test" })
			local names = {}
			for _, e in ipairs(a.get_all()) do table.insert(names, e.name) end
			local ok, err = pcall(a.register, "my.mod", { resolve = function() end })
			local out = { count = a.count(), names = names, prio = a.get("mine").priority,
				has_fn = type(a.get("mine").resolve) == "function", dots_error = tostring(err) }
			out.removed = a.unregister("mine")
			out.after = a.count()
			return out`)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"urn:flemma:approval:config", "urn:flemma:approval:frontmatter", "mine", "urn:flemma:approval:sandbox"}
		if strings.Join(res.Names, ",") != strings.Join(want, ",") {
			t.Errorf("get_all order = %v, want %v", res.Names, want)
		}
		if res.Count != 4 || res.Prio != 50 || !res.HasFn || !res.Removed || res.After != 3 {
			t.Errorf("approval API = %+v", res)
		}
		if !strings.Contains(res.DotsError, "must not contain dots") {
			t.Errorf("a dotted name was accepted: %q", res.DotsError)
		}
	})
}

// TestToolListProvenance: :Flemma tool:list names the resolver and rule
// that decided each call.
func TestToolListProvenance(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default" }, presets = { ["$calc"] = { approve = { "calculator" } } } } }`, func(t *testing.T, s *nvimtest.Session) {
		fm := "```lua\nflemma.opt.tools.auto_approve = { \"$calc\" }\n```\n"
		chat := calcCalls("2+2")
		mustOpen(t, s, "list.chat", fm+chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(fm+chat, result("c1", "4", false)))
		waitIdle(t, s) // the run's duration is noted after its result is written
		var out string
		if err := s.Lua(&out, `return require("flemma.host").request("flemma.tool_list", vim.api.nvim_get_current_buf()).text`); err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(`calculator \(c1\): result \(ran in [0-9.]+(µs|ms|s)\)  — approve by urn:flemma:approval:frontmatter \(\$calc\)`)
		if !want.MatchString(out) {
			t.Errorf(":Flemma tool:list = %q, want it to match %s", out, want)
		}
	})
}
