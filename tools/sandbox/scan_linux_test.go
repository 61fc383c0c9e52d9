package sandbox

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
)

// TestEntryStep: what the scan does first with an entry is told by its
// type and name alone, in this order — a socket (nothing under the socket
// filter), .git (a folder, a file or a symlink), a symlink, a socket
// folder at the top of a temporary folder (without the filter), else the
// rules.
func TestEntryStep(t *testing.T) {
	for _, c := range []struct {
		name    string
		typ     uint8
		entry   string
		depth   int
		temp    bool
		seccomp bool
		want    scanStep
	}{
		{"socket", dtSock, "agent.sock", 3, false, false, stepSocket},
		{"socket under the filter", dtSock, "agent.sock", 3, false, true, stepNone},
		{"socket named .git", dtSock, ".git", 1, false, false, stepSocket},
		{"socket named like a deny rule", dtSock, ".env", 0, true, false, stepSocket},
		{"symlink", dtLink, "link", 2, false, false, stepLink},
		{"symlink under the filter", dtLink, "link", 2, false, true, stepLink},
		{"symlink named .git", dtLink, ".git", 0, false, false, stepGit},
		{"X11 folder at the top of a temp", dtDir, ".X11-unix", 0, true, false, stepSocketFolder},
		{"tmux folder at the top of a temp", dtDir, "tmux-1000", 0, true, false, stepSocketFolder},
		{"socket folder under the filter", dtDir, ".X11-unix", 0, true, true, stepRules},
		{"socket folder deeper", dtDir, ".X11-unix", 1, true, false, stepRules},
		{"socket folder outside a temp", dtDir, "tmux-1000", 0, false, false, stepRules},
		{"a file named like a socket folder", dtReg, "tmux-1000", 0, true, false, stepRules},
		{"a folder no prefix names", dtDir, "mytmux-1", 0, true, false, stepRules},
		{".git folder", dtDir, ".git", 4, false, false, stepGit},
		{".git file", dtReg, ".git", 0, true, true, stepGit},
		{".GIT is another name", dtDir, ".GIT", 0, false, false, stepRules},
		{"plain file", dtReg, "main.go", 0, false, false, stepRules},
		{"plain folder", dtDir, "src", 0, true, false, stepRules},
		{"fifo", 1, "pipe", 0, false, false, stepRules},
	} {
		if got := entryStep(c.typ, c.entry, c.depth, c.temp, c.seccomp); got != c.want {
			t.Errorf("%s: entryStep(%d, %q, %d, temp=%v, seccomp=%v) = %d, want %d", c.name, c.typ, c.entry, c.depth, c.temp, c.seccomp, got, c.want)
		}
	}
}

