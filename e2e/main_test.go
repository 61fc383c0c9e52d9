// Package e2e tests flemma as a user meets it: a real headless Neovim with
// the plugin on 'runtimepath' and the built host, keys pressed, buffer text
// asserted. Every test runs against every Neovim the setup provides.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

func TestMain(m *testing.M) {
	if d := os.Getenv("FLEMMA_SLOW_LSP"); d != "" { // this binary, started as a language server
		slowLSP(d)
		return
	}
	if _, err := nvimtest.BuildHost(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if mcpechoDir != "" {
		os.RemoveAll(mcpechoDir)
	}
	os.Exit(code)
}

// eachNvim runs fn as a subtest per Neovim version. With CI set, a missing
// Neovim fails the test instead of skipping it.
func eachNvim(t *testing.T, setup string, fn func(t *testing.T, s *nvimtest.Session)) {
	t.Helper()
	eachNvimEnv(t, setup, nil, fn)
}

// eachNvimEnv is eachNvim with extra environment for Neovim and the host.
func eachNvimEnv(t *testing.T, setup string, env []string, fn func(t *testing.T, s *nvimtest.Session)) {
	t.Helper()
	for _, bin := range neovims(t) {
		bin := bin
		t.Run("nvim-"+nvimtest.Version(bin), func(t *testing.T) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: t.TempDir(), Setup: setup, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("messages:\n%s", s.Messages())
					t.Logf("host log:\n%s", s.HostLog())
				}
				s.Close()
			})
			fn(t, s)
		})
	}
}

// neovims returns the Neovim binaries the setup provides. With CI set, a
// missing one fails the test instead of being skipped.
func neovims(t *testing.T) []string {
	t.Helper()
	found, missing := nvimtest.Neovims()
	if len(missing) > 0 {
		msg := fmt.Sprintf("Neovim not found: %s (run scripts/provision-nvim.sh, or `make test` which does)", strings.Join(missing, ", "))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Log(msg)
	}
	if len(found) == 0 {
		t.Skip("no Neovim available")
	}
	return found
}

// mustOpen opens a .chat file of the user's own and trusts it as the user
// would (:Flemma trust): its calls are then decided by the policy like the
// model's. Tests about files from someone else use mustOpenForeign.
func mustOpen(t *testing.T, s *nvimtest.Session, name, content string) int {
	t.Helper()
	buf := mustOpenForeign(t, s, name, content)
	if err := s.Nv.Command("Flemma trust"); err != nil {
		t.Fatal(err)
	}
	return buf
}

// mustOpenForeign opens a .chat file as it came from someone else: not
// trusted, so the calls already in it ask and its frontmatter cannot
// approve.
func mustOpenForeign(t *testing.T, s *nvimtest.Session, name, content string) int {
	t.Helper()
	buf, err := s.Open(name, content)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

func press(t *testing.T, s *nvimtest.Session, keys string) {
	t.Helper()
	if err := s.Press(keys); err != nil {
		t.Fatalf("press %s: %v", keys, err)
	}
}

// waitIdle waits until nothing is left to change the buffer (see
// Session.WaitIdle): what a test then sees is final.
func waitIdle(t *testing.T, s *nvimtest.Session) {
	t.Helper()
	if err := s.WaitIdle(); err != nil {
		t.Fatalf("wait for idle: %v; messages:\n%s", err, s.Messages())
	}
}

// waitRunning waits until n calls of the current buffer show their running
// indicator (they left the queue and run).
func waitRunning(t *testing.T, s *nvimtest.Session, n int) {
	t.Helper()
	if _, err := s.Wait(10*time.Second, func(string) bool {
		running := 0
		for _, m := range marks(t, s) {
			if m.Kind == "status" && strings.Contains(m.Text, "running") {
				running++
			}
		}
		return running == n
	}); err != nil {
		t.Fatalf("%d calls never ran at once: marks %+v", n, marks(t, s))
	}
}

func text(t *testing.T, s *nvimtest.Session) string {
	t.Helper()
	got, err := s.Text()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func waitText(t *testing.T, s *nvimtest.Session, want string) {
	t.Helper()
	got, err := s.Wait(10*time.Second, func(text string) bool { return text == want })
	if err != nil {
		t.Fatalf("buffer text:\n%s\n\nwant:\n%s", got, want)
	}
}

func cursorLine(t *testing.T, s *nvimtest.Session) int {
	t.Helper()
	var line int
	if err := s.Lua(&line, "return vim.api.nvim_win_get_cursor(0)[1]"); err != nil {
		t.Fatal(err)
	}
	return line
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
