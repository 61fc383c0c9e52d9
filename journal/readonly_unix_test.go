//go:build unix

package journal

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// nobody is the user the read-only checks run as when the tests run as root
// (root writes through any file mode).
const nobody = 65534

// TestOpenReadOnlyFile: a journal the user cannot write is left alone and
// Open says so (ErrReadOnly), so the host warns and runs without it.
func TestOpenReadOnlyFile(t *testing.T) {
	tests := []struct {
		name     string
		fileMode os.FileMode
		dirMode  os.FileMode
	}{
		{"read-only file", 0o400, 0o700},
		{"read-only file and directory", 0o400, 0o500},
		{"read-only directory", 0o600, 0o500}, // the WAL cannot be created
	}
	// A directory nobody can reach when running as root, holding a copy of
	// the test binary (its own directory is root's only).
	top, err := os.MkdirTemp("", "journal-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	bin := ""
	if os.Geteuid() == 0 {
		bin = copyTestBinary(t, top)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(top, strconv.Itoa(i))
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			path := filepath.Join(dir, "journal.db")
			j, err := Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			mustStart(t, j, call("/a.chat", "toolu_1"))
			j.Close() // checkpoints and removes the WAL
			before, _ := os.ReadFile(path)

			var got string
			if os.Geteuid() == 0 {
				os.Chown(dir, nobody, nobody)
				os.Chown(path, nobody, nobody)
				os.Chmod(path, tt.fileMode)
				os.Chmod(dir, tt.dirMode)
				got = openAsNobody(t, bin, path)
			} else {
				os.Chmod(path, tt.fileMode)
				os.Chmod(dir, tt.dirMode)
				j, err := Open(context.Background(), path, nil)
				got = describeOpen(j, err)
				if j != nil {
					j.Close()
				}
			}
			os.Chmod(dir, 0o700)
			t.Log(got)
			if !strings.HasPrefix(got, "error "+ErrReadOnly.Error()) {
				t.Errorf("Open of a %s: %s, want ErrReadOnly", tt.name, got)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("the %s was changed", tt.name)
			}
			if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) > 0 {
				t.Errorf("the %s was moved aside: %v", tt.name, m)
			}
		})
	}
}

// copyTestBinary copies the test binary into dir, executable by all.
func copyTestBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "journal.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openAsNobody runs Open on path in a helper process (bin) as user nobody
// and returns describeOpen's line.
func openAsNobody(t *testing.T, bin, path string) string {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	c := startChildCmd(t, cmd, "open", path, "HOME="+cmd.Dir, "TMPDIR="+cmd.Dir)
	line := c.line(t)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, c.stderr.String())
	}
	return line
}
