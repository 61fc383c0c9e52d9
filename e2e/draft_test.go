package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// typingState is what a user typing into a locked chat sees: the current
// window's buffer and mode, the chat's text, and how many E21 errors the
// session has given.
type typingState struct {
	Buf   int    `msgpack:"buf"`
	Mode  string `msgpack:"mode"`
	E21   int    `msgpack:"e21"`
	Float bool   `msgpack:"float"`
}

func typing(t *testing.T, s *nvimtest.Session) typingState {
	t.Helper()
	var st typingState
	err := s.Lua(&st, `
		local msgs = vim.api.nvim_exec("messages", true)
		local _, e21 = msgs:gsub("E21", "")
		local e = vim.v.errmsg:find("E21") and 1 or 0
		return { buf = vim.api.nvim_get_current_buf(), mode = vim.api.nvim_get_mode().mode, e21 = e21 + e,
			float = vim.api.nvim_win_get_config(0).relative ~= "" }`)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func input(t *testing.T, s *nvimtest.Session, keys string) {
	t.Helper()
	if _, err := s.Nv.Input(keys); err != nil {
		t.Fatal(err)
	}
}

// TestTypingWhileToolsRun (issue 27 item 5): in a chat locked while a tool
// runs, typing `ihello world` gives no E21 and runs nothing as a command:
// the text goes into a draft window; once the user leaves it and the tool
// is done (here: cancelled), the draft is under the last @You:.
func TestTypingWhileToolsRun(t *testing.T) {
	eachNvim(t, approveAll, func(t *testing.T, s *nvimtest.Session) {
		startTools(t, s)
		chat := toolChat("slow_async", "t1", `{"ms": 20000}`)
		buf := mustOpen(t, s, "draft/tools.chat", chat)
		press(t, s, "<C-]>")
		waitStatus(t, s, "t1", buffer.StatusApproved)
		if err := s.Lua(nil, `vim.v.errmsg = ""; vim.cmd("messages clear")`); err != nil {
			t.Fatal(err)
		}
		before := bufText(t, s, buf)
		var pos []int
		if err := s.Lua(&pos, "return vim.api.nvim_win_get_cursor(0)"); err != nil {
			t.Fatal(err)
		}
		input(t, s, "ihello world")
		waitUntil(t, func() bool { st := typing(t, s); return st.Buf != buf && bufText(t, s, st.Buf) == "hello world" }, "the typed text in a draft")
		st := typing(t, s)
		if st.E21 != 0 || !st.Float || st.Mode != "i" {
			t.Errorf("typing in the locked chat: %+v, want no E21, a draft window in Insert mode", st)
		}
		if got := bufText(t, s, buf); got != before {
			t.Errorf("the locked chat changed while the user typed:\n%s", got)
		}
		// The user leaves the draft and cancels the tool in the chat.
		input(t, s, "<Esc>")
		if err := s.Nv.Command("wincmd p"); err != nil {
			t.Fatal(err)
		}
		var back []int
		if err := s.Lua(&back, "return vim.api.nvim_win_get_cursor(0)"); err != nil {
			t.Fatal(err)
		}
		if cur := typing(t, s); cur.Buf != buf || back[0] != pos[0] {
			t.Errorf("back in the chat: buffer %d cursor %v, want %d and line %d (no key ran as a command)", cur.Buf, back, buf, pos[0])
		}
		press(t, s, "<C-c>")
		got := waitBufText(t, s, buf, func(x string) bool { return strings.HasSuffix(x, "\nhello world") }, "the draft under the last @You:")
		if strings.Count(got, "hello world") != 1 {
			t.Errorf("chat after the draft went in:\n%s", got)
		}
		if n := len(draftWindows(t, s)); n != 0 {
			t.Errorf("%d draft windows left open", n)
		}
	})
}

// TestTypingWhileStreaming (issue 27 item 5, an answer streaming, no tool
// running): the same draft; the user still typing in it when the answer
// ends keeps typing, and <C-]> there puts it under the new @You:.
func TestTypingWhileStreaming(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse(answerLines(30))}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mid, reached := make(chan struct{}), make(chan struct{})
		f.mu.Lock()
		f.hold, f.mid, f.midAt, f.midReached = nil, mid, 10, reached
		f.mu.Unlock()
		buf := mustOpen(t, s, "draft/stream.chat", question)
		press(t, s, "<C-]>")
		waitClosed(t, reached, "the middle of the answer")
		if err := s.Lua(nil, `vim.v.errmsg = ""; vim.cmd("messages clear")`); err != nil {
			t.Fatal(err)
		}
		input(t, s, "oand then?")
		waitUntil(t, func() bool { st := typing(t, s); return st.Buf != buf && bufText(t, s, st.Buf) == "and then?" }, "the typed text in a draft")
		close(mid)
		waitBufText(t, s, buf, func(x string) bool { return strings.HasSuffix(x, "line 30\n\n@You:\n") }, "the whole answer")
		waitIdle(t, s)
		if st := typing(t, s); st.Buf == buf || st.Mode != "i" || st.E21 != 0 {
			t.Errorf("after the answer: %+v, want the user still typing in the draft, no E21", st)
		}
		input(t, s, " Tell me.<C-]>")
		waitBufText(t, s, buf, func(x string) bool { return strings.HasSuffix(x, "line 30\n\n@You:\nand then? Tell me.") }, "the draft under the new @You:")
		if st := typing(t, s); st.Buf != buf || st.Mode != "n" {
			t.Errorf("after <C-]> in the draft: %+v, want the chat in Normal mode", st)
		}
	})
}

func draftWindows(t *testing.T, s *nvimtest.Session) []int {
	t.Helper()
	var wins []int
	if err := s.Lua(&wins, `
		local out = {}
		for _, w in ipairs(vim.api.nvim_list_wins()) do
			if vim.api.nvim_win_get_config(w).relative ~= "" then out[#out + 1] = w end
		end
		return out`); err != nil {
		t.Fatal(err)
	}
	return wins
}

// waitFor waits until cond holds (what: the state waited for).
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never came", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
