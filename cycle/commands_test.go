package cycle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The commands on one block: <M-CR> approves and runs the call under the
// cursor, tool:reject writes the user's reason, tool:result the user's own
// result, and tool:list shows who decided what.
func TestCommandsOnABlock(t *testing.T) {
	env := newEnv(t, noSandbox())
	text := "@You:\nhi\n\n@Assistant:\n" +
		"**Tool Use:** `bash` (`toolu_a`)\n\n```json\n{\"command\": \"echo a\", \"label\": \"a\"}\n```\n\n" +
		"**Tool Use:** `bash` (`toolu_b`)\n\n```json\n{\"command\": \"echo b\", \"label\": \"b\"}\n```\n\n" +
		"**Tool Use:** `bash` (`toolu_c`)\n\n```json\n{\"command\": \"echo c\", \"label\": \"c\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.as("press").reply(env.h.Cycle(1))
	env.as("<M-CR> on toolu_a").reply(env.h.onExecuteAt(1, resultLine(env, 1, "toolu_a")))
	env.ed.waitText(t, 1, "a\n```")
	env.ed.waitIdle(t, env.h, 1)
	env.as("<M-CR> on toolu_a again").reply(env.h.onExecuteAt(1, resultLine(env, 1, "toolu_a")))
	env.as(":Flemma tool:reject not now").reply(env.h.SetStatus(1, resultLine(env, 1, "toolu_b"), "rejected", "not now"))
	env.as(":Flemma tool:result toolu_c it is c").reply(env.h.onSetResult(1, "toolu_c", "it is c", false))
	env.as(":Flemma tool:result toolu_zz").reply(env.h.onSetResult(1, "toolu_zz", "x", false))
	env.as("<M-CR> on no block").reply(env.h.onExecuteAt(1, 1))
	env.as("tool:cancel on no block").reply(env.h.onCancelAt(1, 1))
	env.as("<C-c> with nothing running").reply(env.h.Cancel(1))
	env.as("<C-c> again").reply(env.h.Cancel(1))
	env.as("press: the rejection becomes a result").reply(env.h.Cycle(1))
	env.as(":Flemma tool:list").reply(env.h.onToolList(1))
	env.show(1, "after the commands")
	env.golden()
}

// Listings and status: :Flemma tools (with the decision the chain would
// make), :Flemma status, :checkhealth, sandbox:status, the version.
func TestListings(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, "@You:\nhi\n")
	res, err := env.h.onTools(1, "bash")
	if err != nil || !strings.Contains(res.Text, "bash  [built-in]") {
		t.Errorf("tools bash: %q %v", res.Text, err)
	}
	// The presets list the registered tools of their tags (no editor here:
	// no diagnostics, lsp, buffers).
	for _, group := range []string{"  $readonly: read, grep, find, ls", "  $files: read, grep, find, ls, write, edit", "  $commands: read, grep, find, ls, write, edit, bash"} {
		if !slices.Contains(strings.Split(res.Text, "\n"), group) {
			t.Errorf(":Flemma tools does not list the privilege group %q:\n%s", group, res.Text)
		}
	}
	if res, _ := env.h.onTools(1, "no-such-tool"); !strings.Contains(res.Text, "no tools match") {
		t.Errorf("tools no-such-tool: %q", res.Text)
	}
	st, err := env.h.onStatus(1)
	if err != nil || !strings.Contains(st.Text, "provider: anthropic") || st.LinesRead == 0 {
		t.Errorf("status: %+v %v", st, err)
	}
	// Thinking unset: what is sent, not "" (issue 27 item 8).
	if !strings.Contains(st.Text, `thinking="high" (the default)`) {
		t.Errorf("status does not say which thinking is sent:\n%s", st.Text)
	}
	hr, err := env.h.onHealth()
	if err != nil || hr.Version != "test" || len(hr.Lines) < 3 {
		t.Errorf("health: %+v %v", hr, err)
	}
	found := false
	for _, l := range hr.Lines {
		found = found || strings.Contains(l.Text, "crash-recovery journal: "+env.stateDir())
	}
	if !found {
		t.Errorf("health does not name the journal: %+v", hr.Lines)
	}
	// The active provider without a credential is a warning; another
	// provider's is information.
	levels := map[string]string{}
	for _, l := range hr.Lines {
		for _, p := range []string{"anthropic", "openai"} {
			if strings.HasPrefix(l.Text, p+" credentials not set") {
				levels[p] = l.Level
			}
		}
	}
	if levels["anthropic"] != "warn" || levels["openai"] != "info" {
		t.Errorf("credential levels %v; health: %+v", levels, hr.Lines)
	}
	if v, _ := env.h.onVersionInfo(); v.Version != "test" {
		t.Errorf("version %q", v.Version)
	}
	ss, err := env.h.onSandboxStatus(1)
	if err != nil || !strings.Contains(ss.Text, "sandbox: disabled") {
		t.Errorf("sandbox status: %q %v", ss.Text, err)
	}
	if res, _ := env.h.onToolList(1); res.Text != "no tool calls in this buffer" {
		t.Errorf("tool list: %q", res.Text)
	}
	if res, _ := env.h.onJournalLog(1, false); !strings.Contains(res.Text, "nothing for this buffer") {
		t.Errorf("journal log: %q", res.Text)
	}
}

