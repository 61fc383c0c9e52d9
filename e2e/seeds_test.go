package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The seeds' remaining promises (issue 28), each as a user meets it.

// TestUnknownToolAnswersAtOnce (item 5): the model calls a tool that does
// not exist; its call gets an error result with a did-you-mean at once,
// nothing asks for approval, and autopilot sends it on.
func TestUnknownToolAnswersAtOnce(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("Reading.", [3]string{"toolu_x", "raed", `{"path": "a.txt"}`}),
		sse("I misspelt it."),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "u.chat", "@You:\nRead a.txt.\n")
		press(t, s, "<C-]>")
		waitHas(t, s, "I misspelt it.")
		waitIdle(t, s)
		body, isErr := waitResult(t, s, "toolu_x")
		if !isErr || !strings.Contains(body, "Unknown tool: raed. Did you mean read?") {
			t.Errorf("result (error %v): %q", isErr, body)
		}
		if x := text(t, s); strings.Contains(x, "status=pending") {
			t.Errorf("the unknown call asked:\n%s", x)
		}
	})
}

// TestChainResultAndMissingStep (item 10): a chain's result carries the
// chain's status and duration; a chain with a step whose tool does not
// exist fails at once, before its first step runs.
func TestChainResultAndMissingStep(t *testing.T) {
	setup := `{ sandbox = { enabled = false }, tools = { auto_approve = { "$default", "show", "broken" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		err := s.Lua(nil, `
			local tools = require("flemma.tools")
			tools.register_chain({ name = "show", steps = {
				{ name = "read", tool = "read", input = { path = "{{ input.path }}", label = "reading" } },
			} })
			tools.register_chain({ name = "broken", steps = {
				{ name = "touch", tool = "write", input = { path = "touched.txt", content = "x" } },
				{ name = "count", tool = "wordcount", input = { text = "{{ steps.touch.output }}" } },
			} })`)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "c.chat", toolChat("show", "ch1", `{"path": "notes.txt"}`)+"\n"+
			"**Tool Use:** `broken` (`ch2`)\n\n```json\n{}\n```\n")
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "ch1")
		if isErr || !regexp.MustCompile(`chain show: all 1 steps ok in \d+ ms`).MatchString(body) || !strings.Contains(body, `chain: {"status":"ok","duration_ms":`) {
			t.Errorf("result (error %v):\n%s", isErr, body)
		}
		body, isErr = waitResult(t, s, "ch2")
		if !isErr || !strings.Contains(body, "Tool chain 'broken' cannot run: step 2 'count': Unknown tool: wordcount.") {
			t.Errorf("result (error %v):\n%s", isErr, body)
		}
		waitIdle(t, s)
		if _, err := os.Stat(filepath.Join(s.Dir, "touched.txt")); err == nil {
			t.Errorf("the broken chain's first step ran")
		}
	})
}

// waitHas waits until the current buffer holds want.
func waitHas(t *testing.T, s *nvimtest.Session, want string) {
	t.Helper()
	if got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, want) }); err != nil {
		t.Fatalf("buffer never held %q:\n%s\nmessages: %s", want, got, s.Messages())
	}
}

// bufHas waits until buffer bufnr (current or not) holds want.
func bufHas(t *testing.T, s *nvimtest.Session, bufnr int, want string) {
	t.Helper()
	var got string
	if _, err := s.Wait(15*time.Second, func(string) bool {
		_ = s.Lua(&got, `return table.concat(vim.api.nvim_buf_get_lines(..., 0, -1, false), "\n")`, bufnr)
		return strings.Contains(got, want)
	}); err != nil {
		t.Fatalf("buffer %d never held %q:\n%s\nmessages: %s", bufnr, want, got, s.Messages())
	}
}

// requestTools are the tool names of the i-th request the server received.
func requestTools(f *fakeAnthropic, i int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	if i < len(f.bodies) {
		list, _ := f.bodies[i]["tools"].([]any)
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				names = append(names, fmt.Sprint(m["name"]))
			}
		}
	}
	return names
}

const lateSource = `
local n = ...
require("flemma.tools").register(function(register, done)
  _G["finish_source_" .. n] = function()
    register("late_" .. n, {
      description = "A tool that loads late",
      input_schema = { type = "object", properties = { x = { type = "string" } } },
      execute = function(input) return { success = true, output = "late " .. n .. ": " .. tostring(input.x) } end,
    })
    done()
  end
end)`

// TestSendWaitsForToolSources (item 1): a <C-]> and a :Flemma send made
// while an async tool source loads wait for it, and go on for their buffer
// when it is done although the cursor is in another window by then; the
// request carries the late tools.
func TestSendWaitsForToolSources(t *testing.T) {
	f := &fakeAnthropic{turns: []string{"", sse("Done once."), sse("Done twice.")}} // by the number of assistant messages
	eachNvimSend(t, f, `, tools = { auto_approve = { "$default", "late_one" } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, lateSource, "one"); err != nil {
			t.Fatal(err)
		}
		buf := mustOpen(t, s, "w.chat", toolChat("late_one", "l1", `{"x": "hi"}`))
		press(t, s, "<C-]>")
		waitLua(t, s, `vim.fn.execute("messages"):find("Waiting for tool definitions", 1, true) ~= nil`, "the press says it waits")
		press(t, s, ":new<CR>") // the user goes elsewhere
		if err := s.Lua(nil, "_G.finish_source_one()"); err != nil {
			t.Fatal(err)
		}
		bufHas(t, s, buf, "late one: hi")
		bufHas(t, s, buf, "Done once.")
		if names := requestTools(f, 0); !slices.Contains(names, "late_one") {
			t.Errorf("the request's tools %q lack late_one", names)
		}

		// :Flemma send, in the chat's window, while another source loads.
		if err := s.Lua(nil, lateSource, "two"); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":q<CR>")
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, { "Once more." })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, ":Flemma send<CR>")
		press(t, s, ":new<CR>")
		if err := s.Lua(nil, "_G.finish_source_two()"); err != nil {
			t.Fatal(err)
		}
		bufHas(t, s, buf, "Done twice.")
		if names := requestTools(f, 1); !slices.Contains(names, "late_two") {
			t.Errorf("the request's tools %q lack late_two", names)
		}
	})
}

