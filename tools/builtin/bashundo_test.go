//go:build unix

package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// changeOf is the Change of path p in res, or fails.
func changeOf(t *testing.T, res tools.Result, p string) tools.Change {
	t.Helper()
	for _, c := range res.Changes {
		if c.Path == p {
			return c
		}
	}
	t.Fatalf("no change of %s in %+v\n%s", p, res.Changes, res.Content)
	return tools.Change{}
}

// TestBashUndoChangedAndDeleted: a file a sandboxed bash changed or
// deleted is put back by Undo from the pre-image kept before the command;
// a second undo, or one after the file changed again, refuses and says
// why.
func TestBashUndoChangedAndDeleted(t *testing.T) {
	f := bwrapFixture(t, false)
	edited := f.write("notes.txt", "alpha\nbeta\n")
	gone := f.write("sub/run.sh", "#!/bin/sh\necho hi\n")
	os.Chmod(gone, 0o750)
	again := f.write("again.txt", "one\n")
	res := f.run("bash", map[string]any{"command": "sed -i s/beta/BETA/ notes.txt && rm -r sub && echo two > again.txt"})
	want(t, "bash", res, true, "changed: again.txt, notes.txt", "deleted: sub/run.sh")
	if strings.Contains(res.Content, "not undoable") {
		t.Errorf("a kept file is said not undoable:\n%s", res.Content)
	}
	ch, del, ag := changeOf(t, res, edited), changeOf(t, res, gone), changeOf(t, res, again)
	if del.After != tools.BackupAbsent || del.Mode != 0o750 {
		t.Errorf("deletion recorded as %+v", del)
	}

	f.undoTo(ch, "notes.txt", "alpha\nbeta\n")
	f.undoTo(del, "sub/run.sh", "#!/bin/sh\necho hi\n")
	if fi, err := os.Stat(gone); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("run.sh recreated with %v (%v), want 0750", fi.Mode(), err)
	}
	// Undone already: the file no longer holds what the command left.
	if err := Undo(ch, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) {
		t.Errorf("second undo of the change: %v", err)
	}
	if err := Undo(del, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) || !strings.Contains(err.Error(), "something is at that path again") {
		t.Errorf("second undo of the deletion: %v", err)
	}
	if got := f.read("sub/run.sh"); got != "#!/bin/sh\necho hi\n" {
		t.Errorf("a refused undo touched run.sh: %q", got)
	}
	// Changed again since the command: refused, untouched.
	os.WriteFile(again, []byte("three\n"), 0o644)
	if err := Undo(ag, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) || !strings.Contains(err.Error(), "changed since the tool wrote it") {
		t.Errorf("undo of a file changed since: %v", err)
	}
	if got := f.read("again.txt"); got != "three\n" {
		t.Errorf("a refused undo touched again.txt: %q", got)
	}
}

// TestBashUndoBounds: files too large, or past the per-command budget, or
// with backups off, are listed as not undoable, with the reason.
func TestBashUndoBounds(t *testing.T) {
	f := bwrapFixture(t, false)
	defer func(m, b int64) { preimageMaxFile, preimageBudget = m, b }(preimageMaxFile, preimageBudget)
	preimageMaxFile, preimageBudget = 1000, 1500
	f.write("big.bin", strings.Repeat("x", 1001))
	f.write("a.txt", strings.Repeat("a", 900))
	f.write("b.txt", strings.Repeat("b", 900))
	res := f.run("bash", map[string]any{"command": "echo >> big.bin; echo >> a.txt; echo >> b.txt"})
	want(t, "bounds", res, true, "big.bin (not undoable: larger than the 1000B kept before a command)", "budget of backups per command was spent)")
	if n := strings.Count(res.Content, "budget of backups per command was spent)"); n != 1 || len(res.Changes) != 1 {
		t.Errorf("one of a.txt, b.txt fits the budget; %d over it, changes %+v:\n%s", n, res.Changes, res.Content)
	}

	// Past the files read per command, the most recently changed go first.
	defer func(n int) { preimageMaxFiles = n }(preimageMaxFiles)
	preimageMaxFiles, preimageBudget = 1, 1<<20
	old := f.write("old.txt", "o\n")
	os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	recent := f.write("recent.txt", "r\n")
	os.Remove(filepath.Join(f.dir, "big.bin"))
	res = f.run("bash", map[string]any{"command": "echo >> old.txt; echo >> recent.txt"})
	want(t, "files budget", res, true, "old.txt (not undoable: not backed up yet, past the 1 files read before a command)")
	if len(res.Changes) != 1 || res.Changes[0].Path != recent {
		t.Errorf("changes past the files budget: %+v", res.Changes)
	}

	f.env.BackupMaxBytes = -1
	res = f.run("bash", map[string]any{"command": "echo >> a.txt"})
	want(t, "backups off", res, true, "a.txt (not undoable: backups are off)")
	if len(res.Changes) != 0 {
		t.Errorf("changes with backups off: %+v", res.Changes)
	}
}

