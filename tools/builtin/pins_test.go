//go:build linux

package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestSandboxRefusesHomeRoots is issue 11 #4: "/", the home directory and
// its ancestors are never writable roots, and the sandbox says why.
func TestSandboxRefusesHomeRoots(t *testing.T) {
	base := sandbox.CanonicalOr(t.TempDir())
	home := filepath.Join(base, "users", "me")
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	t.Setenv("HOME", home)
	link := filepath.Join(base, "home-link")
	os.Symlink(home, link)
	sb, err := sandbox.New(sandbox.Config{Enabled: true, Writable: []string{"/", "~", "$HOME", filepath.Dir(home), base, link, proj}}, proj, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.Roots(); !slices.Equal(got, []string{proj}) {
		t.Errorf("Roots() = %v, want only %s", got, proj)
	}
	refused := strings.Join(sb.Refused(), "\n")
	for _, frag := range []string{"/ (the filesystem root", home + " (the home directory", filepath.Dir(home) + " (an ancestor of the home directory", link} {
		if !strings.Contains(refused, frag) {
			t.Errorf("Refused() lacks %q:\n%s", frag, refused)
		}
	}
	if !strings.Contains(sb.Status(), "refused writable:") || !strings.Contains(sb.Status(), "the home directory") {
		t.Errorf("Status() does not report the refused roots:\n%s", sb.Status())
	}
	if sb.IsPathWritable(filepath.Join(home, ".bashrc")) {
		t.Errorf("the home directory is writable")
	}
}

// TestRootPinsSwap is issue 11 #4: an approved command replaced the
// buffer's directory (a writable root) by a symlink; from the next call on
// the symlink's target would have been writable.
func TestRootPinsSwap(t *testing.T) {
	base := sandbox.CanonicalOr(t.TempDir())
	home := filepath.Join(base, "home")
	elsewhere := filepath.Join(home, "Documents") // not home itself: only the pin catches it
	chats := filepath.Join(base, "proj", "chats")
	for _, d := range []string{elsewhere, chats} {
		os.MkdirAll(d, 0o755)
	}
	t.Setenv("HOME", home)
	buffer := filepath.Join(chats, "a.chat")
	cfg := sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}}
	pins := sandbox.NewRootPins()
	first, err := sandbox.New(cfg, base, buffer, sandbox.WithRootPins(pins))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Roots(), []string{chats}) {
		t.Fatalf("roots = %v", first.Roots())
	}

	// The attack: the folder becomes a symlink to somewhere else.
	if err := os.Rename(chats, chats+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, chats); err != nil {
		t.Fatal(err)
	}

	again, err := sandbox.New(cfg, base, buffer, sandbox.WithRootPins(pins))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Roots()) != 0 {
		t.Errorf("the swapped root is still writable: %v", again.Roots())
	}
	refused := strings.Join(again.Refused(), "\n")
	if !strings.Contains(refused, chats) || !strings.Contains(refused, elsewhere) || !strings.Contains(refused, "replaced") {
		t.Errorf("Refused() = %q", refused)
	}
	if again.IsPathWritable(filepath.Join(chats, "x.txt")) || again.IsPathWritable(filepath.Join(elsewhere, "x.txt")) {
		t.Errorf("the symlink's target is writable")
	}
	if !strings.Contains(again.Status(), "replaced") {
		t.Errorf("Status() does not say the root was replaced:\n%s", again.Status())
	}

	// write through the tool is refused too, and says why.
	f := newFixture(t)
	f.env.Sandbox = again
	f.call.Buffer, f.call.Cwd = buffer, base
	res := f.run("write", map[string]any{"path": filepath.Join(chats, "x.txt"), "content": "pwned"})
	want(t, "write after swap", res, false, "Sandbox: write denied", "replaced")
	if exists(filepath.Join(elsewhere, "x.txt")) {
		t.Errorf("write followed the swapped root")
	}

	// A root that is replaced by a real directory (not a symlink) is a
	// different directory too.
	os.Remove(chats)
	os.Mkdir(chats, 0o755)
	third, _ := sandbox.New(cfg, base, buffer, sandbox.WithRootPins(pins))
	if len(third.Roots()) != 0 {
		t.Errorf("a recreated root was accepted: %v", third.Roots())
	}
	// Reset (a user action) trusts the current state again.
	pins.Reset()
	fourth, _ := sandbox.New(cfg, base, buffer, sandbox.WithRootPins(pins))
	if !slices.Equal(fourth.Roots(), []string{chats}) {
		t.Errorf("after Reset roots = %v", fourth.Roots())
	}
}

// TestRootPinsConcurrent: pins are shared by the calls of one buffer.
func TestRootPinsConcurrent(t *testing.T) {
	dir := sandbox.CanonicalOr(t.TempDir())
	pins := sandbox.NewRootPins()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := sandbox.New(sandbox.Config{Enabled: true, Writable: []string{sandbox.URNCwd}}, dir, "", sandbox.WithRootPins(pins))
			if err != nil || !slices.Equal(sb.Roots(), []string{dir}) {
				t.Errorf("roots = %v, %v", sb.Roots(), err)
			}
		}()
	}
	wg.Wait()
}

