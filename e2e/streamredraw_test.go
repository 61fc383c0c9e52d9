package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestStreamRedrawsChangedLines (issue 23): a stream's write redraws the
// lines it changed, not the window. In a real terminal (the redraws are
// Neovim's own), a 600-word answer streams into a 3,000-line chat with the
// defaults (folds, syntax, rulers), the window following it; the redraw
// probe of BenchmarkStreamRedraw counts the lines each redraw after a write
// draws. On Neovim 0.7 every write used to redraw every line of the window
// (the progress note and the lock line were set again at each write, and
// 0.7 answers an extmark set in the same redraw as inserted lines with a
// redraw of the whole window): most flushes drew all of it. Now the
// first and the last (new role lines, their rulers) may, and the odd one
// that scrolls; the others draw a few lines.
func TestStreamRedrawsChangedLines(t *testing.T) {
	srv := httptest.NewServer(&endlessAnswer{pace: time.Millisecond, max: 600})
	t.Cleanup(srv.Close)
	chat := keystrokeChat(3000)
	const models = `, models = { ["test-model"] = { max_output_tokens = 8192, thinking = "none" } }`
	for _, bin := range neovims(t) {
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			tui, err := nvimtest.StartTUI(nvimtest.TUIOptions{Nvim: bin, Dir: t.TempDir(), Setup: sendSetup(srv.URL, models),
				Env: []string{"ANTHROPIC_API_KEY=test-key"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tui.Close)
			path := filepath.Join(tui.Dir, "long.chat")
			if err := os.WriteFile(path, []byte(chat), 0o644); err != nil {
				t.Fatal(err)
			}
			var height int
			if err := tui.Lua(&height, `
				vim.cmd("edit " .. vim.fn.fnameescape(...))
				vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
				vim.cmd("normal! zt")
				return vim.api.nvim_win_get_height(0)`, path); err != nil {
				t.Fatal(err)
			}
			if err := tui.Lua(nil, redrawProbe, true); err != nil {
				t.Fatal(err)
			}
			if !tui.Settle(20*time.Millisecond, 60*time.Second) {
				t.Fatalf("Neovim did not settle; terminal:\n%s", tui.Screen())
			}
			if _, err := tui.Type("\x1d", "@You:", settle, 60*time.Second); err != nil {
				t.Fatal(err)
			}
			var parts [][3]int64
			if err := tui.Lua(&parts, `return FLEMMA_FLUSH_PARTS`); err != nil {
				t.Fatal(err)
			}
			if len(parts) < 10 {
				t.Fatalf("only %d writes were redrawn", len(parts))
			}
			var drawn []int
			whole := 0
			for _, p := range parts {
				drawn = append(drawn, int(p[2]))
				if int(p[2]) >= height-2 {
					whole++
				}
			}
			sort.Ints(drawn)
			if med := drawn[len(drawn)/2]; med > 4 || whole > len(parts)/10+2 {
				t.Fatalf("%d writes: the median redraw drew %d lines, %d redrew the whole %d-line window (lines drawn: %v)",
					len(parts), med, whole, height, drawn)
			}
		})
	}
}
