//go:build linux

package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// everydayProject is a small project with a git history, a Go module with
// a test, a pytest test, an npm test and a Makefile, outside /tmp (where
// projects live), in a folder of its own.
func everydayProject(t *testing.T) string {
	t.Helper()
	dir := scratchOutsideTmp(t)
	files := map[string]string{
		"go.mod":           "module example.com/everyday\n\ngo 1.22\n",
		"sum.go":           "package everyday\n\nfunc Sum(a, b int) int { return a + b }\n",
		"sum_test.go":      "package everyday\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
		"test_sum.py":      "def test_sum():\n    assert 2 + 3 == 5\n",
		"package.json":     `{"name": "everyday", "version": "1.0.0", "scripts": {"test": "node --test"}}` + "\n",
		"test/sum.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\ntest('sum', () => assert.strictEqual(2 + 3, 5));\n",
		"Makefile":         "all: out.txt\nout.txt: sum.go\n\twc -l sum.go > out.txt\n",
		".gitignore":       "out.txt\n.pytest_cache/\n__pycache__/\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// TestEverydayWorkUnderDefaultSandbox is the "everyday work still works"
// of issue 24: git (status, diff, log, commit), go test ./..., pytest,
// npm test and make under the default sandbox — bubblewrap, the socket
// filter, the allow-list environment, the default limits, protected
// paths — as the default policy runs them (approved by the sandbox
// resolver) and as the user approves them. The one thing that needs the
// user: git commit (the whole .git is read-only to a command a policy
// approved). Durations are logged (docs/security.md records them).
func TestEverydayWorkUnderDefaultSandbox(t *testing.T) {
	requireBwrap(t)
	for _, tool := range []string{"git", "go", "node", "npm", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	pytest := "python3 -m pytest"
	if exec.Command("python3", "-m", "pytest", "--version").Run() != nil {
		if _, err := exec.LookPath("pytest-3"); err != nil {
			t.Skip("pytest not installed")
		}
		pytest = "pytest-3"
	}
	dir := everydayProject(t)
	f := newFixture(t)
	f.dir = dir
	f.env.Environ = nil // the machine's environment, through the allow-list
	cfg := sandbox.DefaultConfig()
	// As the host sets it: the project's own tool caches (GOCACHE), in
	// flemma's state there, kept between runs here so that the standard
	// library is compiled once, not by every run of the test.
	cfg.CacheDir = filepath.Join(os.TempDir(), fmt.Sprintf("flemma-test-cache-%d", os.Getuid()))
	f.setSandbox(cfg)
	f.call.Cwd = dir
	if !f.env.Sandbox.Available() {
		t.Fatalf("the default sandbox is not available:\n%s", f.env.Sandbox.Status())
	}
	rows := []struct {
		name, cmd, want string
		policyFails     bool // fails when approved by a policy (and says why)
	}{
		{"git status", "git status --short --branch", "## ", false},
		{"git diff", "echo '// more' >> sum.go && git diff --stat", "sum.go", false},
		{"git log", "git log --oneline -1", "init", false},
		{"git commit", "git -c user.name=t -c user.email=t@t commit -qam change && git log --oneline -1", "change", true},
		{"go test ./...", "go env GOCACHE && go test ./... 2>&1", "ok  \texample.com/everyday", false},
		{"pytest", pytest + " -q -p no:cacheprovider 2>&1", "1 passed", false},
		{"npm test", "npm test 2>&1", "pass 1", false},
		{"make", "make && cat out.txt", "sum.go", false},
	}
	for _, protect := range []bool{true, false} {
		who := "policy"
		if !protect {
			who = "user"
		}
		for _, r := range rows {
			f.env.Protect = protect
			start := time.Now()
			res := f.run("bash", map[string]any{"command": r.cmd, "timeout": 240})
			d := time.Since(start)
			if protect && r.policyFails {
				if !res.IsError || !strings.Contains(res.Content, "Read-only file system") {
					t.Errorf("%s approved by a policy: want a read-only refusal, got:\n%s", r.name, res.Content)
				}
				t.Logf("%-14s approved by the %s: refused (.git read-only) in %v", r.name, who, d.Round(time.Millisecond))
				continue
			}
			if res.IsError || !strings.Contains(res.Content, r.want) {
				t.Errorf("%s approved by the %s failed under the default sandbox:\n%s", r.name, who, res.Content)
				continue
			}
			t.Logf("%-14s approved by the %s: ok in %v", r.name, who, d.Round(time.Millisecond))
		}
	}
}