// TestWriteRootSwap: the root itself is swapped between the sandbox check
// and the write — for a symlink (caught by the no-follow open) and for
// another real directory (caught by the identity re-check).
func TestWriteRootSwap(t *testing.T) {
	for _, kind := range []string{"symlink", "directory"} {
		for _, tool := range []string{"write", "edit"} {
			t.Run(kind+"/"+tool, func(t *testing.T) {
				f := newFixture(t)
				f.write("file.txt", "original")
				swap := func(string) {
					os.Rename(f.dir, f.dir+".moved")
					if kind == "symlink" {
						os.Symlink(f.outside, f.dir)
					} else {
						os.Mkdir(f.dir, 0o755)
					}
				}
				testHookAfterCheck = swap
				defer func() { testHookAfterCheck = nil }()
				in := map[string]any{"path": "file.txt", "content": "pwned"}
				if tool == "edit" {
					in = map[string]any{"path": "file.txt", "oldText": "original", "newText": "pwned"}
				}
				res := f.run(tool, in)
				want(t, "swapped root", res, false, "Cannot write file:")
				if exists(filepath.Join(f.outside, "file.txt")) {
					t.Errorf("the write followed the swapped root")
				}
				if exists(filepath.Join(f.dir, "file.txt")) {
					t.Errorf("the write landed in the replacement directory")
				}
				if b, _ := os.ReadFile(filepath.Join(f.dir+".moved", "file.txt")); string(b) != "original" {
					t.Errorf("original = %q", b)
				}
			})
		}
	}
}

// TestBwrapRootSwap: a root replaced after the sandbox was built is never
// bound: WrapCommand re-checks it, and WrapCommandFiles binds the directory
// it verified by descriptor, so a swap after the wrap changes nothing.
func TestBwrapRootSwap(t *testing.T) {
	requireBwrap(t)
	base := sandbox.CanonicalOr(t.TempDir())
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(outside, 0o755)
	sb, err := sandbox.New(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{root}}, base, "", sandbox.WithRootPins(sandbox.NewRootPins()))
	if err != nil {
		t.Fatal(err)
	}
	swap := func() {
		t.Helper()
		os.Rename(root, root+".moved")
		if err := os.Symlink(outside, root); err != nil {
			t.Fatal(err)
		}
	}
	unswap := func() {
		os.Remove(root)
		os.Rename(root+".moved", root)
	}

	// Swapped before the wrap: refused.
	swap()
	if argv, err := sb.WrapCommand([]string{"true"}); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("WrapCommand after a swap = %v, %v", argv, err)
	}
	if _, _, err := sb.WrapCommandFiles([]string{"true"}); err == nil {
		t.Errorf("WrapCommandFiles after a swap succeeded")
	}
	unswap()

	// Swapped after the wrap, before bwrap mounts: with descriptors the
	// verified directory is bound (or bwrap refuses the swapped
	// destination); never the symlink's target.
	if !sandbox.BindsByFD() {
		t.Skip("this bubblewrap has no --bind-fd")
	}
	argv, files, err := sb.WrapCommandFiles([]string{"sh", "-c", "echo hi > " + root + "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(argv, "--bind-fd") {
		t.Errorf("roots not bound by descriptor: %v", argv)
	}
	swap()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	for _, f := range files {
		f.Close()
	}
	if exists(filepath.Join(outside, "x")) {
		t.Errorf("the bind followed the swapped symlink")
	}
	if err == nil && !exists(filepath.Join(root+".moved", "x")) {
		t.Errorf("the command ran but not in the verified directory: %s", out)
	}
}

// TestBwrapRootSwapAfterWrap: the writable root is replaced by a symlink
// to another folder after bash wrapped its command and before bubblewrap
// mounts the root (testHookAfterWrap). The command's writes land in the
// directory that was verified (or fail), never in the symlink's target —
// with the supervisor passing the roots' descriptors on, and without it.
func TestBwrapRootSwapAfterWrap(t *testing.T) {
	for _, supervised := range []bool{true, false} {
		t.Run(fmt.Sprintf("supervised=%v", supervised), func(t *testing.T) {
			f := bwrapFixture(t, true)
			if !sandbox.BindsByFD() {
				t.Skip("this bubblewrap has no --bind-fd: roots are bound by path, re-checked just before the start")
			}
			if !supervised {
				testhook.NoSupervisor = true
				defer func() { testhook.NoSupervisor = false }()
			}
			f.write("keep.txt", "verified")
			// A relative link, which resolves inside bubblewrap's new root
			// as outside it.
			rel, err := filepath.Rel(filepath.Dir(f.dir), f.outside)
			if err != nil {
				t.Fatal(err)
			}
			testHookAfterWrap = func() {
				os.Rename(f.dir, f.dir+".moved")
				if err := os.Symlink(rel, f.dir); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookAfterWrap = nil }()
			res := f.run("bash", map[string]any{"command": "echo pwned > " + f.dir + "/x; cat " + f.dir + "/keep.txt"})
			t.Logf("result: %s", res.Content)
			if exists(filepath.Join(f.outside, "x")) {
				t.Errorf("the command wrote into the symlink's target: the root was bound by path after the swap")
			}
			if !res.IsError && !exists(filepath.Join(f.dir+".moved", "x")) {
				t.Errorf("the command ran but its write is nowhere to be found: %s", res.Content)
			}
		})
	}
}