// The helpers Lua tools call: the sandbox's answers, truncation, sizes.
func TestLuaToolHelpers(t *testing.T) {
	env := newEnv(t, map[string]any{"sandbox": map[string]any{"enabled": true, "backend": "none"}})
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, "@You:\nhi\n")
	if w, err := env.h.onSandboxWritable(1, filepath.Join(env.dir, "new.txt")); err != nil || !w.Writable {
		t.Errorf("inside the project: %+v %v", w, err)
	}
	if w, _ := env.h.onSandboxWritable(1, "/etc/flemma-test"); w.Writable {
		t.Error("/etc is writable")
	}
	// No sandbox confines commands (backend "none"): wrap_command says so
	// instead of handing back the bare command (issue 28 item 11).
	if w, err := env.h.onSandboxWrap(1, []string{"true"}); err != nil || len(w.Argv) != 0 || !strings.Contains(w.Error, `no sandbox confines commands: sandbox.backend is "none"`) {
		t.Errorf("wrap: %+v %v", w, err)
	}
	if w, _ := env.h.onSandboxWrap(1, nil); w.Error == "" {
		t.Errorf("wrap of nothing: %+v", w)
	}
	two := 2
	tr, err := env.h.onTruncate("head", "1\n2\n3\n4\n", TruncateOpts{MaxLines: &two})
	if err != nil || !tr.Truncated || tr.OutputLines != 2 || tr.TotalLines < 4 {
		t.Errorf("truncate head: %+v %v", tr, err)
	}
	if tr, _ := env.h.onTruncate("tail", "1\n2\n3\n4\n", TruncateOpts{MaxLines: &two}); !strings.HasSuffix(strings.TrimSpace(tr.Content), "4") {
		t.Errorf("truncate tail: %+v", tr)
	}
	if _, err := env.h.onTruncate("middle", "x", TruncateOpts{}); err == nil {
		t.Error("truncate middle: no error")
	}
	if s, _ := env.h.onFormatSize(2048); s != "2.0KB" {
		t.Errorf("format size: %q", s)
	}
	if r := env.runTool("calculator_async", `{"expression":"1+1"}`); r.IsError || r.Content == "" {
		t.Errorf("calculator_async: %+v", r)
	}
}