// TestHostKilledDuringApprovedBash (item 4): the user approves a bash; the
// host is killed while it runs. On the next press (a new host, the same
// Neovim) the call is not run again, and the user is told it was
// interrupted and may have partly run, with resume and discard offered —
// not "it already ran … approve it yourself". Discard gives it its error
// result.
func TestHostKilledDuringApprovedBash(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false } }`, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "kill")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "kill/k.chat", bashCalls(t, "echo run >> count.txt; sleep 60"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", "pending")
		waitIdle(t, s)
		cursorTo(t, s, "status=pending")
		press(t, s, "<M-CR>") // the user's approval: it runs
		waitFile(t, filepath.Join(dir, "count.txt"), "run\n")
		if err := syscall.Kill(hostPID(t, s), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitLua(t, s, "vim.bo.modifiable", "the plugin unlocks the buffer of a dead host")
		press(t, s, "<C-]>")
		waitStatus(t, s, "b1", "pending")
		waitMessage(t, s, "interrupted")
		m := s.Messages()
		for _, want := range []string{"may have partly run", ":Flemma tool:resume", ":Flemma tool:discard"} {
			if !strings.Contains(m, want) {
				t.Errorf("messages lack %q:\n%s", want, m)
			}
		}
		if strings.Contains(m, "already ran") {
			t.Errorf("the ledger's word was shown:\n%s", m)
		}
		waitIdle(t, s)
		cursorTo(t, s, "status=pending")
		press(t, s, ":Flemma tool:discard<CR>")
		body, isErr := waitResult(t, s, "b1")
		if !isErr || !strings.Contains(body, "interrupted") || !strings.Contains(body, "may have partly run") {
			t.Errorf("discarded result (error %v): %q", isErr, body)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "count.txt")); string(b) != "run\n" {
			t.Errorf("the command ran again: %q", b)
		}
	})
}

// TestApproveAllRejectAll (item 7): :Flemma tool:approve-all in the
// message of a response approves every call that waits (each as the
// user's own decision: they run on the next <C-]>, in a file whose calls
// would otherwise ask); the configured key rejects all the calls of
// another response.
func TestApproveAllRejectAll(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false }, keymaps = { tool_reject_all = "gR" } }`, func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "batch")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustOpenForeign(t, s, "batch/a.chat", bashCalls(t, "echo one > one.txt", "echo two > two.txt"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b2", "pending")
		waitIdle(t, s)
		cursorTo(t, s, "status=pending")
		press(t, s, ":Flemma tool:approve-all<CR>")
		waitStatus(t, s, "b1", "approved")
		waitStatus(t, s, "b2", "approved")
		waitMessage(t, s, "Approved 2 call(s)")
		waitIdle(t, s)
		press(t, s, "<C-]>")
		waitResult(t, s, "b2")
		waitFile(t, filepath.Join(dir, "one.txt"), "one\n")
		waitFile(t, filepath.Join(dir, "two.txt"), "two\n")

		mustOpenForeign(t, s, "batch/b.chat", bashCalls(t, "echo three > three.txt", "echo four > four.txt"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b2", "pending")
		waitIdle(t, s)
		cursorTo(t, s, "Tool Use")
		press(t, s, "gR")
		waitStatus(t, s, "b1", "rejected")
		waitStatus(t, s, "b2", "rejected")
		waitIdle(t, s)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "b2"); !isErr || !strings.Contains(body, "rejected by the user") {
			t.Errorf("b2 (error %v): %q", isErr, body)
		}
		if _, err := os.Stat(filepath.Join(dir, "three.txt")); err == nil {
			t.Errorf("a rejected call ran")
		}
	})
}

