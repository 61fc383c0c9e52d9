//go:build linux

package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestStateInvisible is issue 24 #3 as attacks: another conversation's
// auto-approved bash grepped journal.db-wal and printed a tool result of
// this one. flemma's state (journal and its -wal, trust store, backups,
// logs, other conversations' full outputs) and the editor's (shada, undo,
// swap) are refused to read, write, grep, find and ls, and under
// bubblewrap not there at all for bash — even when they lie inside a
// writable root (the temporary folder, here); the conversation's own full
// outputs stay readable, as its notices name them.
func TestStateInvisible(t *testing.T) {
	f := newFixture(t)
	state := filepath.Join(f.outside, "state", "flemma")
	nvimState := filepath.Join(f.outside, "state-nvim")
	own := sandbox.OutputFolder(state, filepath.Join(f.dir, "chat.chat"))
	other := sandbox.OutputFolder(state, "/elsewhere/other.chat")
	files := map[string]string{
		filepath.Join(state, "journal.db-wal"):             "JOURNAL-OTHER-CHAT",
		filepath.Join(state, "trust.json"):                 "TRUST-STORE",
		filepath.Join(state, "backups", "x"):               "BACKUP-OF-A-FILE",
		filepath.Join(other, "flemma_tool_other_1.txt"):    "OTHER-CONVERSATION-OUTPUT",
		filepath.Join(nvimState, "swap", "%chat.chat.swp"): "SWAP-TEXT",
		filepath.Join(nvimState, "shada", "main.shada"):    "SHADA-REGISTERS",
		filepath.Join(nvimState, "undo", "%chat.chat"):     "UNDO-TEXT",
	}
	for p, text := range files {
		f.write(p, text)
	}
	ownFile := f.write(filepath.Join(own, "flemma_tool_own_1.txt"), "OWN-OUTPUT")
	leaked := func(what, out string) {
		t.Helper()
		for _, text := range files {
			if strings.Contains(out, text) {
				t.Errorf("%s: %s leaked:\n%s", what, text, out)
			}
		}
	}
	for _, bwrap := range []bool{false, true} {
		cfg := sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath, f.outside},
			Hidden: []string{state, nvimState}, HiddenExcept: []string{own}}
		if bwrap {
			requireBwrap(t)
			cfg.Backend = "bwrap"
		}
		f.setSandbox(cfg)
		for p := range files {
			res := f.run("read", map[string]any{"path": p})
			want(t, "read "+p, res, false, "never read or written by tools")
			res = f.run("write", map[string]any{"path": p, "content": "x"})
			want(t, "write "+p, res, false)
		}
		want(t, "read own output", f.run("read", map[string]any{"path": ownFile}), true, "OWN-OUTPUT")
		leaked("grep", f.run("grep", map[string]any{"pattern": ".", "path": f.outside}).Content)
		leaked("find", f.run("find", map[string]any{"pattern": "*", "path": f.outside}).Content)
		leaked("ls", f.run("ls", map[string]any{"path": state}).Content)
		if !bwrap {
			continue
		}
		res := f.run("bash", map[string]any{"command": "grep -r . " + f.outside + " 2>&1; cat " + filepath.Join(state, "journal.db-wal") + " 2>&1; cat " + ownFile + "; ls -la " + state + " 2>&1; true"})
		leaked("bash", res.Content)
		if !strings.Contains(res.Content, "OWN-OUTPUT") {
			t.Errorf("bash cannot read its own conversation's full output:\n%s", res.Content)
		}
		// Nor can it write there (the journal is not its to change).
		res = f.run("bash", map[string]any{"command": "echo x > " + filepath.Join(state, "journal.db-wal") + " 2>&1; echo y > " + ownFile + " 2>&1; true"})
		if b, _ := os.ReadFile(filepath.Join(state, "journal.db-wal")); string(b) != "JOURNAL-OTHER-CHAT" {
			t.Errorf("bash changed the journal: %q", b)
		}
		if b, _ := os.ReadFile(ownFile); string(b) != "OWN-OUTPUT" {
			t.Errorf("bash changed its own full output: %q", b)
		}
	}
}