// Tools defined in Lua: registered from their JSON definitions, run through
// the Lua callback, previewed by their own format_preview.
func TestLuaTools(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t,
		turn{calls: []call{{"toolu_l", "shout", map[string]any{"text": "hi"}}}},
		turn{text: "ok"},
	), map[string]any{"tools": map[string]any{"auto_approve": []any{"shout"}}}))
	defs, _ := json.Marshal([]any{
		map[string]any{"name": "shout", "description": "Shout.", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}},
			"enabled": true, "has_preview": true, "capabilities": []any{}},
		map[string]any{"name": "", "input_schema": map[string]any{}},
		// Issue 24, class 8: a schema that refers to a file is refused, not opened.
		map[string]any{"name": "peek", "description": "d", "enabled": true,
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "file:///etc/passwd"}}}},
	})
	res, err := env.h.onDefineTools(string(defs))
	if err != nil || len(res.Errors) != 2 || !strings.Contains(strings.Join(res.Errors, "\n"), "register peek: input schema: ") {
		t.Fatalf("define: %+v %v", res, err)
	}
	if _, ok := env.h.Registry.Get("peek"); ok {
		t.Error("a tool whose schema refers to a file was registered")
	}
	if _, err := env.h.onDefineTools("not json"); err == nil {
		t.Error("bad JSON accepted")
	}
	env.lua.previews = map[string]string{"shout": "SHOUT hi"}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	env.press(1)
	env.ed.waitText(t, 1, "ok")
	env.ed.waitIdle(t, env.h, 1)
	if !strings.Contains(env.ed.String(1), "lua shout ran in "+env.dir) {
		t.Fatalf("the Lua tool did not run:\n%s", env.ed.String(1))
	}
	// Its preview, on a pending call.
	env.ed.load(2, filepath.Join(env.dir, "d.chat"), env.dir, "@You:\nhi\n\n@Assistant:\n**Tool Use:** `shout` (`toolu_p`)\n\n```json\n{\"text\": \"x\"}\n```\n")
	env.press(2)
	env.ed.mu.Lock()
	marks := env.ed.bufs[2].marks
	env.ed.mu.Unlock()
	if len(marks) != 1 || !strings.Contains(marks[0].Text, "SHOUT hi") {
		t.Errorf("preview marks: %+v", marks)
	}
}

// Lua approval resolvers, a setup function and a module path are asked
// through the Lua interface; their decisions count for calls from the
// provider.
func TestLuaResolvers(t *testing.T) {
	turns := script(t, turn{calls: []call{bashCall}}, turn{text: "ok"})
	for _, tc := range []struct {
		name  string
		setup map[string]any
		lua   func(env *testEnv)
	}{
		{"registered", nil, func(env *testEnv) {
			if err := env.h.onApprovalRegister(ResolverInfo{Name: "mine", Priority: 500, Description: "test"}); err != nil {
				t.Fatal(err)
			}
			env.lua.decisions["mine"] = "approve"
		}},
		{"setup function", map[string]any{"tools": map[string]any{"auto_approve": map[string]any{"__lua_function": true}}}, func(env *testEnv) {
			env.lua.decisions["tools.auto_approve"] = "approve"
		}},
		{"module", map[string]any{"tools": map[string]any{"auto_approve": "my.policy"}}, func(env *testEnv) {
			env.lua.decisions["my.policy"] = "approve"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, with(noSandbox(), turns, tc.setup))
			tc.lua(env)
			env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
			env.press(1)
			env.ed.waitText(t, 1, "ok")
			env.ed.waitIdle(t, env.h, 1)
			if !strings.Contains(env.ed.String(1), "\nhi\n```") {
				t.Fatalf("the resolver's approval did not run bash:\n%s", env.ed.String(1))
			}
		})
	}
	env := newEnv(t, noSandbox())
	if err := env.h.onApprovalRegister(ResolverInfo{Name: "mine", Priority: 10}); err != nil {
		t.Fatal(err)
	}
	if err := env.h.onApprovalRegister(ResolverInfo{Name: "my.module", Priority: 10}); err == nil {
		t.Error("a resolver name with dots (a module path) was accepted")
	}
	list, _ := env.h.onApprovalList()
	if len(list) < 2 {
		t.Errorf("list: %+v", list)
	}
	if r, _ := env.h.onApprovalUnregister("mine"); !r.Removed {
		t.Error("unregister: not removed")
	}
	env.lua.decisions["boom"] = "error:it broke"
	if err := env.h.onApprovalRegister(ResolverInfo{Name: "boom", Priority: 900}); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo hi", ""))
	if phase, _ := env.press(1); phase != "categorize" {
		t.Errorf("a resolver that raised: phase %s", phase)
	}
}

// Modes: parse_only never runs a tool, disabled denies every call.
func TestModes(t *testing.T) {
	for _, mode := range []string{"parse_only", "disabled"} {
		t.Run(mode, func(t *testing.T) {
			env := newEnv(t, with(noSandbox(), map[string]any{"tools": map[string]any{"mode": mode}}))
			env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo run >> "+filepath.Join(env.dir, "runs"), ""))
			env.as("press").reply(env.h.Cycle(1))
			if strings.Contains(env.ed.String(1), "status=pending") {
				env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
				env.as("press after approving").reply(env.h.Cycle(1))
			}
			if env.runs() != 0 {
				t.Fatal("a tool ran")
			}
			env.show(1, "after")
			env.golden()
		})
	}
}