// TestTimeoutClasses (item 2): tools.timeouts gives bash its own class
// (here 3 s) while tools.default_timeout stays the default class (1 s):
// a 2 s command runs to its end, a Lua tool that takes 1.5 s times out.
// The model's timeout is capped by the class, as the preview says, and
// :Flemma tools shows every tool's limit.
func TestTimeoutClasses(t *testing.T) {
	setup := `{ sandbox = { enabled = false }, tools = { default_timeout = 1, timeouts = { bash = 3 },
		auto_approve = { "$default", "bash", "dawdle" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `require("flemma.tools").register("dawdle", {
			description = "Answers after some milliseconds", async = true,
			input_schema = { type = "object", properties = { ms = { type = "number" } }, required = { "ms" } },
			execute = function(input, ctx, callback)
				local timer = vim.loop.new_timer()
				timer:start(input.ms, 0, vim.schedule_wrap(function() timer:close(); callback({ success = true, output = "done" }) end))
				return function() if not timer:is_closing() then timer:close() end end
			end,
		})`); err != nil {
			t.Fatal(err)
		}
		chat := bashCalls(t, "sleep 2; echo slept") + "\n**Tool Use:** `dawdle` (`d1`)\n\n```json\n{\"ms\": 1500}\n```\n"
		buf := mustOpen(t, s, "t.chat", chat)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "b1"); isErr || !strings.Contains(body, "slept") {
			t.Errorf("bash (error %v): %q", isErr, body)
		}
		if body, isErr := waitResult(t, s, "d1"); !isErr || !strings.Contains(body, "timed out") {
			t.Errorf("dawdle (error %v): %q", isErr, body)
		}
		waitIdle(t, s)
		out := hostText(t, s, "flemma.tools", buf, "")
		for _, want := range []string{"timeout: 3s (tools.timeouts.bash)", "timeout: 1s (tools.timeouts.default)"} {
			if !strings.Contains(out, want) {
				t.Errorf(":Flemma tools lacks %q:\n%s", want, out)
			}
		}

		// A pending call asking for more than its class: capped, and said.
		mustOpenForeign(t, s, "p.chat", toolChat("bash", "p1", `{"command": "make", "label": "building", "timeout": 900}`))
		press(t, s, "<C-]>")
		waitStatus(t, s, "p1", "pending")
		waitIdle(t, s)
		if m := marks(t, s); len(m) != 1 || m[0].Text != "bash: $ make  # building  (timeout 3s: 900s asked, capped)" {
			t.Errorf("marks = %+v", m)
		}
	})
}

