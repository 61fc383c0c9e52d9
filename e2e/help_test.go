package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestHelp: with the plugin's help tags generated (as plugin managers do),
// :help flemma opens doc/flemma.txt at its tag, and the options have tags.
func TestHelp(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		// A copy: generating tags must not write into the repository.
		dir := filepath.Join(t.TempDir(), "flemma-doc")
		if err := os.MkdirAll(filepath.Join(dir, "doc"), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "doc", "flemma.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "doc", "flemma.txt"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{"flemma", "flemma-config-tools", "FlemmaRequestEnd", ":Flemma"} {
			var got struct {
				Name string `msgpack:"name"`
				Line string `msgpack:"line"`
			}
			err := s.Lua(&got, `
				local dir, topic = ...
				vim.opt.runtimepath:prepend(dir)
				vim.cmd("helptags " .. vim.fn.fnameescape(dir .. "/doc"))
				vim.cmd("help " .. topic)
				local r = { name = vim.fn.expand("%:t"), line = vim.api.nvim_get_current_line() }
				vim.cmd("helpclose")
				return r`, dir, topic)
			if err != nil {
				t.Fatalf(":help %s: %v", topic, err)
			}
			if got.Name != "flemma.txt" {
				t.Errorf(":help %s opened %q", topic, got.Name)
			}
			if want := "*" + topic + "*"; !strings.Contains(got.Line, want) {
				t.Errorf(":help %s: cursor on %q, want the line with %s", topic, got.Line, want)
			}
		}
	})
}

// TestHelpReplayExample (issue 27 item 9): the replay script of
// :help flemma-replay, exactly as written there, answers a send.
func TestHelpReplayExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "doc", "flemma.txt"))
	if err != nil {
		t.Fatal(err)
	}
	help := string(data)
	i := strings.Index(help, "*flemma-replay*")
	if i < 0 {
		t.Fatal("no *flemma-replay* in the help")
	}
	j := strings.Index(help[i:], "For example: >\n")
	if j < 0 {
		t.Fatal("no example under *flemma-replay*")
	}
	block := help[i+j+len("For example: >\n"):]
	block = block[:strings.Index(block, "\n<\n")+1]
	var script strings.Builder
	for _, l := range strings.SplitAfter(block, "\n") {
		script.WriteString(strings.TrimPrefix(l, "    "))
	}
	file := filepath.Join(t.TempDir(), "script.sse")
	if err := os.WriteFile(file, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	eachNvim(t, `{ provider = "replay", providers = { replay = { file = "`+file+`" } } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "r.chat", "@You:\nHi\n")
		press(t, s, "<C-]>")
		waitText(t, s, "@You:\nHi\n\n@Assistant:\nHello from the script.\n\n@You:\n")
	})
}