// TestBashPreimageDenyRead (attack): a file deny_read matches — by its
// name or a folder above it — is never copied into the backup store, even
// when the command changes or deletes it.
func TestBashPreimageDenyRead(t *testing.T) {
	f := bwrapFixture(t, false)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath},
		DenyRead: append([]string{"**/private/**"}, sandbox.DefaultDenyRead...)})
	const secret = "TOKEN=hunter2-very-secret"
	f.write(".env", secret+"\n")
	f.write("private/key.txt", secret+"\n")
	f.write("plain.txt", "public\n")
	res := f.run("bash", map[string]any{"command": "echo x > plain.txt; rm -f private/key.txt 2>/dev/null; true"})
	want(t, "deny", res, true, "changed: plain.txt")
	// The backup store must hold no copy of the secret, whatever the command could do.
	snap := snapshotRoots([]string{f.dir}, nil, f.env.Sandbox.DeniedEntry)
	for _, p := range []string{filepath.Join(f.dir, ".env"), filepath.Join(f.dir, "private", "key.txt")} {
		if _, ok := snap.files[p]; ok && !snap.denied[p] {
			t.Errorf("%s is not marked denied", p)
		}
	}
	pre := preserveFiles(backupsOf(f.env), snap)
	if w := pre.reason(filepath.Join(f.dir, ".env")); !strings.Contains(w, "deny_read") {
		t.Errorf(".env: %q", w)
	}
	filepath.WalkDir(f.env.BackupDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "hunter2") {
				t.Errorf("the secret landed in the backup store: %s", p)
			}
		}
		return nil
	})
}

// TestBashUndoSymlinkSwap (attack): a command that replaces a file with a
// symbolic link to a file outside is not undoable, and no undo writes
// through a link swapped in at the path (changed or deleted file).
func TestBashUndoSymlinkSwap(t *testing.T) {
	f := bwrapFixture(t, false)
	outside := filepath.Join(f.outside, "victim.txt")
	os.WriteFile(outside, []byte("precious\n"), 0o644)
	f.write("t.txt", "mine\n")
	f.write("d.txt", "deleted\n")
	res := f.run("bash", map[string]any{"command": "rm t.txt && ln -s " + outside + " t.txt"})
	want(t, "swap", res, true, "t.txt (not undoable: now a symbolic link)")
	if len(res.Changes) != 0 {
		t.Errorf("a file swapped for a link is undoable: %+v", res.Changes)
	}

	// A real change, then a link swapped in before the undo.
	res = f.run("bash", map[string]any{"command": "echo changed > t2.txt; rm d.txt"})
	del := changeOf(t, res, filepath.Join(f.dir, "d.txt"))
	dangling := filepath.Join(f.outside, "new.txt")
	if err := os.Symlink(dangling, filepath.Join(f.dir, "d.txt")); err != nil {
		t.Fatal(err)
	}
	if err := Undo(del, f.env.BackupDir); !errors.Is(err, ErrUndoChanged) {
		t.Errorf("undo of a deletion with a link at the path: %v", err)
	}
	if exists(dangling) {
		t.Errorf("undo wrote through a dangling link")
	}
	// A changed file swapped for a link to a file with the content the
	// command left: still never written through.
	f.write("c.txt", "v1\n")
	res = f.run("bash", map[string]any{"command": "echo precious > c.txt"})
	ch := changeOf(t, res, filepath.Join(f.dir, "c.txt"))
	os.Remove(filepath.Join(f.dir, "c.txt"))
	os.Symlink(outside, filepath.Join(f.dir, "c.txt"))
	if err := Undo(ch, f.env.BackupDir); err == nil {
		t.Errorf("undo through a link succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != "precious\n" {
		t.Errorf("undo wrote through the link: %q", b)
	}
}

// TestBashPreimageIndex: a file unchanged since it was kept is not read
// again by the next command; a blob pruned from the store is kept again.
func TestBashPreimageIndex(t *testing.T) {
	f := bwrapFixture(t, false)
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = -time.Hour // the files were just written: index them anyway
	for i := range 20 {
		f.write(filepath.Join("tree", string(rune('a'+i))+".txt"), strings.Repeat("z", i)+"\n")
	}
	n0 := preimageReads.Load()
	f.run("bash", map[string]any{"command": "true"})
	first := preimageReads.Load() - n0
	if first < 20 {
		t.Fatalf("first command read %d files, want ≥ 20", first)
	}
	n1 := preimageReads.Load()
	res := f.run("bash", map[string]any{"command": "echo changed > tree/a.txt"})
	if got := preimageReads.Load() - n1; got != 0 {
		t.Errorf("second command re-read %d unchanged files", got)
	}
	// The index still made the change undoable.
	if err := Undo(changeOf(t, res, filepath.Join(f.dir, "tree", "a.txt")), f.env.BackupDir); err != nil {
		t.Errorf("undo from an indexed pre-image: %v", err)
	}
	// Only the changed (restored) file is read again.
	n2 := preimageReads.Load()
	f.run("bash", map[string]any{"command": "true"})
	if got := preimageReads.Load() - n2; got != 1 {
		t.Errorf("third command read %d files, want 1 (the restored one)", got)
	}
	// Blobs pruned: the index is not trusted.
	ents, _ := os.ReadDir(f.env.BackupDir)
	for _, e := range ents {
		os.Remove(filepath.Join(f.env.BackupDir, e.Name()))
	}
	n3 := preimageReads.Load()
	f.run("bash", map[string]any{"command": "true"})
	if got := preimageReads.Load() - n3; got < 20 {
		t.Errorf("after pruning, %d files read again, want ≥ 20", got)
	}
}