// TestReadsConfinedToTheProject (item 6): with the default policy the
// model's read of a project file runs, its read of /etc/passwd asks (the
// diagnostic names the path), its read of a deny_read file inside the
// project is refused even when the user approves it; with
// sandbox.readable = { "/" } the read of /etc/passwd runs as before.
func TestReadsConfinedToTheProject(t *testing.T) {
	chat := toolChat("read", "r1", `{"path": "notes.txt", "label": "notes", "offset": null, "limit": null}`) + "\n" +
		"**Tool Use:** `read` (`r2`)\n\n```json\n{\"path\": \"/etc/passwd\", \"label\": \"users\", \"offset\": null, \"limit\": null}\n```\n\n" +
		"**Tool Use:** `read` (`r3`)\n\n```json\n{\"path\": \".env\", \"label\": \"env\", \"offset\": null, \"limit\": null}\n```\n"
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		for name, body := range map[string]string{"notes.txt": "hello\n", ".env": "TOKEN=x\n"} {
			if err := os.WriteFile(filepath.Join(s.Dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustOpen(t, s, "r.chat", chat)
		press(t, s, "<C-]>")
		waitStatus(t, s, "r2", "pending")
		waitStatus(t, s, "r1", "approved")
		waitIdle(t, s)
		var diags []string
		if err := s.Lua(&diags, `local out = {} for _, d in ipairs(vim.diagnostic.get(0)) do out[#out + 1] = d.message end return out`); err != nil {
			t.Fatal(err)
		}
		if x := strings.Join(diags, "\n"); !strings.Contains(x, "reads /etc/passwd, outside the project") {
			t.Errorf("diagnostics:\n%s", x)
		}
		cursorTo(t, s, "`r3`")
		press(t, s, "<M-CR>") // the user approves reading .env: deny_read still refuses
		if body, isErr := waitResult(t, s, "r3"); !isErr || !strings.Contains(body, "deny_read") {
			t.Errorf(".env (error %v): %q", isErr, body)
		}
	})
	eachNvim(t, `{ sandbox = { readable = { "/" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "r.chat", toolChat("read", "r2", `{"path": "/etc/passwd", "label": "users", "offset": null, "limit": null}`))
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "r2"); isErr || !strings.Contains(body, "root:") {
			t.Errorf("/etc/passwd (error %v): %q", isErr, body)
		}
	})
}

// TestLuaToolSchemasClosed (item 8): a call to a Lua tool with a field its
// schema never named is refused (the model is told which field), before
// execute runs; a tool registered with open_schema = true takes it, and
// the schema sent to the model is closed for the one, open for the other.
func TestLuaToolSchemasClosed(t *testing.T) {
	f := &fakeAnthropic{turns: []string{"", sse("Noted.")}} // by the number of assistant messages
	eachNvimSend(t, f, `, tools = { auto_approve = { "$default", "tag_it", "tag_any" } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `
			_G.ran = {}
			local function def(open)
				return {
					description = "Tags a word", open_schema = open,
					input_schema = { type = "object", properties = { word = { type = "string" } }, required = { "word" } },
					execute = function(input) table.insert(_G.ran, input.word) return { success = true, output = "tagged " .. input.word } end,
				}
			end
			require("flemma.tools").register("tag_it", def(nil))
			require("flemma.tools").register("tag_any", def(true))`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "s.chat", toolChat("tag_it", "t1", `{"word": "a", "colour": "red"}`)+"\n"+
			"**Tool Use:** `tag_any` (`t2`)\n\n```json\n{\"word\": \"b\", \"colour\": \"red\"}\n```\n")
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "t1"); !isErr || !strings.Contains(body, "colour") {
			t.Errorf("tag_it (error %v): %q", isErr, body)
		}
		if body, isErr := waitResult(t, s, "t2"); isErr || body != "tagged b" {
			t.Errorf("tag_any (error %v): %q", isErr, body)
		}
		waitHas(t, s, "Noted.")
		var ran []string
		if err := s.Lua(&ran, "return _G.ran"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ran, []string{"b"}) {
			t.Errorf("execute ran for %q", ran)
		}
		f.mu.Lock()
		list, _ := f.bodies[0]["tools"].([]any)
		f.mu.Unlock()
		for _, x := range list {
			m, _ := x.(map[string]any)
			schema, _ := m["input_schema"].(map[string]any)
			switch m["name"] {
			case "tag_it":
				if schema["additionalProperties"] != false {
					t.Errorf("tag_it's schema sent open: %v", schema)
				}
			case "tag_any":
				if _, said := schema["additionalProperties"]; said {
					t.Errorf("tag_any's schema sent closed: %v", schema)
				}
			}
		}
	})
}