// A frontmatter with errors stops every phase with a diagnostic.
func TestFrontmatterErrorsBlock(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, "```lua\nflemma.opt.tools.nope = 1\n```\n"+fileWithCall("echo hi", ""))
	phase, msg := env.press(1)
	env.ed.mu.Lock()
	diags := env.ed.bufs[1].diags
	env.ed.mu.Unlock()
	if phase != "blocked" || !strings.Contains(msg, "frontmatter") || len(diags) == 0 {
		t.Fatalf("phase %s %q, diagnostics %+v", phase, msg, diags)
	}
	if res, _ := env.h.onSend(1); res.Phase == "send" && res.Message == "" {
		t.Fatal("sent a buffer whose frontmatter has errors")
	}
}

// Send refuses what it cannot send, with a message that says why.
func TestSendRefusals(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	env := newEnv(t, noSandbox())
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fileWithCall("echo hi", ""))
	env.as("send with a call without result").reply(env.h.onSend(1))
	env.ed.load(2, filepath.Join(env.dir, "y.chat"), env.dir, "@You:\nhi\n")
	env.as("send without a credential").reply(env.h.onSend(2))
	env.ed.load(3, filepath.Join(env.dir, "z.chat"), env.dir, "\n")
	env.as("send of an empty buffer").reply(env.h.onSend(3))
	env.golden()
}

// :Flemma switch and :Flemma autopilot change what the next send does.
func TestSwitchAndAutopilot(t *testing.T) {
	env := newEnv(t, noSandbox())
	for _, args := range []string{"", "nope", "openai gpt-test max_tokens=100 temperature=0.5 thinking=low cache_retention=short", "openai x max_tokens=lots", "openai x temperature=hot", "openai x color=blue", "openai x noequals", "anthropic 'unclosed"} {
		env.as(":Flemma switch " + args).reply(env.h.onSwitch(args))
	}
	for _, a := range []string{"disable", "status", "enable", "bogus"} {
		env.as(":Flemma autopilot:" + a).reply(env.h.Autopilot(a))
	}
	env.golden()
}

// Autopilot stops after max_turns consecutive sends and says so.
func TestAutopilotMaxTurns(t *testing.T) {
	var turns []turn
	for i := range 5 {
		turns = append(turns, turn{calls: []call{{fmt.Sprintf("toolu_ls%d", i), "ls", lsCall.input}}})
	}
	env := newEnv(t, with(noSandbox(), script(t, turns...),
		map[string]any{"tools": map[string]any{"autopilot": map[string]any{"enabled": true, "max_turns": 2}}}))
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nloop\n")
	env.press(1)
	env.ed.wait(t, 1, "autopilot stopped", func(*fakeBuf) bool {
		for _, n := range env.ed.notes {
			if strings.Contains(n, "Autopilot stopped after 2") {
				return true
			}
		}
		return false
	})
	env.ed.waitIdle(t, env.h, 1)
}

// <C-c> while a response streams: the response ends with the interruption
// marker, and the message says so.
func TestCancelWhileStreaming(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t, turn{text: strings.Repeat("word ", 400)})))
	p := env.raw["providers"].(map[string]any)["replay"].(map[string]any)["file"].(string)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte("delay: 20ms\n"+string(b)), 0o600); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	env.press(1)
	if phase, _ := env.press(1); phase != "busy" {
		t.Errorf("a press while streaming: %s", phase)
	}
	env.h.onRefresh(1) // ignored while streaming
	env.as("<C-c>").reply(env.h.Cancel(1))
	env.ed.waitIdle(t, env.h, 1)
	env.ed.wait(t, 1, "the interruption is said", func(*fakeBuf) bool {
		return strings.Contains(strings.Join(env.ed.notes, "\n"), "Response interrupted.")
	})
}

// Forget drops a wiped buffer's state and stops its work.
func TestForget(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, "sleep 30")
	env.press(1)
	env.h.Forget(1)
	env.h.mu.Lock()
	_, left := env.h.bufs[1]
	env.h.mu.Unlock()
	if left {
		t.Error("the buffer's state survived Forget")
	}
}

