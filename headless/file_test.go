package headless

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/cycle"
)

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func open(t *testing.T, text string) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.chat")
	writeFile(t, path, text, 0o640)
	f, err := Open(path, filepath.Dir(path), false)
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

func apply(t *testing.T, f *File, edits ...cycle.LineEdit) cycle.ApplyResult {
	t.Helper()
	s, err := f.Snapshot(Bufnr, -1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Apply(Bufnr, s.Tick, edits, cycle.ApplyOpts{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFileApplyWritesTheFile(t *testing.T) {
	f, path := open(t, "@You:\nhello\n")
	s, _ := f.Snapshot(Bufnr, -1)
	if !s.Valid || strings.Join(s.Lines, "|") != "@You:|hello" || s.Name != path || s.Trusted {
		t.Fatalf("snapshot = %+v", s)
	}
	res := apply(t, f, cycle.LineEdit{Start: 2, Stop: 2, Lines: []string{"", "@Assistant:", "hi", "", "@You:"}})
	if !res.OK || res.Tick != s.Tick+1 {
		t.Fatalf("apply = %+v", res)
	}
	if got, want := readFile(t, path), "@You:\nhello\n\n@Assistant:\nhi\n\n@You:\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want the file's own 0640", fi.Mode().Perm())
	}
	// Nothing left behind in the folder: no temp files.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file", len(entries))
	}
	// A stale tick is refused without writing.
	if res, _ := f.Apply(Bufnr, s.Tick, []cycle.LineEdit{{Start: 0, Stop: 1, Lines: []string{"x"}}}, cycle.ApplyOpts{}); !res.Stale {
		t.Errorf("apply on an old tick = %+v, want stale", res)
	}
	if f.Writes() != 1 {
		t.Errorf("writes = %d, want 1", f.Writes())
	}
}

func TestFileKeepsLineEndsAndLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.chat")
	writeFile(t, real, "@You:\r\nhello\r\n", 0o600)
	link := filepath.Join(dir, "link.chat")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err := Open(link, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Lines(), "|"); got != "@You:|hello" {
		t.Fatalf("lines = %q", got)
	}
	apply(t, f, cycle.LineEdit{Start: 2, Stop: 2, Lines: []string{"more"}})
	if got := readFile(t, real); got != "@You:\r\nhello\r\nmore\r\n" {
		t.Errorf("file = %q, want CRLF kept", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
}

func TestFileChangedOnDiskIsNotOverwritten(t *testing.T) {
	f, path := open(t, "@You:\nhello\n")
	user := "@You:\nhello, and my edit\n"
	writeFile(t, path, user, 0o640)
	res := apply(t, f, cycle.LineEdit{Start: 2, Stop: 2, Lines: []string{"", "@Assistant:", "hi"}})
	if res.OK || !strings.Contains(res.Err, "changed on disk") {
		t.Fatalf("apply = %+v, want refused: changed on disk", res)
	}
	if got := readFile(t, path); got != user {
		t.Errorf("file = %q, want the user's %q", got, user)
	}
	saved, err := f.Conflict()
	if !errors.Is(err, ErrChanged) || saved == "" || !strings.Contains(err.Error(), saved) {
		t.Fatalf("conflict = %v, saved %q", err, saved)
	}
	if got := readFile(t, saved); got != "@You:\nhello\n\n@Assistant:\nhi\n" {
		t.Errorf("the run's text was not kept: %q", got)
	}
	select {
	case <-f.Changed():
	default:
		t.Error("Changed not closed")
	}
	// Every later write is refused too, and the buffer did not move.
	if res := apply(t, f, cycle.LineEdit{Start: 0, Stop: 0, Lines: []string{"x"}}); res.OK {
		t.Error("a later write went through")
	}
	if got := readFile(t, path); got != user {
		t.Errorf("file = %q after a later write, want the user's", got)
	}
}

func TestFileDeletedUnderTheRun(t *testing.T) {
	f, path := open(t, "@You:\nhello\n")
	os.Remove(path)
	if res := apply(t, f, cycle.LineEdit{Start: 2, Stop: 2, Lines: []string{"x"}}); res.OK || !strings.Contains(res.Err, "deleted or moved") {
		t.Fatalf("apply = %+v", res)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the deleted file was written again")
	}
}

func TestFileTouchedButUnchangedIsWritten(t *testing.T) {
	f, path := open(t, "@You:\nhello\n")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if res := apply(t, f, cycle.LineEdit{Start: 2, Stop: 2, Lines: []string{"x"}}); !res.OK {
		t.Fatalf("apply = %+v, want written (same content)", res)
	}
}

func TestFileTrust(t *testing.T) {
	approved := "@Assistant:\n**Tool Use:** `bash` (`t1`)\n\n```json\n{\"command\": \"make\"}\n```\n\n@You:\n**Tool Result:** `t1`\n\n```flemma:tool status=approved\n```\n"
	f, _ := open(t, approved)
	p, _ := f.TrustPull(Bufnr)
	if p.Trusted || p.Digest == nil || len(p.Digest.Calls) != 1 || len(p.Digest.Approved) != 1 {
		t.Errorf("untrusted file: pull = %+v %+v", p, p.Digest)
	}
	path := filepath.Join(t.TempDir(), "mine.chat")
	writeFile(t, path, approved, 0o600)
	g, err := Open(path, "", true)
	if err != nil {
		t.Fatal(err)
	}
	p, _ = g.TrustPull(Bufnr)
	if !p.Trusted || len(p.Digest.Approved) != 0 {
		t.Errorf("--trust: pull = %+v %+v, want trusted, its approvals the user's", p, p.Digest)
	}
	b, _ := open(t, "\n\n")
	if !b.Trusted() {
		t.Error("a blank file is not trusted (the plugin trusts a buffer that was empty)")
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "none.chat"), dir, false); err == nil {
		t.Error("a missing file opened")
	}
	if _, err := Open(dir, dir, false); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a folder: %v", err)
	}
	bin := filepath.Join(dir, "bin.chat")
	writeFile(t, bin, "a\x00b", 0o600)
	if _, err := Open(bin, dir, false); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("a binary file: %v", err)
	}
}
