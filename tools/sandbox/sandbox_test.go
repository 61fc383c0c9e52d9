package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNewSandboxRoots pins reference §12 #56.
func TestNewSandboxRoots(t *testing.T) {
	cwd := CanonicalOr(t.TempDir())
	bufDir := CanonicalOr(t.TempDir())
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(bufDir, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLEMMA_TEST_ROOT", filepath.Join(cwd, "sub"))
	t.Setenv("FLEMMA_UNSET_VAR", "")
	tests := []struct {
		name     string
		writable []string
		buffer   string
		want     []string
	}{
		{"cwd urn", []string{URNCwd}, "", []string{cwd}},
		{"buffer urn resolves symlinks", []string{URNBufferPath}, filepath.Join(link, "a.chat"), []string{bufDir}},
		{"buffer urn dropped when unnamed", []string{URNBufferPath}, "", nil},
		{"unset var dropped", []string{"$FLEMMA_UNSET_VAR"}, "", nil},
		{"default used when unset", []string{"${FLEMMA_UNSET_VAR:-" + bufDir + "}"}, "", []string{bufDir}},
		{"var expanded", []string{"${FLEMMA_TEST_ROOT}"}, "", []string{filepath.Join(cwd, "sub")}},
		{"nested roots collapse", []string{cwd, filepath.Join(cwd, "sub"), filepath.Join(cwd, "x", "y")}, "", []string{cwd}},
		{"relative to cwd", []string{"."}, "", []string{cwd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := New(Config{Enabled: true, Writable: tt.writable}, cwd, tt.buffer)
			if err != nil {
				t.Fatal(err)
			}
			if got := sb.Roots(); !slices.Equal(got, tt.want) {
				t.Errorf("Roots() = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := New(Config{Writable: []string{"urn:flemma:nope"}}, cwd, ""); err == nil || !strings.Contains(err.Error(), "unknown URN variable 'urn:flemma:nope'") {
		t.Errorf("unknown URN: %v", err)
	}
	if _, err := New(Config{Backend: "docker"}, cwd, ""); err == nil || !strings.Contains(err.Error(), "unknown sandbox backend") {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := New(Config{DenyRead: []string{"[bad"}}, cwd, ""); err == nil {
		t.Errorf("bad deny glob accepted")
	}
	sb, _ := New(DefaultConfig(), cwd, "")
	if !slices.Contains(sb.Roots(), CanonicalOr(os.TempDir())) && !slices.ContainsFunc(sb.Roots(), func(r string) bool { return within(CanonicalOr(os.TempDir()), r) }) {
		t.Errorf("default roots %v lack the temp dir", sb.Roots())
	}
}

// TestSandboxChecks is the table of escape attempts: every one must be
// refused, naming the rule.
func TestSandboxChecks(t *testing.T) {
	home := CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("KEY"), 0o600)
	root := CanonicalOr(t.TempDir())
	outside := CanonicalOr(t.TempDir())
	os.Symlink(outside, filepath.Join(root, "out-link"))
	os.Symlink(filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(root, "notes.txt"))
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("ok"), 0o644)
	sb, err := New(Config{Enabled: true, Writable: []string{URNCwd}}, root, "")
	if err != nil {
		t.Fatal(err)
	}
	type check func(string) (string, error)
	tests := []struct {
		name  string
		check check
		path  string
		rule  string // "" = allowed
	}{
		{"write inside", sb.CheckWrite, "new/dir/file.txt", ""},
		{"write inside absolute", sb.CheckWrite, filepath.Join(root, "ok.txt"), ""},
		{"read plain file", sb.CheckRead, "ok.txt", ""},
		{"read outside roots is allowed", sb.CheckRead, filepath.Join(outside, "x"), ""},
		{"dot-dot traversal", sb.CheckWrite, "../" + filepath.Base(outside) + "/x", "outside writable"},
		{"deep traversal", sb.CheckWrite, "a/b/../../../../../../etc/passwd", "outside writable"},
		{"absolute outside", sb.CheckWrite, "/etc/passwd", "outside writable"},
		{"symlinked dir pointing outside", sb.CheckWrite, "out-link/x", "outside writable"},
		{"symlink to a key, read", sb.CheckRead, "notes.txt", "deny_read"},
		{"ssh key via tilde", sb.CheckRead, "~/.ssh/id_rsa", `"**/.ssh/**"`},
		{"ssh key absolute", sb.CheckRead, filepath.Join(home, ".ssh", "id_rsa"), "deny_read"},
		{"ssh dir upper case", sb.CheckRead, "~/.SSH/id_rsa", "deny_read"},
		{"key upper case", sb.CheckRead, "~/keys/ID_RSA", "deny_read"},
		{"full-width letters", sb.CheckRead, "~/.ｓｓｈ/id_rsa", "deny_read"},
		{"zero-width space", sb.CheckRead, "~/.ss\u200bh/id_rsa", "deny_read"},
		{"decomposed accent in a pem", sb.CheckRead, "certs/cle\u0301.PEM", "deny_read"},
		{"pem upper case", sb.CheckRead, "server.PEM", "deny_read"},
		{"gnupg", sb.CheckRead, "~/.gnupg/private-keys-v1.d/x", "deny_read"},
		{"write into .ssh inside a root", sb.CheckWrite, ".ssh/authorized_keys", "deny_read"},
		{"proc self root to outside", sb.CheckWrite, "/proc/self/root/etc/passwd", "/proc"},
		{"proc self root back inside", sb.CheckWrite, "/proc/self/root" + root + "/x", "/proc"},
		{"proc self cwd", sb.CheckWrite, "/proc/self/cwd/x", "/proc"},
		{"proc environ read", sb.CheckRead, "/proc/self/environ", "/proc"},
		{"proc pid mem read", sb.CheckRead, "/proc/1/mem", "/proc"},
		{"dev write", sb.CheckWrite, "/dev/sda", "/dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.check(tt.path)
			if tt.rule == "" {
				if err != nil {
					t.Errorf("check(%q) = %v, want allowed", tt.path, err)
				}
				if !filepath.IsAbs(got) {
					t.Errorf("check(%q) resolved to %q", tt.path, got)
				}
				return
			}
			var de *DenyError
			if !errors.As(err, &de) {
				t.Fatalf("check(%q) = %q, %v; want a refusal", tt.path, got, err)
			}
			if !strings.Contains(de.Error(), tt.rule) {
				t.Errorf("check(%q) = %q, want the rule %q named", tt.path, de.Error(), tt.rule)
			}
		})
	}
	if sb.IsPathWritable("/etc/passwd") || !sb.IsPathWritable("ok.txt") {
		t.Errorf("IsPathWritable disagrees with CheckWrite")
	}
	off, _ := New(Config{Enabled: false}, root, "")
	if _, err := off.CheckWrite("/etc/x"); err != nil {
		t.Errorf("disabled sandbox refused: %v", err)
	}
	if _, err := off.CheckRead("~/.ssh/id_rsa"); err != nil {
		t.Errorf("disabled sandbox refused a read: %v", err)
	}
}

func TestFoldPath(t *testing.T) {
	for in, want := range map[string]string{
		"/Home/U/.SSH":      "/home/u/.ssh",
		"/ｈｏｍｅ":             "/home",
		"a\u200b\u200db":    "ab",
		"e\u0301":           "é",
		"\u00ad.ssh":        ".ssh",
		"/x/\u202e.ssh/key": "/x/.ssh/key",
	} {
		if got := foldPath(in); got != want {
			t.Errorf("foldPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBwrapArgv pins reference §12 #57 (shape of the wrapped command), as
// changed by issue 11: every namespace, no capabilities, the session's
// socket folders hidden before the roots are bound.
func TestBwrapArgv(t *testing.T) {
	home := CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	root := CanonicalOr(t.TempDir())
	for _, network := range []bool{true, false} {
		sb, _ := New(Config{Enabled: true, Backend: "bwrap", Writable: []string{URNCwd, "/nonexistent-root"}, Network: network}, root, "")
		argv := sb.bwrapArgv("/usr/bin/bwrap", []string{"bash", "-c", "echo hi"})
		s := strings.Join(argv, " ")
		for _, frag := range []string{
			"/usr/bin/bwrap --ro-bind / / ",
			" --bind " + root + " " + root + " --dev /dev --proc /proc ",
			"--tmpfs " + filepath.Join(home, ".ssh"),
			"--unshare-all --unshare-user",
			"--cap-drop ALL",
			"--die-with-parent --new-session bash -c echo hi",
		} {
			if !strings.Contains(s, frag) {
				t.Errorf("argv lacks %q:\n%s", frag, s)
			}
		}
		if fi, err := os.Stat("/run/user"); err == nil && fi.IsDir() {
			hide, bind := strings.Index(s, " --tmpfs /run/user "), strings.Index(s, " --bind ")
			if hide < 0 || bind >= 0 && hide > bind {
				t.Errorf("/run/user not hidden before the roots: %s", s)
			}
		}
		if strings.Contains(s, "/nonexistent-root") {
			t.Errorf("a missing root was bound: %s", s)
		}
		if network != strings.Contains(s, "--share-net") || strings.Contains(s, "--unshare-net") {
			t.Errorf("network=%v: %s", network, s)
		}
		if strings.Contains(s, "--tmpfs /run ") {
			t.Errorf("/run must stay (it holds resolv.conf's target): %s", s)
		}
	}
	none, _ := New(Config{Enabled: true, Backend: "none"}, root, "")
	if got, err := none.WrapCommand([]string{"bash", "-c", "x"}); err != nil || len(got) != 3 {
		t.Errorf("none backend wrapped: %v %v", got, err)
	}
	if none.Backend() != "none" || none.Available() || !strings.Contains(none.Status(), "backend: none") {
		t.Errorf("none backend: %s %v\n%s", none.Backend(), none.Available(), none.Status())
	}
	off, _ := New(Config{Enabled: false, Backend: "bwrap"}, root, "")
	if got, _ := off.WrapCommand([]string{"x"}); len(got) != 1 || off.Backend() != "none" || !strings.Contains(off.Status(), "disabled") {
		t.Errorf("disabled sandbox wrapped %v / backend %s", got, off.Backend())
	}
}

func TestExpandVars(t *testing.T) {
	t.Setenv("FLEMMA_A", "/a")
	t.Setenv("FLEMMA_EMPTY", "")
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"$FLEMMA_A/x", "/a/x", true}, {"${FLEMMA_A}/x", "/a/x", true}, {"${FLEMMA_EMPTY:-/fb}", "/fb", true},
		{"${FLEMMA_EMPTY:-~/c}", "/home/h/c", true}, {"$FLEMMA_EMPTY", "", false}, {"/plain", "/plain", true}, {"cost$", "cost$", true},
	} {
		got, ok := expandVars(tt.in, "/home/h")
		if got != tt.want || ok != tt.ok {
			t.Errorf("expandVars(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// The project's deny_read files are hidden even when it lies in a large
// root whose budget other programs' files use up first: a chat under
// /tmp (root: $TMPDIR) next to 10,000 other entries had its .env left
// visible to bash. The folder commands work in is scanned first.
func TestProjectScannedBeforeItsRoot(t *testing.T) {
	tmp := CanonicalOr(t.TempDir())
	t.Setenv("TMPDIR", tmp)
	clutter := filepath.Join(tmp, "aaa-clutter")
	if err := os.MkdirAll(clutter, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < scanTempEntries+10; i++ {
		if err := os.WriteFile(filepath.Join(clutter, fmt.Sprintf("f%05d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	proj := filepath.Join(tmp, "zzz-proj", "sub")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(proj, ".env")
	if err := os.WriteFile(secret, []byte("X=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Config{Enabled: true, Backend: "bwrap", Writable: []string{"${TMPDIR:-/tmp}"}, DenyRead: DefaultDenyRead}, proj, filepath.Join(proj, "c.chat"))
	if err != nil {
		t.Fatal(err)
	}
	p := sb.planMasks()
	if !slices.Contains(p.null, secret) {
		t.Errorf("%s not hidden; hidden files %v, notes %v", secret, p.null, p.notes)
	}
}