// TestChildItem: a folder found by the walk is one level deeper, keeps
// its parent's root and heaviness, is heavy when named like a heavy
// folder, is covered only as told, and in a temporary folder is anchored
// at its folder at depth 1.
func TestChildItem(t *testing.T) {
	for _, c := range []struct {
		name    string
		parent  scanItem
		abs     string
		covered bool
		temp    bool
		want    scanItem
	}{
		{"top of a root", scanItem{dir: "/p", inRoot: true}, "/p/src", false, false,
			scanItem{dir: "/p/src", depth: 1, inRoot: true}},
		{"covered", scanItem{dir: "/p", depth: 2}, "/p/env", true, false,
			scanItem{dir: "/p/env", depth: 3, protected: true}},
		{"protected parent, not covered as told", scanItem{dir: "/p", protected: true}, "/p/x", false, false,
			scanItem{dir: "/p/x", depth: 1}},
		{"heavy by name", scanItem{dir: "/p"}, "/p/node_modules", false, false,
			scanItem{dir: "/p/node_modules", depth: 1, heavy: true}},
		{"heavy by parent", scanItem{dir: "/p/node_modules", depth: 1, heavy: true}, "/p/node_modules/x", false, false,
			scanItem{dir: "/p/node_modules/x", depth: 2, heavy: true}},
		{"top of a temp anchors", scanItem{dir: "/tmp"}, "/tmp/app", false, true,
			scanItem{dir: "/tmp/app", depth: 1, anchor: "/tmp/app"}},
		{"deeper in a temp keeps the anchor", scanItem{dir: "/tmp/app", depth: 1, anchor: "/tmp/app"}, "/tmp/app/run", false, true,
			scanItem{dir: "/tmp/app/run", depth: 2, anchor: "/tmp/app"}},
		{"outside a temp no anchor", scanItem{dir: "/home/u"}, "/home/u/run", false, false,
			scanItem{dir: "/home/u/run", depth: 1}},
	} {
		name := c.abs[len(c.parent.dir)+1:]
		if got := childItem(c.parent, c.abs, name, c.covered, c.temp); got != c.want {
			t.Errorf("%s: childItem = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestScanModeType: an entry whose type the listing did not give is told
// by its mode; anything but a folder, a symlink or a socket counts as a
// regular file.
func TestScanModeType(t *testing.T) {
	for _, c := range []struct {
		mode uint32
		want uint8
	}{
		{syscall.S_IFDIR | 0o755, dtDir},
		{syscall.S_IFLNK | 0o777, dtLink},
		{syscall.S_IFSOCK | 0o600, dtSock},
		{syscall.S_IFREG | 0o644, dtReg},
		{syscall.S_IFIFO | 0o644, dtReg},
		{syscall.S_IFCHR | 0o666, dtReg},
		{syscall.S_IFBLK | 0o660, dtReg},
	} {
		if got := scanModeType(c.mode); got != c.want {
			t.Errorf("scanModeType(%o) = %d, want %d", c.mode, got, c.want)
		}
	}
}

// TestGitInnerRule: the protected-path rule the walk leaves to scanGit is
// .git itself (a built-in rule inside .git would be too, but
// DefaultProtected holds none: the walk never enters .git); a user's rule
// inside .git stays the walk's.
func TestGitInnerRule(t *testing.T) {
	for _, c := range []struct {
		glob string
		want bool
	}{
		{"**/.git", true},
		{"**/.git/config", false},
		{"**/.git/hooks/**", false},
		{"**/.git/info/mine", false},
		{"**/.envrc", false},
		{"**/.gitconfig", false},
	} {
		if got := gitInnerRule(&denyRule{glob: c.glob}); got != c.want {
			t.Errorf("gitInnerRule(%q) = %v, want %v", c.glob, got, c.want)
		}
	}
}

// TestRebindInPrivate: a folder a private temporary folder would hide is
// bound back read-only only when it lies strictly inside it, outside every
// root, once.
func TestRebindInPrivate(t *testing.T) {
	s := &Sandbox{roots: []string{"/tmp/proj"}}
	for _, c := range []struct {
		name   string
		keep   string
		temp   string
		rebind []string
		want   bool
	}{
		{"home inside /tmp", "/tmp/home", "/tmp", nil, true},
		{"home elsewhere", "/home/u", "/tmp", nil, false},
		{"a sibling named alike", "/tmpx/home", "/tmp", nil, false},
		{"the temp itself", "/tmp", "/tmp", nil, false},
		{"inside a root", "/tmp/proj/sub", "/tmp", nil, false},
		{"a root", "/tmp/proj", "/tmp", nil, false},
		{"already bound back", "/tmp/home", "/tmp", []string{"/tmp/home"}, false},
		{"unknown", "", "/tmp", nil, false},
		{"relative", ".", "/tmp", nil, false},
	} {
		if got := s.rebindInPrivate(c.keep, c.temp, c.rebind); got != c.want {
			t.Errorf("%s: rebindInPrivate(%q, %q, %q) = %v, want %v", c.name, c.keep, c.temp, c.rebind, got, c.want)
		}
	}
}

// TestScanProjectFirst: the working folder is scanned before the roots
// unless it is unknown, "/", already hidden or a temporary folder.
func TestScanProjectFirst(t *testing.T) {
	temps := []string{"/tmp", "/var/tmp/u"}
	seen := map[string]bool{"/run/user/1000/x": true}
	for _, c := range []struct {
		base string
		want bool
	}{
		{"/home/u/proj", true},
		{"/tmp/proj", true},
		{"/tmp", false},
		{"/var/tmp/u", false},
		{"/run/user/1000/x", false},
		{"/", false},
		{".", false},
		{"", false},
	} {
		if got := scanProjectFirst(c.base, seen, temps); got != c.want {
			t.Errorf("scanProjectFirst(%q) = %v, want %v", c.base, got, c.want)
		}
	}
}

// TestCapMasks: beyond scanMaxMasks mounts, read-only protected paths are
// kept first, then folders, then files, and a note says so.
func TestCapMasks(t *testing.T) {
	paths := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("/%s/%d", prefix, i)
		}
		return out
	}
	for _, c := range []struct {
		ro, tmpfs, null          int
		wantRO, wantTmpfs, wantN int
		note                     bool
	}{
		{10, 10, 10, 10, 10, 10, false},
		{scanMaxMasks - 2, 1, 1, scanMaxMasks - 2, 1, 1, false},
		{scanMaxMasks - 2, 1, 2, scanMaxMasks - 2, 1, 1, true},
		{scanMaxMasks - 1, 5, 5, scanMaxMasks - 1, 1, 0, true},
		{scanMaxMasks + 3, 5, 5, scanMaxMasks, 0, 0, true},
		{0, scanMaxMasks + 1, 7, 0, scanMaxMasks, 0, true},
		{0, 0, scanMaxMasks + 1, 0, 0, scanMaxMasks, true},
	} {
		p := &maskPlan{ro: paths("ro", c.ro), tmpfs: paths("tmpfs", c.tmpfs), null: paths("null", c.null)}
		p.capMasks()
		if len(p.ro) != c.wantRO || len(p.tmpfs) != c.wantTmpfs || len(p.null) != c.wantN || (len(p.notes) > 0) != c.note {
			t.Errorf("capMasks(%d, %d, %d) kept %d, %d, %d, notes %q; want %d, %d, %d, note %v",
				c.ro, c.tmpfs, c.null, len(p.ro), len(p.tmpfs), len(p.null), p.notes, c.wantRO, c.wantTmpfs, c.wantN, c.note)
		}
		if len(p.ro) > 0 && p.ro[0] != "/ro/0" || len(p.null) > 0 && p.null[0] != "/null/0" {
			t.Errorf("capMasks(%d, %d, %d) did not keep the first of each kind: %q %q", c.ro, c.tmpfs, c.null, p.ro[:1], p.null[:1])
		}
	}
}

// TestDropCovered: a file mask under a hidden folder goes, and so does one
// under a folder hidden early unless a root or a folder bound back shows
// it; a protected path inside a hidden folder stays hidden.
func TestDropCovered(t *testing.T) {
	s := &Sandbox{roots: []string{"/tmp/proj"}}
	p := &maskPlan{
		early:  []string{"/tmp", "/run/user"},
		rebind: []string{"/tmp/home"},
		tmpfs:  []string{"/h/.aws", "/tmp/proj/secrets"},
		null: []string{
			"/h/.aws/credentials", "/h/.netrc", "/tmp/other/.env", "/tmp/proj/.env", "/tmp/home/.netrc",
			"/tmp/proj/secrets/key.pem", "/run/user/1000/bus", "/srv/.env",
		},
		ro: []string{"/tmp/proj/.git", "/tmp/proj/secrets/.envrc", "/h/.aws/config", "/h/.bashrc"},
	}
	p.dropCovered(s)
	if want := []string{"/h/.netrc", "/srv/.env", "/tmp/home/.netrc", "/tmp/proj/.env"}; !slices.Equal(p.null, want) {
		t.Errorf("null = %q, want %q", p.null, want)
	}
	if want := []string{"/tmp/proj/.git", "/h/.bashrc"}; !slices.Equal(p.ro, want) {
		t.Errorf("ro = %q, want %q", p.ro, want)
	}
}

// TestSpecialListingGitDir: a folder is a git directory by git's own
// rule — HEAD a file or a symlink, with objects a folder or a symlink to
// one, or with a commondir file — whatever the links.
func TestSpecialListingGitDir(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(d string)
		want  bool
	}{
		{"HEAD and objects/", func(d string) { mkfile(t, d+"/HEAD"); mkdir(t, d+"/objects") }, true},
		{"HEAD and objects linked to a folder", func(d string) { mkfile(t, d+"/HEAD"); mkdir(t, d+"/../store"); symlink(t, "../store", d+"/objects") }, true},
		{"HEAD linked and objects/", func(d string) { symlink(t, "refs/heads/main", d+"/HEAD"); mkdir(t, d+"/objects") }, true},
		{"HEAD and commondir", func(d string) { mkfile(t, d+"/HEAD"); mkfile(t, d+"/commondir") }, true},
		{"HEAD and objects linked to a file", func(d string) { mkfile(t, d+"/HEAD"); mkfile(t, d+"/../f"); symlink(t, "../f", d+"/objects") }, false},
		{"HEAD and a dangling objects link", func(d string) { mkfile(t, d+"/HEAD"); symlink(t, "../none", d+"/objects") }, false},
		{"objects/ alone", func(d string) { mkdir(t, d+"/objects") }, false},
		{"HEAD alone", func(d string) { mkfile(t, d+"/HEAD") }, false},
	} {
		d := t.TempDir() + "/g"
		mkdir(t, d)
		c.setup(d)
		ents, err := readDirents(d, make([]byte, 4096), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := specialListing(d, ents); got != c.want {
			t.Errorf("%s: specialListing = %v, want %v", c.name, got, c.want)
		}
		if got := specialDir(d) != ""; got != c.want {
			t.Errorf("%s: specialDir = %v, want %v", c.name, got, c.want)
		}
	}
}

func mkdir(t *testing.T, d string) {
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mkfile(t *testing.T, p string) {
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
