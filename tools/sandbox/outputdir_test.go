//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPid returns the pid of a process that has exited (and been reaped).
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestNewOutputDir: each host gets a private folder named after it; the
// folders of hosts that are gone are removed at the next start, nothing
// else is; cleanup removes the host's own.
func TestNewOutputDir(t *testing.T) {
	tmp := CanonicalOr(t.TempDir())
	t.Setenv("TMPDIR", tmp)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600)

	mk := func(name string, age time.Duration) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "flemma_tool_x.txt"), []byte("full output"), 0o600)
		// A link inside a folder that is removed: the link goes, never
		// what it points to.
		os.Symlink(outside, filepath.Join(p, "link"))
		if age > 0 {
			at := time.Now().Add(-age)
			os.Chtimes(p, at, at)
		}
		return p
	}
	dead := deadPid(t)
	parent := os.Getppid()
	parentStart, _ := processStart(parent)
	ns := pidNamespace()
	name := func(pid int, start string, nsid string, rand string) string {
		return fmt.Sprintf("flemma-output-%d-%s-%s-%s", pid, start, nsid, rand)
	}
	week := legacyOutputAge + time.Hour
	gone := []string{
		mk(name(dead, "1", ns, "123"), 0),                  // its host is gone
		mk(name(parent, "9"+parentStart, ns, "456"), 0),    // the pid was reused by another process
		mk("flemma-output-2882343476", week),               // an old folder of the old naming
		mk(name(dead, "0", ns, "789"), 0),                  // start time unknown, pid gone
		mk(name(parent, parentStart, "1"+ns, "321"), week), // another PID namespace, untouched for a week
	}
	if parentStart == "" {
		gone = append(gone[:1], gone[2:]...) // no start times here: a reused pid cannot be told
	}
	kept := []string{
		mk(name(parent, parentStart, ns, "111"), 0), // a running host (our parent stands in)
		mk(name(parent, "0", ns, "222"), 0),         // running, start time unknown
		mk(name(dead, "1", "1"+ns, "333"), 0),       // another PID namespace, recent: its pids are not ours
		mk("flemma-output-1234567", 0),              // old naming, recent: maybe an old host's
		mk("flemma-output-notapid-1-2-3", 0),        // not our pattern
		mk("other-"+strconv.Itoa(dead), 0),          // not ours at all
	}
	// A symlink with a matching name: never followed, left alone.
	link := filepath.Join(tmp, name(dead, "1", ns, "555"))
	os.Symlink(outside, link)
	// A plain file with a matching name: left alone.
	file := filepath.Join(tmp, name(dead, "1", ns, "444"))
	os.WriteFile(file, []byte("x"), 0o600)

	dir, cleanup, err := NewOutputDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("flemma-output-%d-", os.Getpid())) {
		t.Errorf("NewOutputDir() = %s, want %s/flemma-output-%d-…", dir, tmp, os.Getpid())
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("output dir: %v, %v; want a 0700 folder", fi, err)
	}
	for _, p := range gone {
		if exists(p) {
			t.Errorf("%s was not removed", filepath.Base(p))
		}
	}
	for _, p := range append(kept, link, file, dir) {
		if !exists(p) {
			t.Errorf("%s was removed", filepath.Base(p))
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "keep" {
		t.Errorf("a link was followed: %q, %v", b, err)
	}

	// A second host sees the first one alive and keeps its folder.
	dir2, cleanup2, err := NewOutputDir()
	if err != nil {
		t.Fatal(err)
	}
	if dir2 == dir || !exists(dir) {
		t.Errorf("a second host took or removed the first one's folder")
	}
	cleanup2()

	os.WriteFile(filepath.Join(dir, "flemma_tool_y.txt"), []byte("y"), 0o600)
	cleanup()
	if exists(dir) {
		t.Errorf("cleanup left %s", dir)
	}
	cleanup() // twice is fine
}

// TestNewOutputDirBounded: one start removes at most outputSweepMax
// folders; the next start goes on.
func TestNewOutputDirBounded(t *testing.T) {
	tmp := CanonicalOr(t.TempDir())
	t.Setenv("TMPDIR", tmp)
	saved := outputSweepMax
	outputSweepMax = 3
	t.Cleanup(func() { outputSweepMax = saved })
	dead := deadPid(t)
	for i := range 5 {
		os.Mkdir(filepath.Join(tmp, fmt.Sprintf("flemma-output-%d-0-%s-%d", dead, pidNamespace(), i)), 0o700)
	}
	count := func() int {
		m, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("flemma-output-%d-*", dead)))
		return len(m)
	}
	_, cleanup, err := NewOutputDir()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if n := count(); n != 2 {
		t.Errorf("after one start %d folders of the dead host are left, want 2", n)
	}
	_, cleanup2, err := NewOutputDir()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup2()
	if n := count(); n != 0 {
		t.Errorf("after two starts %d folders of the dead host are left, want 0", n)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
