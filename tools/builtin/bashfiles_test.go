package builtin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestBashTracksFiles: a sandboxed bash lists the files it created,
// changed and deleted in the writable roots, and the ones it created are
// undoable (removed while they hold what the command wrote).
func TestBashTracksFiles(t *testing.T) {
	f := bwrapFixture(t, false)
	f.write("change.txt", "a\n")
	f.write("gone.txt", "bye\n")
	f.write("keep.txt", "same\n")
	res := f.run("bash", map[string]any{"command": "echo new > made.txt; echo b >> change.txt; rm gone.txt; mkdir d; echo y > d/deep.txt; mkfifo pipe"})
	want(t, "bash", res, true, "Files in the writable roots the command changed:",
		"\n  created: d/deep.txt, made.txt", "\n  changed: change.txt", "\n  deleted: gone.txt")
	if strings.Contains(res.Content, "keep.txt") || strings.Contains(res.Content, "pipe") {
		t.Errorf("an untouched file is listed:\n%s", res.Content)
	}
	// Created, then changed, then deleted (see bashundo_test.go).
	if len(res.Changes) != 4 || res.Changes[1].Path != filepath.Join(f.dir, "made.txt") || res.Changes[1].Before != tools.BackupAbsent {
		t.Fatalf("changes = %+v", res.Changes)
	}
	if err := Undo(res.Changes[1], f.env.BackupDir); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if exists(filepath.Join(f.dir, "made.txt")) {
		t.Errorf("undo left the created file")
	}

	// Nothing changed: nothing listed.
	res = f.run("bash", map[string]any{"command": "cat keep.txt"})
	want(t, "read only", res, true, "same")
	if strings.Contains(res.Content, "Files in the writable roots") || len(res.Changes) != 0 {
		t.Errorf("a command that changed nothing lists changes:\n%s", res.Content)
	}
	// A failing command still says what it changed, and it is undoable.
	res = f.run("bash", map[string]any{"command": "echo x > half.txt; exit 3"})
	want(t, "failed", res, false, "Command exited with code 3", "created: half.txt")
	if len(res.Changes) != 1 || Undo(res.Changes[0], f.env.BackupDir) != nil || exists(filepath.Join(f.dir, "half.txt")) {
		t.Errorf("the change of a failed command is not undone: %+v", res.Changes)
	}
}

// TestBashTrackingBounds: tracking is bounded and says so; the temporary
// folder and roots nested in another are not walked twice or at all.
func TestBashTrackingBounds(t *testing.T) {
	tmp := sandbox.CanonicalOr(os.TempDir())
	if got := trackedRoots([]string{"/work/p/sub", tmp, "/work/p", "/"}); strings.Join(got, ",") != "/work/p" {
		t.Errorf("trackedRoots = %v", got)
	}
	// A chat in the temporary folder: its folder is tracked, not the rest.
	if got := trackedRoots([]string{tmp}, tmp+"/chat", tmp+"/chat/sub", "/elsewhere", tmp); strings.Join(got, ",") != tmp+"/chat" {
		t.Errorf("trackedRoots in the temporary folder = %v", got)
	}
	// flemma's own state (journal, backups) and output are not the command's.
	root := sandbox.CanonicalOr(t.TempDir())
	os.MkdirAll(filepath.Join(root, "state", "backups"), 0o755)
	os.WriteFile(filepath.Join(root, "state", "journal.db"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "mine.txt"), []byte("x"), 0o644)
	if got := snapshotRoots([]string{root}, []string{filepath.Join(root, "state")}, nil); len(got.files) != 1 {
		t.Errorf("snapshot with the state folder skipped = %v", got.files)
	}

	before := rootSnapshot{files: map[string]fileMeta{}}
	after := rootSnapshot{files: map[string]fileMeta{}, cut: true}
	for i := 0; i < maxTrackListed+5; i++ {
		after.files[filepath.Join("/r", strings.Repeat("f", 1+i%3)+string(rune('a'+i%26))+"-"+strconv.Itoa(i))] = fileMeta{size: 1}
	}
	c := compareSnapshots(before, after)
	c.why = map[string]string{c.created[len(c.created)-1]: "a symbolic link"}
	text := c.text("/r")
	if !strings.Contains(text, "(1 of the files not named are not undoable)") {
		t.Errorf("no count of the files not named that are not undoable:\n%s", text)
	}
	if !strings.Contains(text, "(and 5 more)") || !strings.Contains(text, "only the first 20000 entries") {
		t.Errorf("bounded text:\n%s", text)
	}
	if n := strings.Count(text, ", ") + 1; n != maxTrackListed {
		t.Errorf("%d names listed, want %d", n, maxTrackListed)
	}
}
