package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyFS mounts a filesystem of size bytes (tmpfs) at a new directory and
// unmounts it at cleanup: a real ENOSPC. It skips when this machine does
// not let the test mount one (not root, no mount namespace rights), saying
// so.
func tinyFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small filesystem here (%v: %s): the full-disk case is not tested", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes to dir until the filesystem is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// TestFullDisk: a journal that cannot be created on a full disk fails Open
// with ErrFull (the host then says so); one that fills up while in use
// fails its writes with ErrFull and records nothing half.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	t.Run("at open", func(t *testing.T) {
		dir := tinyFS(t, "256k")
		fill(t, dir)
		_, err := Open(ctx, filepath.Join(dir, "journal.db"), nil)
		if !errors.Is(err, ErrFull) {
			t.Fatalf("Open on a full disk = %v, want ErrFull", err)
		}
		t.Log(err)
	})
	t.Run("while in use", func(t *testing.T) {
		dir := tinyFS(t, "512k")
		j := openAt(t, filepath.Join(dir, "journal.db"), nil)
		big := strings.Repeat("x", 64<<10)
		var err error
		n := 0
		for ; err == nil && n < 100; n++ {
			var id ID
			if id, err = j.Start(ctx, call("/f.chat", fmt.Sprint("f", n))); err == nil {
				err = j.Finish(ctx, id, Outcome{Status: "ok", Result: big})
			}
		}
		if !errors.Is(err, ErrFull) {
			t.Fatalf("after %d calls: %v, want ErrFull", n, err)
		}
		t.Log(err)
	})
}