// TestAuditLogIsComplete (item 3): the journal's audit log of one
// conversation holds every call with its arguments (redacted) and result,
// and every decision — the user's approval, the user's rejection typed
// into the fence with its reason, :Flemma trust — in :Flemma tool:log and
// in `flemma-host journal --buffer FILE` (JSON lines and --text).
func TestAuditLogIsComplete(t *testing.T) {
	const secret = "abcd1234efgh5678ijkl9012mnop"
	f := &fakeAnthropic{turns: []string{"", sse("Noted.")}} // by the number of assistant messages
	eachNvimSend(t, f, `, sandbox = { enabled = false }`, func(t *testing.T, s *nvimtest.Session) {
		if err := os.MkdirAll(filepath.Join(s.Dir, "audit"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustOpenForeign(t, s, "audit/a.chat", bashCalls(t, "echo one # token="+secret, "rm -rf build"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "b2", "pending")
		waitIdle(t, s)
		press(t, s, ":Flemma trust<CR>")
		cursorTo(t, s, "status=pending")
		press(t, s, "<M-CR>")
		if body, isErr := waitResult(t, s, "b1"); isErr || body != "one" {
			t.Fatalf("b1 (error %v): %q", isErr, body)
		}
		waitIdle(t, s)
		if err := s.Lua(nil, `local n = vim.fn.search("status=pending", "w")
			vim.api.nvim_buf_set_lines(0, n - 1, n, false, { "`+"```"+`flemma:tool status=rejected", "not the build folder" })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "b2"); !isErr || body != "not the build folder" {
			t.Errorf("b2 (error %v): %q", isErr, body)
		}
		waitHas(t, s, "Noted.")
		waitIdle(t, s)

		wantText := []string{
			"b1  bash  approved, by user",
			"b1  bash  ran: ok in ",
			"  result: one\n",
			"b2  bash  rejected, by user (status edit)\n  detail: not the build folder\n  input: {\"command\":\"rm -rf build\"",
			"trusted, by user",
		}
		log := hostText(t, s, "flemma.journal_log", 0, false)
		for _, want := range wantText {
			if !strings.Contains(log, want) {
				t.Errorf(":Flemma tool:log lacks %q:\n%s", want, log)
			}
		}
		var state string
		if err := s.Lua(&state, `return require("flemma.config").state_dir()`); err != nil {
			t.Fatal(err)
		}
		host := filepath.Join(nvimtest.RepoRoot(), "bin", "flemma-host")
		chat := filepath.Join(s.Dir, "audit", "a.chat")
		db := filepath.Join(state, "journal.db")
		out, err := exec.Command(host, "journal", "--db", db, "--buffer", chat, "--results", "--text").CombinedOutput()
		if err != nil {
			t.Fatalf("flemma-host journal --text: %v\n%s", err, out)
		}
		for _, want := range wantText {
			if !strings.Contains(string(out), want) {
				t.Errorf("flemma-host journal --text lacks %q:\n%s", want, out)
			}
		}
		jsonl, err := exec.Command(host, "journal", "--db", db, "--buffer", chat, "--results").CombinedOutput()
		if err != nil {
			t.Fatalf("flemma-host journal: %v\n%s", err, jsonl)
		}
		for _, want := range []string{`"kind":"call","id":`, `"input":"{\"command\":\"echo one # token=[redacted]`, `"result":"one"`, `"decision":"rejected","decided_by":"user (status edit)"`, `"detail":"not the build folder"`} {
			if !strings.Contains(string(jsonl), want) {
				t.Errorf("flemma-host journal lacks %q:\n%s", want, jsonl)
			}
		}
		if strings.Contains(string(out)+string(jsonl)+log, secret) {
			t.Errorf("the audit log holds the secret")
		}
	})
}

// TestSmallPromises (item 11): a response's calls past
// tools.max_calls_per_response get an error result saying so (the first
// run); max_concurrent holding calls back is told; ctx.sandbox.wrap_command
// without a sandbox answers nil and why; a Lua tool's declared reads_path
// capability confines its reads like read's, and a misspelt capability is
// refused at registration.
func TestSmallPromises(t *testing.T) {
	setup := `{ tools = { max_calls_per_response = 2, max_concurrent = 1, auto_approve = { "$default", "calculator", "peek" } } }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "cap.chat", calcCalls("1+1", "2+2", "3+3"))
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "c3"); !isErr || !strings.Contains(body, "Not run: this response made 3 tool calls, and at most 2 of one response run (tools.max_calls_per_response)") {
			t.Errorf("c3 (error %v): %q", isErr, body)
		}
		for _, id := range []string{"c1", "c2"} {
			if body, isErr := waitResult(t, s, id); isErr {
				t.Errorf("%s (error): %q", id, body)
			}
		}
		waitMessage(t, s, "2 calls, 1 at a time (tools.max_concurrent): 1 queued.")
		waitIdle(t, s)

		if err := s.Lua(nil, `
			local tools = require("flemma.tools")
			local function peek(caps)
				return {
					description = "Reports a path", capabilities = caps,
					input_schema = { type = "object", properties = { path = { type = "string" } }, required = { "path" } },
					execute = function(input) return { success = true, output = "peeked " .. input.path } end,
				}
			end
			tools.register("peek", peek({ "reads_path" }))
			tools.register("peek_typo", peek({ "reads_paths" }))`); err != nil {
			t.Fatal(err)
		}
		waitMessage(t, s, `unknown capability "reads_paths"`)
		mustOpenForeign(t, s, "peek.chat", toolChat("peek", "p1", `{"path": "notes.txt"}`)+"\n"+
			"**Tool Use:** `peek` (`p2`)\n\n```json\n{\"path\": \"/etc/passwd\"}\n```\n")
		press(t, s, ":Flemma trust<CR>")
		press(t, s, "<C-]>")
		waitStatus(t, s, "p2", "pending")
		waitStatus(t, s, "p1", "approved")
		waitMessage(t, s, "peek p2 (line 13): reads /etc/passwd, outside the project")
	})
	eachNvim(t, `{ sandbox = { enabled = false }, tools = { auto_approve = { "wrapper" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, `require("flemma.tools").register("wrapper", {
			description = "Wraps a command", input_schema = { type = "object", properties = {} },
			execute = function(_, ctx)
				local argv, err = ctx.sandbox.wrap_command({ "echo", "hi" })
				return { success = true, output = argv and ("wrapped: " .. table.concat(argv, " ")) or ("not wrapped: " .. tostring(err)) }
			end,
		})`); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "w.chat", toolChat("wrapper", "w1", `{}`))
		press(t, s, "<C-]>")
		if body, _ := waitResult(t, s, "w1"); body != "not wrapped: no sandbox confines commands: sandbox.enabled is false; the command was not wrapped" {
			t.Errorf("w1: %q", body)
		}
	})
}

// helpBlock returns the Lua example of doc/flemma.txt (a `>lua` block, its
// four-space indent removed) that contains marker.
func helpBlock(t *testing.T, marker string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "doc", "flemma.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?s)>lua\n(.*?)\n<\n`).FindAllStringSubmatch(string(data), -1) {
		if strings.Contains(m[1], marker) {
			return regexp.MustCompile(`(?m)^    `).ReplaceAllString(m[1], "")
		}
	}
	t.Fatalf("doc/flemma.txt has no Lua block with %q", marker)
	return ""
}

// TestHelpToolFieldsExample (items 9 and 11): the :help example of a
// definition's optional fields, exactly as written, registers and runs:
// word_count's JSON text matches its object output_schema, calc replaces
// the built-in calculator (approved as calculator is). A text result that is not the object its
// output_schema describes fails, saying so.
func TestHelpToolFieldsExample(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default", "word_count", "calculator", "liar" } } }`, func(t *testing.T, s *nvimtest.Session) {
		if err := s.Lua(nil, helpBlock(t, `register("word_count"`)); err != nil {
			t.Fatalf("the help example: %v", err)
		}
		if err := s.Lua(nil, `require("flemma.tools").register("liar", {
			description = "Says it returns an object",
			input_schema = { type = "object", properties = {} },
			output_schema = { type = "object", properties = { words = { type = "integer" } } },
			execute = function() return { success = true, output = "three words" } end,
		})`); err != nil {
			t.Fatal(err)
		}
		buf := mustOpen(t, s, "f.chat", toolChat("word_count", "w1", `{"text": "one two three"}`)+"\n"+
			"**Tool Use:** `calc` (`k1`)\n\n```json\n{\"a\": 2, \"b\": 3}\n```\n\n"+
			"**Tool Use:** `liar` (`l1`)\n\n```json\n{}\n```\n")
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "w1"); isErr || !strings.Contains(body, `"words": 3`) {
			t.Errorf("word_count (error %v): %q", isErr, body)
		}
		if body, isErr := waitResult(t, s, "k1"); isErr || body != "5" {
			t.Errorf("calc (error %v): %q", isErr, body)
		}
		if body, isErr := waitResult(t, s, "l1"); !isErr || !strings.Contains(body, "Tool 'liar' returned text that is not the JSON its output_schema describes") {
			t.Errorf("liar (error %v): %q", isErr, body)
		}
		waitIdle(t, s)
		out := hostText(t, s, "flemma.tools", buf, "")
		if !strings.Contains(out, "word_count") || !strings.Contains(out, "calc") || regexp.MustCompile(`(?m)^calculator\b`).MatchString(out) {
			t.Errorf(":Flemma tools:\n%s", out)
		}
	})
}
