package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
	"github.com/flemma-dev/flemma/provider"
)

// TestStatuslineRedraws (issue 27 item 4): with the README's own
// statusline recipe, in a real terminal, the statusline names the model a
// request goes to when none is set (the provider's default), its seconds
// count on while the request waits, and once the answer is in it shows the
// tokens without the progress, with no other redraw (no key) to bring it.
func TestStatuslineRedraws(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("Forty-two.")}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	model := provider.DefaultModel("anthropic")
	for _, bin := range neovims(t) {
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			hold := make(chan struct{})
			f.mu.Lock()
			f.hold, f.mid = hold, nil
			f.mu.Unlock()
			tui, err := nvimtest.StartTUI(nvimtest.TUIOptions{Nvim: bin, Dir: t.TempDir(), Cols: 100, Rows: 24,
				Setup: `{ providers = { anthropic = { base_url = "` + srv.URL + `" } } }`, Env: []string{"ANTHROPIC_API_KEY=test-key"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tui.Close)
			if err := tui.Lua(nil, `vim.o.laststatus = 2; vim.o.statusline = "%f %= %{v:lua.require'flemma'.statusline()}"; vim.cmd("edit " .. vim.fn.fnameescape(...))`,
				filepath.Join(tui.Dir, "status.chat")); err != nil {
				t.Fatal(err)
			}
			if err := tui.Lua(nil, `vim.api.nvim_buf_set_lines(0, 0, -1, false, { "@You:", "What is 6*7?" })`); err != nil {
				t.Fatal(err)
			}
			if err := tui.Press("\x1d"); err != nil {
				t.Fatal(err)
			}
			// What the terminal shows on the status line's row (Neovim's
			// grid as last drawn; reading it draws nothing).
			status := func() string {
				var row string
				if err := tui.Lua(&row, `
					local r, out = vim.o.lines - vim.o.cmdheight, {}
					for c = 1, vim.o.columns do out[#out + 1] = vim.fn.screenstring(r, c) end
					return table.concat(out)`); err != nil {
					t.Fatal(err)
				}
				return row
			}
			waitStatusLine := func(want, what string) {
				t.Helper()
				deadline := time.Now().Add(15 * time.Second)
				for !strings.Contains(status(), want) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the status line shows %q, want %q in it", what, status(), want)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitStatusLine("anthropic "+model+" · ", "while the request waits")
			// The seconds count on while nothing else redraws.
			waitStatusLine("waiting for anthropic  1s", "a second into the request")
			close(hold)
			// The provider and model, then the tokens: no progress between.
			waitStatusLine("anthropic "+model+" · 12 in · 34 out", "after the answer")
		})
	}
}
