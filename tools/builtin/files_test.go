//go:build unix

package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestRead pins reference §7.2 and §12 #47.
func TestRead(t *testing.T) {
	f := newFixture(t)
	ten := lines(10, func(i int) string { return fmt.Sprintf("line %d", i) })
	f.write("ten.txt", ten+"\n")
	f.write("big.txt", lines(2500, func(i int) string { return fmt.Sprintf("row %d", i) }))
	f.write("wide.txt", lines(100, func(i int) string { return strings.Repeat("w", 1000) }))
	f.write("huge-line.txt", strings.Repeat("h", 60000)+"\nsecond")
	f.write("crlf.txt", "\xef\xbb\xbfone\r\ntwo\r\n")
	f.write("empty.txt", "")
	f.write("image (1).png", "\x89PNG\r\n\x1a\n\x00\x00")
	f.write("blob.bin", "abc\x00def")
	f.write("color.log", "\x1b[31merror\x1b[0m")
	os.Mkdir(filepath.Join(f.dir, "adir"), 0o755)
	syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644)

	tests := []struct {
		name  string
		input map[string]any
		ok    bool
		want  []string
		exact string
	}{
		{"whole file", map[string]any{"path": "ten.txt"}, true, nil, ten},
		{"offset", map[string]any{"path": "ten.txt", "offset": 3}, true, []string{"line 3\nline 4"}, ""},
		{"offset floors", map[string]any{"path": "ten.txt", "offset": 3.9, "limit": 1}, true, nil, "line 3\n\n[7 more lines in file. Use offset=4 to continue.]"},
		{"limit", map[string]any{"path": "ten.txt", "limit": 3}, true, nil, "line 1\nline 2\nline 3\n\n[7 more lines in file. Use offset=4 to continue.]"},
		{"last line", map[string]any{"path": "ten.txt", "offset": 10}, true, nil, "line 10"},
		{"offset beyond", map[string]any{"path": "ten.txt", "offset": 100}, false, nil, "Offset 100 is beyond end of file (10 lines total)"},
		{"by lines", map[string]any{"path": "big.txt"}, true, []string{"row 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"}, ""},
		{"by lines from offset", map[string]any{"path": "big.txt", "offset": 2001}, true, nil, lines(500, func(i int) string { return fmt.Sprintf("row %d", 2000+i) })},
		{"by bytes", map[string]any{"path": "wide.txt"}, true, []string{"\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]"}, ""},
		{"first line too big", map[string]any{"path": "huge-line.txt"}, true, nil, "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' huge-line.txt | head -c 51200]"},
		{"line after the huge one", map[string]any{"path": "huge-line.txt", "offset": 2}, true, nil, "second"},
		{"crlf and bom", map[string]any{"path": "crlf.txt"}, true, nil, "one\ntwo"},
		{"empty file", map[string]any{"path": "empty.txt"}, true, nil, "(empty file)"},
		{"png reference", map[string]any{"path": "image (1).png"}, true, nil, "@./image%20(1).png;type=image/png"},
		{"absolute png reference", map[string]any{"path": filepath.Join(f.dir, "image (1).png")}, true, nil, "@/" + strings.ReplaceAll(filepath.Join(f.dir, "image%20(1).png"), " ", "%20") + ";type=image/png"},
		{"binary by nul", map[string]any{"path": "blob.bin"}, true, nil, "@./blob.bin;type=application/octet-stream"},
		{"control sequences stripped", map[string]any{"path": "color.log"}, true, nil, "error"},
		{"missing", map[string]any{"path": "nope.txt"}, false, nil, "File not found: nope.txt"},
		{"directory", map[string]any{"path": "adir"}, false, []string{"File not found: adir", "use ls"}, ""},
		{"fifo does not block", map[string]any{"path": "fifo"}, false, nil, "File not found: fifo"},
		{"empty path", map[string]any{"path": ""}, false, nil, "No path provided"},
		{"missing path is a validation error", map[string]any{"path": nil}, false, []string{"Invalid input for tool 'read'"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.run("read", tt.input)
			want(t, tt.name, res, tt.ok, tt.want...)
			if tt.exact != "" && res.Content != tt.exact {
				t.Errorf("content = %q\nwant %q", clip(res.Content), clip(tt.exact))
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:150] + " … " + s[len(s)-150:]
	}
	return s
}

// TestWrite pins reference §7.3 and §12 #48.
func TestWrite(t *testing.T) {
	f := newFixture(t)
	res := f.run("write", map[string]any{"path": "hello.txt", "content": "hello world"})
	want(t, "write", res, true, "Successfully wrote 11 bytes to hello.txt")
	if got := f.read("hello.txt"); got != "hello world" {
		t.Errorf("file = %q", got)
	}
	want(t, "nested", f.run("write", map[string]any{"path": "a/b/c.txt", "content": "x"}), true, "Successfully wrote 1 bytes to a/b/c.txt")
	if f.read("a/b/c.txt") != "x" {
		t.Errorf("nested file not written")
	}
	want(t, "empty content", f.run("write", map[string]any{"path": "empty.txt", "content": ""}), true, "Successfully wrote 0 bytes")
	want(t, "no path", f.run("write", map[string]any{"path": "", "content": "x"}), false, "No path provided")
	want(t, "missing content", f.run("write", map[string]any{"path": "x.txt"}), false, "Invalid input for tool 'write'", "/content")
	os.Mkdir(filepath.Join(f.dir, "adir"), 0o755)
	want(t, "directory target", f.run("write", map[string]any{"path": "adir", "content": "x"}), false, "Cannot write file: is a directory")

	// Overwrite keeps the mode of the file.
	p := f.write("script.sh", "old")
	os.Chmod(p, 0o751)
	want(t, "overwrite", f.run("write", map[string]any{"path": "script.sh", "content": "new"}), true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o751 {
		t.Errorf("mode after overwrite = %v", fi.Mode().Perm())
	}
	if left := tempFiles(t, f.dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Sandbox disabled: anything goes, even with no roots.
	f.setSandbox(sandbox.Config{Enabled: false, Writable: []string{}})
	out := filepath.Join(f.outside, "free.txt")
	want(t, "sandbox disabled", f.run("write", map[string]any{"path": out, "content": "x"}), true)
	if !exists(out) {
		t.Errorf("write with the sandbox disabled did not happen")
	}
}

// TestWriteEscapes is the table of escape attempts for write and edit:
// all refused, nothing created or changed outside the root.
func TestWriteEscapes(t *testing.T) {
	f := newFixture(t)
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	victim := filepath.Join(f.outside, "victim.txt")
	os.WriteFile(victim, []byte("original"), 0o644)
	os.Symlink(f.outside, filepath.Join(f.dir, "escape"))
	os.Symlink(victim, filepath.Join(f.dir, "victim-link.txt"))
	rel := "../" + filepath.Base(f.outside) + "/victim.txt"
	tests := []struct {
		name, path string
		rule       string
	}{
		{"dot-dot traversal", rel, "outside writable directories"},
		{"absolute outside", victim, "outside writable directories"},
		{"dir symlink inside root", "escape/victim.txt", "outside writable directories"},
		{"file symlink inside root", "victim-link.txt", "outside writable directories"},
		{"new file through dir symlink", "escape/new.txt", "outside writable directories"},
		{"proc self root", "/proc/self/root" + victim, "/proc"},
		{"proc self root into the root", "/proc/self/root" + f.dir + "/x.txt", "/proc"},
		{"ssh inside root", ".ssh/authorized_keys", "deny_read"},
		{"home ssh", "~/.ssh/authorized_keys", "deny_read"},
	}
	for _, tt := range tests {
		for _, tool := range []string{"write", "edit"} {
			t.Run(tool+"/"+tt.name, func(t *testing.T) {
				in := map[string]any{"path": tt.path, "content": "pwned"}
				if tool == "edit" {
					in = map[string]any{"path": tt.path, "oldText": "original", "newText": "pwned"}
				}
				res := f.run(tool, in)
				want(t, tt.name, res, false, "Sandbox: "+tool+" denied – ", tt.rule, tt.path)
				if b, _ := os.ReadFile(victim); string(b) != "original" {
					t.Fatalf("victim changed to %q", b)
				}
				if exists(filepath.Join(f.outside, "new.txt")) {
					t.Fatalf("a file was created outside")
				}
			})
		}
	}
	if res := f.run("write", map[string]any{"path": victim, "content": "x"}); !strings.Contains(res.Content, "Writable directories: "+f.dir) {
		t.Errorf("refusal does not list the writable directories: %s", res.Content)
	}
}

// TestWriteSymlinkSwap swaps a directory of the path for a symlink pointing
// outside, after the sandbox check (before the write) and after the
// temporary file is written (before the rename): the write must not follow
// it.
func TestWriteSymlinkSwap(t *testing.T) {
	for _, c := range []struct{ tool, stage string }{{"write", "after check"}, {"write", "before rename"}, {"edit", "after check"}, {"edit", "before rename"}} {
		tool, stage := c.tool, c.stage
		t.Run(tool+"/"+stage, func(t *testing.T) {
			f := newFixture(t)
			sub := filepath.Join(f.dir, "sub")
			os.Mkdir(sub, 0o755)
			f.write("sub/file.txt", "original")
			swap := func(string) {
				os.Rename(sub, sub+".moved")
				os.Symlink(f.outside, sub)
			}
			if stage == "after check" {
				testHookAfterCheck = swap
			} else {
				testhook.BeforeRename = swap
			}
			defer func() { testHookAfterCheck, testhook.BeforeRename = nil, nil }()
			in := map[string]any{"path": "sub/file.txt", "content": "pwned"}
			if tool == "edit" {
				in = map[string]any{"path": "sub/file.txt", "oldText": "original", "newText": "pwned"}
			}
			res := f.run(tool, in)
			want(t, "swapped "+tool, res, false, "Cannot write file: the path changed")
			if exists(filepath.Join(f.outside, "file.txt")) {
				t.Errorf("the write followed the swapped symlink")
			}
			if got := f.read("sub.moved/file.txt"); got != "original" {
				t.Errorf("original file = %q", got)
			}
			if left := append(tempFiles(t, f.dir), tempFiles(t, f.outside)...); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// TestEdit pins reference §7.4 and §12 #49, stale-file protection and
// atomic writes.
func TestEdit(t *testing.T) {
	f := newFixture(t)
	p := f.write("a.txt", "alpha beta\ngamma\nbeta\n")
	edit := func(old, new string) tools.Result {
		return f.run("edit", map[string]any{"path": "a.txt", "oldText": old, "newText": new})
	}
	want(t, "two occurrences", edit("beta", "B"), false, "Found 2 occurrences of the text in a.txt. The text must be unique. Please provide more context to make it unique.")
	if f.read("a.txt") != "alpha beta\ngamma\nbeta\n" {
		t.Errorf("file changed by a refused edit")
	}
	want(t, "not found", edit("delta", "x"), false, "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines.")
	want(t, "pattern chars are plain text", edit("a.*a", "x"), false, "Could not find the exact text")
	want(t, "identical", edit("gamma", "gamma"), false, "No changes made to a.txt. The replacement produced identical content.")
	want(t, "empty oldText", edit("", "x"), false, "No oldText provided")
	want(t, "missing newText", f.run("edit", map[string]any{"path": "a.txt", "oldText": "gamma"}), false, "Invalid input for tool 'edit'", "/newText")
	want(t, "no path", f.run("edit", map[string]any{"path": "", "oldText": "a", "newText": "b"}), false, "No path provided")
	want(t, "missing file", f.run("edit", map[string]any{"path": "nope.txt", "oldText": "a", "newText": "b"}), false, "File not found: nope.txt")
	want(t, "replace", edit("gamma\n", "GAMMA\n"), true, "Successfully replaced text in a.txt.")
	want(t, "delete", edit("alpha ", ""), true)
	if got := f.read("a.txt"); got != "beta\nGAMMA\nbeta\n" {
		t.Errorf("after edits: %q", got)
	}
	f.write("over.txt", "aaa")
	want(t, "overlapping count", f.run("edit", map[string]any{"path": "over.txt", "oldText": "aa", "newText": "b"}), false, "Found 2 occurrences")

	// Permissions survive an edit; the edit is atomic (no temporary files).
	os.Chmod(p, 0o600)
	want(t, "edit keeps mode", edit("GAMMA", "gamma"), true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after edit = %v, want 0600", fi.Mode().Perm())
	}
	if left := tempFiles(t, f.dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// CRLF files are edited the way read shows them.
	f.write("win.txt", "one\r\ntwo\r\nthree\r\n")
	want(t, "crlf", f.run("edit", map[string]any{"path": "win.txt", "oldText": "one\ntwo", "newText": "1\n2"}), true)
	if got := f.read("win.txt"); got != "1\r\n2\r\nthree\r\n" {
		t.Errorf("crlf edit: %q", got)
	}
}

// TestEditStale: read → external change → edit refused; read → edit →
// edit fine; write → edit fine.
func TestEditStale(t *testing.T) {
	f := newFixture(t)
	f.write("s.txt", "one\ntwo\n")
	want(t, "read", f.run("read", map[string]any{"path": "s.txt"}), true)
	f.write("s.txt", "one\ntwo\nthree\n") // changed behind the model's back
	res := f.run("edit", map[string]any{"path": "s.txt", "oldText": "two", "newText": "2"})
	want(t, "stale", res, false, "File changed since you last read it: s.txt", "Read it again")
	if f.read("s.txt") != "one\ntwo\nthree\n" {
		t.Errorf("stale edit changed the file")
	}
	want(t, "re-read", f.run("read", map[string]any{"path": "s.txt", "limit": 1}), true)
	want(t, "edit after re-read", f.run("edit", map[string]any{"path": "s.txt", "oldText": "two", "newText": "2"}), true)
	want(t, "second edit", f.run("edit", map[string]any{"path": "s.txt", "oldText": "three", "newText": "3"}), true)
	want(t, "write", f.run("write", map[string]any{"path": "w.txt", "content": "x y"}), true)
	want(t, "edit after write", f.run("edit", map[string]any{"path": "w.txt", "oldText": "y", "newText": "z"}), true)

	// Another conversation has its own log.
	f.call.Bufnr = 2
	want(t, "other buffer never read it", f.run("edit", map[string]any{"path": "s.txt", "oldText": "3", "newText": "three"}), true)
	f.env.RequireRead = true
	f.write("fresh.txt", "x")
	want(t, "require read", f.run("edit", map[string]any{"path": "fresh.txt", "oldText": "x", "newText": "y"}), false, "Read fresh.txt before editing it")
}

// TestLs pins reference §7.7 and §12 #52.
func TestLs(t *testing.T) {
	f := newFixture(t)
	os.Remove(filepath.Join(f.dir, "chat.chat"))
	f.write("beta.txt", "")
	f.write("Alpha.txt", "")
	f.write(".hidden", "")
	f.write("alpha/nested.txt", "")
	f.write("alpha/deeper/x.txt", "")
	os.Mkdir(filepath.Join(f.dir, "Zeta"), 0o755)
	os.Symlink(filepath.Join(f.dir, "alpha"), filepath.Join(f.dir, "link-dir"))
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	os.WriteFile(filepath.Join(home, "in-home.txt"), nil, 0o644)

	tests := []struct {
		name  string
		input map[string]any
		ok    bool
		exact string
	}{
		{"dirs first, hidden included", map[string]any{"path": "."}, true, "alpha/\nlink-dir/\nZeta/\n.hidden\nAlpha.txt\nbeta.txt\n\n[6 entries]"},
		{"limit", map[string]any{"path": ".", "limit": 2}, true, ".hidden\nAlpha.txt\n\n[2 entries, limit reached]"},
		{"depth 2", map[string]any{"path": ".", "max_depth": 2}, true, "alpha/\nalpha/deeper/\nlink-dir/\nZeta/\n.hidden\nAlpha.txt\nalpha/nested.txt\nbeta.txt\n\n[8 entries, depth=2]"},
		{"depth capped at 10", map[string]any{"path": "alpha", "max_depth": 100}, true, "deeper/\ndeeper/x.txt\nnested.txt\n\n[3 entries, depth=10]"},
		{"tilde", map[string]any{"path": "~"}, true, ".ssh/\nin-home.txt\n\n[2 entries]"},
		{"empty", map[string]any{"path": "Zeta"}, true, "(empty directory)"},
		{"not a directory", map[string]any{"path": "beta.txt"}, false, "Directory not found: beta.txt"},
		{"missing", map[string]any{"path": "nope"}, false, "Directory not found: nope"},
		{"no path", map[string]any{"path": ""}, false, "No path provided"},
		{"denied", map[string]any{"path": "~/.ssh"}, false, ""},
	}
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.run("ls", tt.input)
			want(t, tt.name, res, tt.ok)
			if tt.exact != "" && res.Content != tt.exact {
				t.Errorf("content = %q\nwant %q", res.Content, tt.exact)
			}
		})
	}
}

// TestLsBounds: depth 1 to 10 (default 1), limit at least 1 (default
// 500), fractions rounded down.
func TestLsBounds(t *testing.T) {
	n := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		depth, limit *float64
		wd, wl       int
	}{
		{nil, nil, 1, 500},
		{n(3), n(20), 3, 20},
		{n(2.9), n(20.7), 2, 20},
		{n(0), n(0), 1, 1},
		{n(-4), n(-1), 1, 1},
		{n(0.5), n(1.5), 1, 1},
		{n(10), nil, 10, 500},
		{n(11), n(1e6), 10, 1000000},
	} {
		if d, l := lsBounds(LsInput{MaxDepth: tt.depth, Limit: tt.limit}); d != tt.wd || l != tt.wl {
			t.Errorf("max_depth %v limit %v: %d, %d; want %d, %d", tt.depth, tt.limit, d, l, tt.wd, tt.wl)
		}
	}
}

// TestReadEscapes: secrets are refused by read, grep and ls however they
// are named.
func TestReadEscapes(t *testing.T) {
	f := newFixture(t)
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	key := filepath.Join(home, ".ssh", "id_rsa")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----"), 0o600)
	os.Symlink(key, filepath.Join(f.dir, "innocent.txt"))
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(f.dir, "dotssh"))
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{"read", map[string]any{"path": "~/.ssh/id_rsa"}},
		{"read", map[string]any{"path": key}},
		{"read", map[string]any{"path": "innocent.txt"}},
		{"read", map[string]any{"path": "dotssh/id_rsa"}},
		{"read", map[string]any{"path": "~/.SSH/ID_RSA"}},
		{"read", map[string]any{"path": "/proc/self/environ"}},
		{"read", map[string]any{"path": "/proc/self/root" + key}},
		{"grep", map[string]any{"pattern": "PRIVATE", "path": "~/.ssh"}},
		{"grep", map[string]any{"pattern": "PRIVATE", "path": "dotssh"}},
		{"ls", map[string]any{"path": "dotssh"}},
	} {
		res := f.run(c.tool, c.input)
		want(t, fmt.Sprintf("%s %v", c.tool, c.input), res, false, "Sandbox: read denied – ")
		if strings.Contains(res.Content, "PRIVATE KEY") {
			t.Errorf("%s %v leaked the key", c.tool, c.input)
		}
	}
	// A search of the home directory skips the key without a word.
	res := f.run("grep", map[string]any{"pattern": "PRIVATE", "path": home})
	want(t, "grep home", res, true, "No matches found.")
}