// tool:undo of a write that created its file removes the file and says
// so, to the user and in the result (issue 27 item 8: it said "Restored").
func TestUndoANewFile(t *testing.T) {
	env := newEnv(t, noSandbox())
	target := filepath.Join(env.dir, "new.txt")
	text := "@You:\nhi\n\n@Assistant:\n**Tool Use:** `write` (`toolu_n`)\n\n```json\n{\"path\": \"new.txt\", \"content\": \"fresh\\n\", \"label\": \"n\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.press(1)
	env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("write did not create the file: %v\n%s", err, env.ed.String(1))
	}
	res, err := env.h.onUndo(1, resultLine(env, 1, "toolu_n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("undo left the file the call created: %v", err)
	}
	if !strings.HasPrefix(res.Message, "Removed ") || !strings.Contains(res.Message, "new.txt (the call created it)") || strings.Contains(res.Message, "Restored") {
		t.Errorf("undo said %q, want that it removed the file the call created", res.Message)
	}
	if got := env.ed.String(1); !strings.Contains(got, "new.txt, which the call created, was removed.]") {
		t.Errorf("the result does not tell the model the file was removed:\n%s", got)
	}
}

// tool:undo puts back what a write changed, and the result says so.
func TestUndoAWrite(t *testing.T) {
	env := newEnv(t, noSandbox())
	target := filepath.Join(env.dir, "notes.txt")
	if err := os.WriteFile(target, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := "@You:\nhi\n\n@Assistant:\n**Tool Use:** `write` (`toolu_w`)\n\n```json\n{\"path\": \"notes.txt\", \"content\": \"after\\n\", \"label\": \"w\"}\n```\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, text)
	env.press(1)
	env.ed.replace(t, 1, "```flemma:tool status=pending", "```flemma:tool status=approved")
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	if b, _ := os.ReadFile(target); string(b) != "after\n" {
		t.Fatalf("write did not write: %q\n%s", b, env.ed.String(1))
	}
	env.as(":Flemma tool:undo").reply(env.h.onUndo(1, resultLine(env, 1, "toolu_w")))
	if b, _ := os.ReadFile(target); string(b) != "before\n" {
		t.Fatalf("undo did not restore: %q", b)
	}
	env.as(":Flemma tool:undo on no block").reply(env.h.onUndo(1, 1))
	log, _ := env.h.onJournalLog(1, false)
	if !strings.Contains(log.Text, "toolu_w  write  undone, by user") {
		t.Errorf("journal log: %s", log.Text)
	}
	env.show(1, "undone")
	env.golden()
}

// A finished call whose result never reached the buffer (Neovim stopped
// first) gets its recorded result back on the next press, without running.
func TestRecoverAResultFromTheJournal(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, "echo run >> "+filepath.Join(env.dir, "runs")+"; echo done")
	before := env.ed.String(1)
	env.press(1)
	env.ed.waitText(t, 1, "done\n```")
	env.ed.waitIdle(t, env.h, 1)
	// Neovim stops before the file with the result is saved: the file on
	// disk still holds the approved placeholder.
	env.h.Shutdown()
	env.ed = newFakeEditor()
	env.restart()
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, strings.Replace(before, "status=pending", "status=approved", 1))
	env.as("press in the reopened file").reply(env.h.Cycle(1))
	if env.runs() != 1 || !strings.Contains(env.ed.String(1), "done\n```") {
		t.Fatalf("runs %d:\n%s", env.runs(), env.ed.String(1))
	}
	env.show(1, "recovered")
	env.golden()
}

// The journal cannot be opened (its folder is a file): tools still run,
// the user is told once, and :checkhealth says why.
func TestUnusableJournal(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, with(noSandbox(), map[string]any{"paths": map[string]any{"state": state}}))
	env.userApproves(1, "echo fine")
	env.press(1)
	env.ed.waitText(t, 1, "fine\n```")
	env.ed.waitIdle(t, env.h, 1)
	hr, _ := env.h.onHealth()
	warned := false
	for _, l := range hr.Lines {
		warned = warned || l.Level == "error" && strings.Contains(l.Text, "cannot be opened") && strings.Contains(l.Text, "not a directory")
	}
	if !warned {
		t.Errorf("health: %+v", hr.Lines)
	}
	told := 0
	for _, n := range env.ed.notifications() {
		if strings.Contains(n, "journal cannot be opened") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told %d times that the journal cannot be opened: %q", told, env.ed.notifications())
	}
	if res, _ := env.h.onUndo(1, resultLine(env, 1, "toolu_f1")); !strings.Contains(res.Message, "not available") {
		t.Errorf("undo without a journal: %+v", res)
	}
	if res, _ := env.h.onJournalLog(1, false); !strings.Contains(res.Text, "no journal") {
		t.Errorf("log without a journal: %+v", res)
	}
}

