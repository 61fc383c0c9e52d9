package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// attachUI attaches a UI of cols×rows to the session, as a terminal does:
// Neovim then redraws, scrolls its windows to their cursor and shows
// hit-enter prompts as a user sees them (what it draws is dropped).
func attachUI(t *testing.T, s *nvimtest.Session, cols, rows int) {
	t.Helper()
	if err := s.Nv.RegisterHandler("redraw", func(...[]any) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.Nv.AttachUI(cols, rows, map[string]any{"rgb": true, "ext_linegrid": true}); err != nil {
		t.Fatal(err)
	}
}

// longChat is a conversation longer than any window, ending with a
// question.
func longChat(turns int) string {
	var b strings.Builder
	for i := 0; i < turns; i++ {
		fmt.Fprintf(&b, "@You:\nQuestion %d?\n\n@Assistant:\nAnswer %d.\n\n", i, i)
	}
	b.WriteString("@You:\nAnd now?\n")
	return b.String()
}

// answerLines is a response of n lines.
func answerLines(n int) string {
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	return strings.Join(lines, "\n")
}

// view is where a window's cursor is and which lines it shows.
type view struct {
	Cursor int `msgpack:"cursor"`
	Top    int `msgpack:"top"`
	Bottom int `msgpack:"bottom"`
	Last   int `msgpack:"last"`
}

func viewOf(t *testing.T, s *nvimtest.Session, win int) view {
	t.Helper()
	var v view
	err := s.Lua(&v, `
		local win = ...
		if win == 0 then win = vim.api.nvim_get_current_win() end
		vim.cmd("redraw")
		local buf = vim.api.nvim_win_get_buf(win)
		return vim.api.nvim_win_call(win, function()
			return { cursor = vim.api.nvim_win_get_cursor(win)[1], top = vim.fn.line("w0"), bottom = vim.fn.line("w$"), last = vim.api.nvim_buf_line_count(buf) }
		end)`, win)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bufText is the text of buffer buf (not necessarily the current one).
func bufText(t *testing.T, s *nvimtest.Session, buf int) string {
	t.Helper()
	var lines []string
	if err := s.Lua(&lines, `return vim.api.nvim_buf_get_lines(..., 0, -1, false)`, buf); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func waitBufText(t *testing.T, s *nvimtest.Session, buf int, cond func(string) bool, what string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := bufText(t, s, buf)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never came; buffer:\n%s\nmessages:\n%s", what, got, s.Messages())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitClosed(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// TestAnswerInView (issue 27 item 2): in a chat longer than the window,
// <C-]> brings the progress line into view; the window follows the answer
// while its cursor is at the end; a cursor the user moved meanwhile stays
// where they put it (no jump to the new @You: at the end); and a user who
// went to another window keeps it, in Insert mode, typing there.
func TestAnswerInView(t *testing.T) {
	// The fake answers turns[n] to a request with n assistant messages.
	f := &fakeAnthropic{}
	for i := 0; i <= 40; i++ {
		f.turns = append(f.turns, sse(answerLines(30)))
	}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		attachUI(t, s, 80, 24)
		reset := func() (hold, mid, reached chan struct{}) {
			hold, mid, reached = make(chan struct{}), make(chan struct{}), make(chan struct{})
			f.mu.Lock()
			f.hold, f.mid, f.midAt, f.midReached = hold, mid, 15, reached
			f.mu.Unlock()
			return
		}
		final := func(x string) bool { return strings.HasSuffix(x, "line 30\n\n@You:\n") }

		t.Run("follows the end", func(t *testing.T) {
			hold, mid, reached := reset()
			buf := mustOpen(t, s, "follow.chat", longChat(40))
			press(t, s, "G")
			press(t, s, "<C-]>")
			waitBufText(t, s, buf, func(x string) bool { return strings.HasSuffix(x, "\n@Assistant:") }, "the @Assistant: line")
			if v := viewOf(t, s, 0); v.Cursor != v.Last || v.Bottom != v.Last {
				t.Errorf("after <C-]>: %+v, want the cursor and the view on the progress line (the last)", v)
			}
			close(hold)
			waitClosed(t, reached, "the middle of the answer")
			waitBufText(t, s, buf, func(x string) bool { return strings.Contains(x, "line 12") }, "the first half of the answer")
			if v := viewOf(t, s, 0); v.Cursor != v.Last || v.Bottom != v.Last {
				t.Errorf("while streaming: %+v, want the view following the end", v)
			}
			close(mid)
			waitBufText(t, s, buf, final, "the whole answer")
			waitIdle(t, s)
			if v := viewOf(t, s, 0); v.Cursor != v.Last || v.Bottom != v.Last {
				t.Errorf("after the answer: %+v, want the cursor under the new @You:", v)
			}
		})

		t.Run("a moved cursor stays", func(t *testing.T) {
			hold, mid, reached := reset()
			buf := mustOpen(t, s, "moved.chat", longChat(40))
			press(t, s, "G")
			press(t, s, "<C-]>")
			close(hold)
			waitClosed(t, reached, "the middle of the answer")
			press(t, s, "30G")
			close(mid)
			waitBufText(t, s, buf, final, "the whole answer")
			waitIdle(t, s)
			if v := viewOf(t, s, 0); v.Cursor != 30 || v.Top > 30 || v.Bottom < 30 {
				t.Errorf("after the answer: %+v, want the cursor and the view where the user put it (line 30)", v)
			}
		})

		t.Run("focus stays in another window", func(t *testing.T) {
			hold, mid, _ := reset()
			buf := mustOpen(t, s, "focus.chat", longChat(40))
			press(t, s, "G")
			var chatWin int
			if err := s.Lua(&chatWin, `return vim.api.nvim_get_current_win()`); err != nil {
				t.Fatal(err)
			}
			press(t, s, "<C-]>")
			close(hold)
			// The user goes to a scratch window below and types there.
			var other, otherBuf int
			if err := s.Lua(&other, `vim.cmd("botright new"); return vim.api.nvim_get_current_win()`); err != nil {
				t.Fatal(err)
			}
			if err := s.Lua(&otherBuf, `return vim.api.nvim_get_current_buf()`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Nv.Input("ihello"); err != nil {
				t.Fatal(err)
			}
			close(mid)
			waitBufText(t, s, buf, final, "the whole answer")
			waitIdle(t, s)
			var st struct {
				Win  int    `msgpack:"win"`
				Mode string `msgpack:"mode"`
			}
			if err := s.Lua(&st, `return { win = vim.api.nvim_get_current_win(), mode = vim.api.nvim_get_mode().mode }`); err != nil {
				t.Fatal(err)
			}
			if st.Win != other || st.Mode != "i" {
				t.Errorf("after the answer: window %d mode %q, want the user's window %d still in Insert mode", st.Win, st.Mode, other)
			}
			if _, err := s.Nv.Input(" world<Esc>"); err != nil {
				t.Fatal(err)
			}
			waitBufText(t, s, otherBuf, func(x string) bool { return x == "hello world" }, "the user's typing in their window")
			if v := viewOf(t, s, chatWin); v.Cursor != v.Last {
				t.Errorf("chat window %+v: its cursor was at the end, it should have followed", v)
			}
			if err := s.Nv.Command("close!"); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// TestWriteLeavesOtherCursors (issue 27 item 2): a write that extends a line
// (not a stream's: no follow) leaves the cursor of a window flemma may not
// move where it was, also when it sits just past that line's end
// ('virtualedit', Insert mode). An append made with nvim_buf_set_text would
// carry it along; only a stream's write, which such a window follows
// anyway, is made that way.
func TestWriteLeavesOtherCursors(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "cur.chat", "@You:\nhello\nz\n")
		var got []int
		err := s.Lua(&got, `
local buf = ...
vim.wo.virtualedit = "onemore"
vim.api.nvim_win_set_cursor(0, { 2, 5 })
local tick = vim.api.nvim_buf_get_changedtick(buf)
local r = require("flemma.buf").apply(buf, tick, { { start = 1, stop = 2, lines = { "hello world", "more" } } }, {})
assert(r.ok, vim.inspect(r))
return vim.api.nvim_win_get_cursor(0)
`, buf)
		if err != nil {
			t.Fatal(err)
		}
		if text := bufText(t, s, buf); !strings.Contains(text, "hello world\nmore\nz") {
			t.Fatalf("the edit was not made:\n%s", text)
		}
		if len(got) != 2 || got[0] != 2 || got[1] != 5 {
			t.Errorf("cursor %v after the write, want [2 5] (where the user left it)", got)
		}
	})
}
