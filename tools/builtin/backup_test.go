package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestWriteStale: write refuses a file the model read that changed on disk
// since, like edit; a file it never read is replaced as before (unless
// RequireRead).
func TestWriteStale(t *testing.T) {
	f := newFixture(t)
	f.write("s.txt", "one\n")
	want(t, "read", f.run("read", map[string]any{"path": "s.txt"}), true)
	f.write("s.txt", "one\ntwo\n") // changed behind the model's back
	res := f.run("write", map[string]any{"path": "s.txt", "content": "mine"})
	want(t, "stale", res, false, "File changed since you last read it: s.txt", "Read it again")
	if got := f.read("s.txt"); got != "one\ntwo\n" {
		t.Errorf("a stale write changed the file: %q", got)
	}
	want(t, "re-read", f.run("read", map[string]any{"path": "s.txt"}), true)
	want(t, "write after re-read", f.run("write", map[string]any{"path": "s.txt", "content": "mine"}), true)
	want(t, "write after own write", f.run("write", map[string]any{"path": "s.txt", "content": "mine again"}), true)
	if got := f.read("s.txt"); got != "mine again" {
		t.Errorf("file = %q", got)
	}
	f.write("s.txt", "theirs")
	want(t, "stale after own write", f.run("write", map[string]any{"path": "s.txt", "content": "x"}), false, "File changed since you last read it")

	// Never read: allowed (the documented default).
	f.write("never.txt", "old")
	want(t, "never read", f.run("write", map[string]any{"path": "never.txt", "content": "new"}), true)
	// Another conversation has its own log.
	f.call.Bufnr = 2
	want(t, "other buffer", f.run("write", map[string]any{"path": "s.txt", "content": "y"}), true)

	// RequireRead: replacing an unread file is refused; creating one is not.
	f.env.RequireRead = true
	f.write("fresh.txt", "x")
	want(t, "require read", f.run("write", map[string]any{"path": "fresh.txt", "content": "y"}), false, "Read fresh.txt before overwriting it")
	if f.read("fresh.txt") != "x" {
		t.Errorf("a refused write changed the file")
	}
	want(t, "require read, new file", f.run("write", map[string]any{"path": "brand-new.txt", "content": "y"}), true)
}