// defineLua registers Lua tools by name (input: any object, so their
// schemas are open: closeSchema).
func (env *testEnv) defineLua(names ...string) {
	env.t.Helper()
	var defs []any
	for _, n := range names {
		defs = append(defs, map[string]any{"name": n, "description": n, "input_schema": map[string]any{"type": "object", "properties": []any{}}, "enabled": true, "open_schema": true})
	}
	b, _ := json.Marshal(defs)
	if res, err := env.h.onDefineTools(string(b)); err != nil || len(res.Errors) > 0 {
		env.t.Fatalf("define: %+v %v", res, err)
	}
}

// Lua tools that answer later, fail with partial output, or break: each
// ends as a result the model can read.
func TestLuaToolOutcomes(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t,
		turn{calls: []call{{"toolu_later", "later", map[string]any{"n": nil}}, {"toolu_fail", "failing", map[string]any{}}, {"toolu_broken", "broken", map[string]any{}}}},
		turn{text: "ok"},
	), map[string]any{"tools": map[string]any{"auto_approve": []any{"later", "failing", "broken"}, "max_concurrent": 0}}))
	env.defineLua("later", "failing", "broken")
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	env.press(1)
	env.ed.waitText(t, 1, "partial")
	env.ed.wait(t, 1, "the three Lua tools called", func(*fakeBuf) bool {
		env.lua.mu.Lock()
		defer env.lua.mu.Unlock()
		return len(env.lua.tokens) == 3
	})
	// The answer of the async tool arrives (flemma.tool_done); a late or
	// unknown one is ignored.
	for _, tk := range env.lua.tokens {
		env.h.onToolDone(tk, LuaResult{Success: true, Output: []any{"done", 1}})
	}
	env.h.onToolDone("no-such-token", LuaResult{Success: true})
	env.ed.waitText(t, 1, "ok")
	env.ed.waitIdle(t, env.h, 1)
	got := env.ed.String(1)
	for _, want := range []string{"[\n  \"done\",\n  1\n]", "it failed", `{"partial":true}`, "Tool 'broken' failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// The user edits the buffer while a response streams (another plugin, or
// :set modifiable): the response finds its place again and goes on.
func TestEditWhileStreaming(t *testing.T) {
	env := newEnv(t, with(noSandbox(), script(t, turn{text: strings.Repeat("word ", 200)})))
	p := env.raw["providers"].(map[string]any)["replay"].(map[string]any)["file"].(string)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte("delay: 1ms\n"+string(b)), 0o600); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	var once sync.Once
	env.ed.beforeApply = func(bufnr int) {
		env.ed.mu.Lock()
		streaming := len(env.ed.bufs[bufnr].lines) > 2
		env.ed.mu.Unlock()
		if streaming {
			once.Do(func() {
				env.ed.mu.Lock()
				env.ed.bufs[bufnr].modifiable = true
				env.ed.mu.Unlock()
				if err := env.ed.edit(bufnr, 0, 0, "a line above"); err != nil {
					t.Error(err)
				}
			})
		}
	}
	env.press(1)
	env.ed.waitIdle(t, env.h, 1)
	got := env.ed.String(1)
	if !strings.HasPrefix(got, "a line above\n@You:\nhi\n") || strings.Count(got, "word") != 200 {
		t.Fatalf("the response or the edit was lost:\n%s", got)
	}
}

// <C-c> on one running call (tool:cancel) and the running indicator that
// refreshes show while it runs.
func TestCancelOneRunningCall(t *testing.T) {
	env := newEnv(t, noSandbox())
	env.userApproves(1, "sleep 30")
	env.press(1)
	env.ed.wait(t, 1, "the running indicator", func(b *fakeBuf) bool {
		for _, m := range b.marks {
			if strings.Contains(m.Text, "running") {
				return true
			}
		}
		return false
	})
	env.h.onRefresh(1)
	env.as("tool:cancel on the call").reply(env.h.onCancelAt(1, resultLine(env, 1, "toolu_f1")))
	env.ed.waitText(t, 1, "User aborted tool execution.")
	env.ed.waitIdle(t, env.h, 1)
}

