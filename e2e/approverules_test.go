package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestApproveRuleOptions (issue 24, class 11): the README's kind of bash
// rule, bash(git log*), approves what it was written for — git log
// --oneline runs at once — and not an option that writes a file: git log
// --output=x asks, and nothing is written. No sandbox, so only the rule
// decides.
func TestApproveRuleOptions(t *testing.T) {
	eachNvim(t, `{ sandbox = { enabled = false }, tools = { auto_approve = { "$default", "bash(git log*)" } } }`, func(t *testing.T, s *nvimtest.Session) {
		repo := filepath.Join(s.Dir, "repo")
		if err := os.MkdirAll(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first commit"}} {
			if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		mustOpen(t, s, "repo/log.chat", bashCall(t, "l1", "git log --oneline"))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "l1")
		if isErr || !strings.Contains(body, "first commit") {
			t.Fatalf("git log --oneline (error %v):\n%s", isErr, body)
		}
		waitIdle(t, s)
		mustOpen(t, s, "repo/out.chat", bashCall(t, "o1", "git log --output=written.txt"))
		press(t, s, "<C-]>")
		waitStatus(t, s, "o1", "pending")
		waitIdle(t, s)
		if _, err := os.Stat(filepath.Join(repo, "written.txt")); !os.IsNotExist(err) {
			t.Errorf("git log --output wrote its file (%v)", err)
		}
	})
}