// TestWriteChangedDuringWrite: a file changed (or created) on disk between
// the tool's read and its rename is not overwritten.
func TestWriteChangedDuringWrite(t *testing.T) {
	for _, c := range []struct{ name, tool string }{{"existing", "write"}, {"created", "write"}, {"existing", "edit"}} {
		t.Run(c.tool+"/"+c.name, func(t *testing.T) {
			f := newFixture(t)
			p := filepath.Join(f.dir, "c.txt")
			if c.name == "existing" {
				f.write("c.txt", "original")
			}
			testhook.BeforeRename = func(string) { os.WriteFile(p, []byte("someone else's, longer"), 0o644) }
			defer func() { testhook.BeforeRename = nil }()
			in := map[string]any{"path": "c.txt", "content": "mine"}
			if c.tool == "edit" {
				in = map[string]any{"path": "c.txt", "oldText": "original", "newText": "mine"}
			}
			res := f.run(c.tool, in)
			want(t, c.name, res, false, "Cannot write file: the file changed on disk while it was being written")
			if got := f.read("c.txt"); got != "someone else's, longer" {
				t.Errorf("the other program's content was overwritten: %q", got)
			}
			if left := tempFiles(t, f.dir); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// TestBackupAndUndo: write and edit keep the previous content, report the
// change, and Undo puts it back.
func TestBackupAndUndo(t *testing.T) {
	f := newFixture(t)
	p := f.write("a.txt", "version 1\n")
	os.Chmod(p, 0o640)

	res := f.run("write", map[string]any{"path": "a.txt", "content": "version 2\n"})
	want(t, "write", res, true)
	if len(res.Changes) != 1 {
		t.Fatalf("write reported changes %+v, want one", res.Changes)
	}
	c := res.Changes[0]
	if c.Path != p || c.Before != hexSum("version 1\n") || c.After != hexSum("version 2\n") {
		t.Errorf("change = %+v", c)
	}
	blob := filepath.Join(f.env.BackupDir, c.Before)
	if b, err := os.ReadFile(blob); err != nil || string(b) != "version 1\n" {
		t.Errorf("backup %s = %q, %v", blob, b, err)
	}
	if fi, err := os.Lstat(blob); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if fi, err := os.Lstat(f.env.BackupDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("backup directory mode = %v, %v; want 0700", fi.Mode(), err)
	}

	res = f.run("edit", map[string]any{"path": "a.txt", "oldText": "2", "newText": "3"})
	want(t, "edit", res, true)
	if len(res.Changes) != 1 || res.Changes[0].Before != hexSum("version 2\n") || res.Changes[0].After != hexSum("version 3\n") {
		t.Fatalf("edit reported changes %+v", res.Changes)
	}
	e := res.Changes[0]

	// The record survives a round trip through JSON (the host's journal).
	var rec tools.Change
	b, _ := json.Marshal(e)
	if err := json.Unmarshal(b, &rec); err != nil || rec != e {
		t.Fatalf("JSON round trip: %s → %+v, %v", b, rec, err)
	}
	f.undoTo(rec, "a.txt", "version 2\n") // the edit
	f.undoTo(c, "a.txt", "version 1\n")   // the write
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after undo = %v, want 0640", fi.Mode().Perm())
	}
	// Undoing again: the file no longer holds what the tool wrote.
	if err := Undo(c, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) {
		t.Errorf("second Undo = %v, want ErrUndoChanged", err)
	}

	// A created file: "absent", and Undo removes it.
	res = f.run("write", map[string]any{"path": "sub/new.txt", "content": "new"})
	want(t, "create", res, true)
	if len(res.Changes) != 1 || res.Changes[0].Before != tools.BackupAbsent || res.Changes[0].After != hexSum("new") {
		t.Fatalf("create reported %+v", res.Changes)
	}
	if err := Undo(res.Changes[0], f.env.BackupDir); err != nil {
		t.Fatalf("Undo(create): %v", err)
	}
	if exists(filepath.Join(f.dir, "sub/new.txt")) {
		t.Errorf("Undo did not remove the created file")
	}
	if left := tempFiles(t, f.dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestUndoRefusals: Undo touches nothing unless the file holds exactly what
// the tool wrote and the backup is intact, and says why.
func TestUndoRefusals(t *testing.T) {
	f := newFixture(t)
	f.write("u.txt", "before")
	res := f.run("write", map[string]any{"path": "u.txt", "content": "after"})
	want(t, "write", res, true)
	c := res.Changes[0]

	// Changed since the tool wrote it.
	f.write("u.txt", "the user's")
	if err := Undo(c, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) || !strings.Contains(err.Error(), "u.txt") {
		t.Errorf("Undo of a changed file = %v", err)
	}
	if f.read("u.txt") != "the user's" {
		t.Errorf("Undo changed a file that changed since")
	}
	f.write("u.txt", "after")

	// Removed since.
	os.Remove(filepath.Join(f.dir, "u.txt"))
	if err := Undo(c, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) || !strings.Contains(err.Error(), "no longer exists") {
		t.Errorf("Undo of a removed file = %v", err)
	}
	if exists(filepath.Join(f.dir, "u.txt")) {
		t.Errorf("Undo recreated a removed file")
	}
	f.write("u.txt", "after")

	// A damaged backup.
	blob := filepath.Join(f.env.BackupDir, c.Before)
	os.WriteFile(blob, []byte("tampered"), 0o600)
	if err := Undo(c, f.env.BackupDir); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Undo from a damaged backup = %v", err)
	}
	// A backup that is gone.
	os.Remove(blob)
	if err := Undo(c, f.env.BackupDir); !errors.Is(err, ErrBackupGone) {
		t.Errorf("Undo without its backup = %v, want ErrBackupGone", err)
	}
	// A backup replaced by a link to a file with the right content: not
	// followed.
	outside := filepath.Join(f.outside, "lure")
	os.WriteFile(outside, []byte("before"), 0o600)
	os.Symlink(outside, blob)
	if err := Undo(c, f.env.BackupDir); !errors.Is(err, ErrBackupGone) {
		t.Errorf("Undo through a symlinked backup = %v, want ErrBackupGone", err)
	}
	if f.read("u.txt") != "after" {
		t.Errorf("a refused Undo changed the file")
	}

	// A folder on the file's path became a symlink.
	f.write("d/v.txt", "v1")
	res = f.run("write", map[string]any{"path": "d/v.txt", "content": "v2"})
	want(t, "write in d", res, true)
	os.Rename(filepath.Join(f.dir, "d"), filepath.Join(f.outside, "d"))
	os.Symlink(filepath.Join(f.outside, "d"), filepath.Join(f.dir, "d"))
	if err := Undo(res.Changes[0], f.env.BackupDir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Undo through a symlinked folder = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "d", "v.txt")); string(b) != "v2" {
		t.Errorf("Undo followed a symlinked folder: %q", b)
	}

	// Malformed records.
	for _, bad := range []tools.Change{
		{Path: "rel/x", Before: tools.BackupAbsent, After: c.After},
		{Path: filepath.Join(f.dir, "u.txt"), Before: "../../etc/passwd", After: c.After},
		{Path: filepath.Join(f.dir, "u.txt"), Before: tools.BackupAbsent, After: "nope"},
		{Path: filepath.Join(f.dir, "u.txt"), Before: "", After: c.After},
	} {
		if err := Undo(bad, f.env.BackupDir); err == nil {
			t.Errorf("Undo(%+v) succeeded", bad)
		}
	}
	if f.read("u.txt") != "after" {
		t.Errorf("a malformed record changed the file")
	}
}

// TestBackupDirSafety: the backup directory is never a link, never
// another user's or world-readable, and links inside it are not followed.
func TestBackupDirSafety(t *testing.T) {
	f := newFixture(t)
	f.write("k.txt", "secret v1")

	// The directory itself is a symlink: refused, nothing changed.
	elsewhere := filepath.Join(f.outside, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	os.Symlink(elsewhere, f.env.BackupDir)
	res := f.run("write", map[string]any{"path": "k.txt", "content": "v2"})
	want(t, "symlinked backup dir", res, false, "Cannot keep a backup of k.txt", "symbolic link", "nothing was changed")
	if f.read("k.txt") != "secret v1" {
		t.Errorf("the change was made without a backup")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) > 0 {
		t.Errorf("the backup went through the link: %v", ents)
	}
	os.Remove(f.env.BackupDir)

	// An existing directory that is too open is narrowed to 0700.
	os.Mkdir(f.env.BackupDir, 0o755)
	want(t, "open dir", f.run("write", map[string]any{"path": "k.txt", "content": "v2"}), true)
	if fi, _ := os.Lstat(f.env.BackupDir); fi.Mode().Perm() != 0o700 {
		t.Errorf("backup directory mode = %v, want 0700", fi.Mode().Perm())
	}

	// A link planted under the name of the next blob is replaced, its
	// target untouched.
	target := filepath.Join(f.outside, "target")
	os.WriteFile(target, []byte("do not touch"), 0o644)
	os.Symlink(target, filepath.Join(f.env.BackupDir, hexSum("v2")))
	res = f.run("write", map[string]any{"path": "k.txt", "content": "v3"})
	want(t, "planted link", res, true)
	if b, _ := os.ReadFile(target); string(b) != "do not touch" {
		t.Errorf("the link's target changed: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(f.env.BackupDir, hexSum("v2"))); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the planted link was not replaced by the backup: %v, %v", fi, err)
	}
	if err := Undo(res.Changes[0], f.env.BackupDir); err != nil || f.read("k.txt") != "v2" {
		t.Errorf("Undo after a planted link: %v, file %q", err, f.read("k.txt"))
	}
}

// TestBackupLimits: the store stays within its size and age limits, oldest
// first, and a file too large to back up is not changed.
func TestBackupLimits(t *testing.T) {
	f := newFixture(t)
	f.env.BackupMaxBytes = 4000 // a file of at most 1000 bytes is backed up
	dir := f.env.BackupDir

	// An old blob (and a stale temporary file) from an earlier session.
	os.MkdirAll(dir, 0o700)
	old := strings.Repeat("o", 100)
	os.WriteFile(filepath.Join(dir, hexSum(old)), []byte(old), 0o600)
	os.WriteFile(filepath.Join(dir, ".tmp-dead"), []byte("partial"), 0o600)
	long := time.Now().Add(-DefaultBackupMaxAge - time.Hour)
	os.Chtimes(filepath.Join(dir, hexSum(old)), long, long)
	os.Chtimes(filepath.Join(dir, ".tmp-dead"), long, long)

	content := func(i int) string { return fmt.Sprintf("%03d", i) + strings.Repeat("x", 897) } // 900 bytes
	f.write("l.txt", content(0))
	var changes []tools.Change
	for i := 1; i <= 8; i++ {
		res := f.run("write", map[string]any{"path": "l.txt", "content": content(i)})
		want(t, fmt.Sprintf("write %d", i), res, true)
		changes = append(changes, res.Changes...)
		// Distinct modification times, in order, whatever the clock's
		// resolution.
		at := time.Now().Add(time.Duration(i-20) * time.Minute)
		os.Chtimes(filepath.Join(dir, res.Changes[0].Before), at, at)
	}
	if exists(filepath.Join(dir, hexSum(old))) {
		t.Errorf("a blob older than the age limit was kept")
	}
	if exists(filepath.Join(dir, ".tmp-dead")) {
		t.Errorf("a stale temporary file was kept")
	}
	var total int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > 4000 {
		t.Errorf("backups hold %d bytes, over the 4000 limit", total)
	}
	// The newest are kept, the oldest dropped.
	if err := Undo(changes[7], dir); err != nil {
		t.Errorf("Undo of the last write: %v", err)
	}
	f.write("l.txt", content(1))
	if err := Undo(changes[0], dir); !errors.Is(err, ErrBackupGone) {
		t.Errorf("Undo of the first write = %v, want ErrBackupGone (dropped for size)", err)
	}

	// Too large to back up: refused, unchanged.
	big := "a" + strings.Repeat("b", 1000)
	f.write("big.txt", big)
	res := f.run("write", map[string]any{"path": "big.txt", "content": "small"})
	want(t, "too large", res, false, "Cannot keep a backup of big.txt", "larger than", "nothing was changed")
	if f.read("big.txt") != big {
		t.Errorf("a file too large to back up was changed")
	}
	res = f.run("edit", map[string]any{"path": "big.txt", "oldText": "a", "newText": "c"})
	want(t, "too large edit", res, false, "Cannot keep a backup of big.txt")

	// Backups off: the change is made and cannot be undone.
	f.env.BackupMaxBytes = -1
	res = f.run("write", map[string]any{"path": "big.txt", "content": "small"})
	want(t, "backups off", res, true)
	if len(res.Changes) != 1 || res.Changes[0].Before != "" {
		t.Fatalf("changes with backups off = %+v", res.Changes)
	}
	if err := Undo(res.Changes[0], dir); !errors.Is(err, ErrBackupGone) {
		t.Errorf("Undo with backups off = %v, want ErrBackupGone", err)
	}
}