// A frontmatter narrows the buffer's tools, concurrency and turns; it
// cannot select a tool setup leaves disabled unless the user trusts it.
func TestFrontmatterOptions(t *testing.T) {
	env := newEnv(t, noSandbox())
	fm := "```lua\nflemma.opt.tools = { \"bash\", \"calculator_async\" }\nflemma.opt.tools.max_concurrent = 1\nflemma.opt.tools.autopilot = { enabled = false, max_turns = 3 }\n```\n@You:\nhi\n"
	env.ed.load(1, filepath.Join(env.dir, "x.chat"), env.dir, fm)
	st, err := env.h.onStatus(1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Text, "tools in this buffer: bash\n") || !strings.Contains(st.Text, "autopilot: false") {
		t.Errorf("untrusted frontmatter:\n%s", st.Text)
	}
	env.ed.mu.Lock()
	env.ed.bufs[1].trusted = true
	env.ed.mu.Unlock()
	st, _ = env.h.onStatus(1)
	if !strings.Contains(st.Text, "tools in this buffer: bash, calculator_async\n") {
		t.Errorf("trusted frontmatter:\n%s", st.Text)
	}
	eff := env.h.session(1).effective(nil)
	conc, turns := eff.MaxConcurrent, eff.MaxTurns
	if conc != 1 || turns != 3 {
		t.Errorf("max_concurrent %d, max_turns %d", conc, turns)
	}
}

// :Flemma tools says what the cycle does: for a call the model makes, the
// decision it shows is the one the cycle makes (with the sandbox resolver
// when bubblewrap works here, without when it does not).
func TestToolsListingMatchesTheCycle(t *testing.T) {
	env := newEnv(t, with(script(t, turn{calls: []call{bashCall}}, turn{text: "ok"}),
		map[string]any{"tools": map[string]any{"autopilot": map[string]any{"enabled": false}}}))
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nhi\n")
	res, err := env.h.onTools(1, "bash")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`approval: (\w+)`).FindStringSubmatch(res.Text)
	if listed == nil {
		t.Fatalf("no approval in %q", res.Text)
	}
	env.press(1) // the response with the call
	env.ed.waitIdle(t, env.h, 1)
	env.press(1) // categorize
	env.ed.waitIdle(t, env.h, 1)
	ran := strings.Contains(env.ed.String(1), "hi\n```")
	pending := strings.Contains(env.ed.String(1), "status=pending")
	if listed[1] == "approve" && !ran || listed[1] == "require_approval" && (ran || !pending) || listed[1] != "approve" && listed[1] != "require_approval" {
		t.Fatalf(":Flemma tools says %s; the cycle did:\n%s", listed[1], env.ed.String(1))
	}
}

// How :Flemma tool:list says a call's run ended.
func TestRanCallString(t *testing.T) {
	for _, tt := range []struct {
		r    ranCall
		want string
	}{
		{ranCall{duration: 11400 * time.Microsecond}, "ran in 11ms"},
		{ranCall{duration: 2345 * time.Millisecond}, "ran in 2.3s"},
		{ranCall{duration: 30 * time.Second, isError: true, kind: "Timeout"}, "Timeout after 30s"},
		{ranCall{duration: 80 * time.Millisecond, isError: true, kind: "ToolError"}, "ToolError after 80ms"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
}

// :Flemma tools renders a schema for people: one line per parameter, the
// required ones first, with its type and description (issue 27 item 8).
func TestSchemaLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema map[string]any
		want   []string
	}{
		{"none", nil, []string{"parameters: none"}},
		{"write", map[string]any{"type": "object", "required": []any{"path", "content"}, "properties": map[string]any{
			"label":   map[string]any{"type": "string", "description": "What it is for"},
			"content": map[string]any{"type": "string", "description": "The text\nall of it"},
			"path":    map[string]any{"type": "string", "description": "The file"},
			"mode":    map[string]any{"enum": []any{"a", "b"}},
			"tags":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"timeout": map[string]any{"type": []any{"integer", "null"}},
		}}, []string{
			"parameters:",
			"  path     string, required  The file",
			"  content  string, required  The text …",
			"  label    string  What it is for",
			"  mode     one of a, b",
			"  tags     array of string",
			"  timeout  integer | null",
		}},
	} {
		if got := schemaLines(tc.schema); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
