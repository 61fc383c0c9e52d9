//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// swapTree is a search root with a directory a/ that a test replaces by a
// symlink to somewhere the search must never reach: outside the search root
// (out/) or a deny_read folder inside it (proj/secret/).
type swapTree struct {
	f      *fixture
	proj   string // the search root
	a      string // proj/a, the directory that gets swapped
	out    string // outside the search root
	secret string // proj/secret, denied by deny_read
}

func newSwapTree(t *testing.T) *swapTree {
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}, Network: true,
		DenyRead: append([]string{"**/secret/**"}, sandbox.DefaultDenyRead...)})
	s := &swapTree{f: f, proj: filepath.Join(f.dir, "proj")}
	s.a = filepath.Join(s.proj, "a")
	s.out = filepath.Join(f.outside, "out")
	s.secret = filepath.Join(s.proj, "secret")
	f.write("proj/a/x.txt", "needle inside\n")
	f.write("proj/a/sub/y.txt", "needle inside too\n")
	f.write("proj/b.txt", "needle b\n")
	f.write("proj/secret/x.txt", "needle SECRET\n")
	f.write("proj/secret/sub/y.txt", "needle SECRET too\n")
	f.write("proj/secret/secret-only.txt", "needle SECRET\n")
	f.write(filepath.Join(s.out, "x.txt"), "needle OUTSIDE\n")
	f.write(filepath.Join(s.out, "sub/y.txt"), "needle OUTSIDE too\n")
	f.write(filepath.Join(s.out, "outside-only.txt"), "needle OUTSIDE\n")
	return s
}

// swap replaces a/ by a symlink to target (the original is kept as a.orig).
func (s *swapTree) swap(t *testing.T, target string) {
	if err := os.Rename(s.a, s.a+".orig"); err != nil {
		t.Error(err)
	}
	if err := os.Symlink(target, s.a); err != nil {
		t.Error(err)
	}
}

// hookOnce installs testHookBeforeOpen to run fn once, when the walk is
// about to open path.
func hookOnce(t *testing.T, path string, fn func()) {
	var once sync.Once
	testHookBeforeOpen = func(abs string) {
		if abs == path {
			once.Do(fn)
		}
	}
	t.Cleanup(func() { testHookBeforeOpen = nil })
}

func leaked(content string) bool {
	return strings.Contains(content, "OUTSIDE") || strings.Contains(content, "SECRET") ||
		strings.Contains(content, "outside-only") || strings.Contains(content, "secret-only")
}

// TestWalkSymlinkSwap: a directory replaced by a symlink after the walk
// listed its parent and before it opened the directory (or a file in it) is
// never followed — not by grep, find or ls — whether the symlink leads
// outside the search root or into a deny_read folder. The swap happens in a
// test hook, between the listing and the open, so the race is lost every
// time.
func TestWalkSymlinkSwap(t *testing.T) {
	for _, target := range []string{"outside", "denied"} {
		for _, tc := range []struct {
			tool  string
			input map[string]any
			at    string // where the swap happens: before opening a/ or a/x.txt
		}{
			{"grep", map[string]any{"pattern": "needle", "path": "proj"}, "a"},
			{"grep", map[string]any{"pattern": "needle", "path": "proj"}, "a/x.txt"},
			{"find", map[string]any{"pattern": "*.txt", "path": "proj"}, "a"},
			{"ls", map[string]any{"path": "proj", "max_depth": 3}, "a"},
		} {
			t.Run(target+"/"+tc.tool+"/"+tc.at, func(t *testing.T) {
				s := newSwapTree(t)
				dest := s.out
				if target == "denied" {
					dest = s.secret
				}
				hookOnce(t, filepath.Join(s.a, filepath.FromSlash(strings.TrimPrefix(tc.at, "a"))), func() { s.swap(t, dest) })
				res := s.f.run(tc.tool, tc.input)
				if leaked(res.Content) {
					t.Errorf("%s followed the swapped-in symlink:\n%s", tc.tool, res.Content)
				}
				if !strings.Contains(res.Content, "b.txt") {
					t.Errorf("%s lost the rest of the tree:\n%s", tc.tool, res.Content)
				}
				if testHookBeforeOpen != nil && !exists(s.a+".orig") {
					t.Errorf("the hook never ran: the walk did not open %s", tc.at)
				}
			})
		}
	}
}

// TestGrepFileSwap: a file replaced by a symlink to a denied or outside file
// between the listing and the open is not read.
func TestGrepFileSwap(t *testing.T) {
	s := newSwapTree(t)
	x := filepath.Join(s.a, "x.txt")
	hookOnce(t, x, func() {
		os.Remove(x)
		os.Symlink(filepath.Join(s.secret, "x.txt"), x)
	})
	res := s.f.run("grep", map[string]any{"pattern": "needle", "path": "proj"})
	want(t, "grep", res, true, "proj/b.txt:1:needle b")
	if leaked(res.Content) {
		t.Errorf("grep read through a swapped-in symlink:\n%s", res.Content)
	}
}

// TestSearchRootSwap: a search root replaced by a symlink after the sandbox
// checked it is refused, not followed.
func TestSearchRootSwap(t *testing.T) {
	for _, tc := range []struct {
		tool  string
		input map[string]any
		at    string
	}{
		{"grep", map[string]any{"pattern": "needle", "path": "proj/a"}, "a"},
		{"grep", map[string]any{"pattern": "needle", "path": "proj/a/sub/y.txt"}, "a/sub/y.txt"},
		{"find", map[string]any{"pattern": "*", "path": "proj/a"}, "a"},
		{"ls", map[string]any{"path": "proj/a"}, "a"},
	} {
		t.Run(tc.tool+"/"+tc.at, func(t *testing.T) {
			s := newSwapTree(t)
			hookOnce(t, filepath.Join(s.a, filepath.FromSlash(strings.TrimPrefix(tc.at, "a"))), func() { s.swap(t, s.secret) })
			res := s.f.run(tc.tool, tc.input)
			// ls says "Directory not found" (what is there is not a
			// directory); the searches say why.
			msg := "the path changed during the search"
			if tc.tool == "ls" {
				msg = "Directory not found: proj/a"
			}
			want(t, tc.tool, res, false, msg)
			if leaked(res.Content) {
				t.Errorf("%s followed the swapped-in symlink:\n%s", tc.tool, res.Content)
			}
		})
	}
}

// TestGrepSpecialFile: grep refuses to read what is not a regular file (a
// FIFO would block, a device could be endless) and does not hang on it.
func TestGrepSpecialFile(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	want(t, "fifo", f.run("grep", map[string]any{"pattern": "x", "path": "fifo"}), false, "Cannot search fifo: not a regular file")
	want(t, "walk skips it", f.run("grep", map[string]any{"pattern": "x"}), true, "No matches found.")
}
