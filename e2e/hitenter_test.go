package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestNoHitEnter (issue 27 item 6): a new user's first messages, in a real
// terminal of 80 columns, never stop Neovim at a hit-enter prompt: <C-]> on
// an empty chat, <C-]> without a credential, and :Flemma trust. What does
// not fit the message area is shown cut to fit, pointing to :messages,
// which holds it whole.
func TestNoHitEnter(t *testing.T) {
	for _, bin := range neovims(t) {
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			tui, err := nvimtest.StartTUI(nvimtest.TUIOptions{Nvim: bin, Dir: t.TempDir(), Setup: "{}", Cols: 80, Rows: 24})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tui.Close)
			if err := tui.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, filepath.Join(tui.Dir, "first.chat")); err != nil {
				t.Fatal(err)
			}
			// Each step: keys typed in the terminal, then the start of the
			// message the screen must show and all of it in :messages.
			steps := []struct{ keys, shown, whole string }{
				{"\x1d", "(flemma) Nothing to send", "Nothing to send yet: write your message under @You:"},
				{"iHello\x1b\x1d", "(flemma) anthropic: no credential", "anthropic: no credential: set ANTHROPIC_API_KEY"},
				{":Flemma trust\r", "(flemma) This buffer is trusted", ":Flemma untrust undoes this."},
			}
			for _, st := range steps {
				from := tui.Mark()
				if err := tui.Press(st.keys); err != nil {
					t.Fatal(err)
				}
				if err := tui.WaitFor(from, st.shown, 15*time.Second); err != nil {
					t.Fatalf("after %q: %v", st.keys, err)
				}
				// Neovim answers at once unless it waits at a prompt (a
				// hit-enter prompt does not answer RPC requests).
				if mode, ok := modeOf(tui, 10*time.Second); !ok || mode != "n" {
					tui.Press("\r")
					t.Fatalf("after %q: Neovim waits (mode %q, answered %v), a hit-enter prompt; terminal:\n%s", st.keys, mode, ok, tui.Screen())
				}
				var msgs string
				if err := tui.Lua(&msgs, `return vim.api.nvim_exec("messages", true)`); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(msgs, st.whole) {
					t.Errorf("after %q, :messages lacks %q:\n%s", st.keys, st.whole, msgs)
				}
			}
		})
	}
}

// modeOf is Neovim's mode, or false when it does not answer within limit.
func modeOf(tui *nvimtest.TUI, limit time.Duration) (string, bool) {
	got := make(chan string, 1)
	go func() {
		var mode struct {
			Mode string `msgpack:"mode"`
		}
		_ = tui.Nv.Call("nvim_get_mode", &mode)
		got <- mode.Mode
	}()
	select {
	case m := <-got:
		return m, true
	case <-time.After(limit):
		return "", false
	}
}