// TestOutputsRetention: the full outputs of a conversation outlive the
// host (they are in the state folder, not a temporary one removed at
// exit), private to the user, and are removed only when unused for
// OutputMaxAge or beyond OutputMaxBytes (least recently used first; never
// the folder used last).
func TestOutputsRetention(t *testing.T) {
	state := t.TempDir()
	dirs := map[string]string{}
	for _, name := range []string{"/p/a.chat", "/p/b.chat", "/p/c.chat"} {
		d, err := sandbox.UseOutputFolder(state, name)
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = d
		if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v", d, fi.Mode().Perm())
		}
	}
	if sandbox.OutputFolder(state, "/p/a.chat") != dirs["/p/a.chat"] || dirs["/p/a.chat"] == dirs["/p/b.chat"] {
		t.Errorf("folders are not one per conversation, stable: %v", dirs)
	}
	// A spool left behind by a host killed mid-command goes after a day;
	// a fresh one (a command running now) stays.
	stale := filepath.Join(dirs["/p/b.chat"], ".flemma_tool_1.tmp")
	fresh := filepath.Join(dirs["/p/b.chat"], ".flemma_tool_2.tmp")
	os.WriteFile(stale, []byte("x"), 0o600)
	os.WriteFile(fresh, []byte("x"), 0o600)
	day := time.Now().Add(-25 * time.Hour)
	os.Chtimes(stale, day, day)
	if n := sandbox.SweepOutputs(state); n != 0 {
		t.Errorf("a sweep removed %d folders in use", n)
	}
	if exists(stale) || !exists(fresh) {
		t.Errorf("spools after the sweep: stale %v, fresh %v", exists(stale), exists(fresh))
	}
	// a.chat unused for longer than the retention.
	old := time.Now().Add(-sandbox.OutputMaxAge - time.Hour)
	os.Chtimes(dirs["/p/a.chat"], old, old)
	if n := sandbox.SweepOutputs(state); n != 1 || exists(dirs["/p/a.chat"]) || !exists(dirs["/p/b.chat"]) {
		t.Errorf("sweep of an old folder: removed %d", n)
	}
}

// TestStateHoldingTheProject: a project inside a hidden folder (a plugin
// developed in Neovim's data folder) stays the project — readable,
// writable, there for bash — while the rest of the folder stays hidden.
func TestStateHoldingTheProject(t *testing.T) {
	requireBwrap(t)
	data := filepath.Join(sandbox.CanonicalOr(scratchOutsideTmp(t)), "nvim-data")
	proj := filepath.Join(data, "lazy", "myplugin")
	f := newFixture(t)
	f.dir = proj
	f.write(filepath.Join(data, "sessions", "other.vim"), "OTHER-SESSION")
	f.write(filepath.Join(proj, "lua", "init.lua"), "return 1")
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Hidden: []string{data}})
	want(t, "read in the project", f.run("read", map[string]any{"path": "lua/init.lua"}), true, "return 1")
	want(t, "write in the project", f.run("write", map[string]any{"path": "lua/new.lua", "content": "x"}), true)
	want(t, "read the rest", f.run("read", map[string]any{"path": filepath.Join(data, "sessions", "other.vim")}), false, "never read or written")
	res := f.run("bash", map[string]any{"command": "cat lua/init.lua; echo; cat " + filepath.Join(data, "sessions", "other.vim") + " 2>&1; echo y > lua/b.lua && echo wrote"})
	if !strings.Contains(res.Content, "return 1") || !strings.Contains(res.Content, "wrote") || strings.Contains(res.Content, "OTHER-SESSION") {
		t.Errorf("bash in a project inside a hidden folder:\n%s", res.Content)
	}
}

// TestCommandCache: under bubblewrap, commands get a writable Go build
// cache of the project's (the user's, in the home folder, is read-only to
// them, and go test fails on it); tools.bash.env may name another; the
// none backend leaves the user's alone.
func TestCommandCache(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	cache := filepath.Join(f.outside, "state", "cache", "p1")
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, CacheDir: cache,
		Hidden: []string{filepath.Join(f.outside, "state")}})
	f.env.Environ = append(f.env.Environ, "GOCACHE=/home/u/.cache/go-build")
	res := f.run("bash", map[string]any{"command": "echo GOCACHE=$GOCACHE; mkdir -p $GOCACHE && echo x > $GOCACHE/probe && cat $GOCACHE/probe"})
	want(t, "cache", res, true, "GOCACHE="+filepath.Join(cache, "go-build"), "\nx")
	f.env.ExtraEnv = map[string]string{"GOCACHE": "/tmp/mine"}
	want(t, "user's GOCACHE", f.run("bash", map[string]any{"command": "echo GOCACHE=$GOCACHE"}), true, "GOCACHE=/tmp/mine")
	f.env.ExtraEnv = nil
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}, CacheDir: cache})
	want(t, "none backend", f.run("bash", map[string]any{"command": "echo GOCACHE=$GOCACHE"}), true, "GOCACHE=/home/u/.cache/go-build")
}
