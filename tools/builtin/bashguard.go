package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// A command approved by a policy (Env.Protect) sees every existing
// protected path read-only, but bubblewrap cannot keep it from creating
// one that does not exist yet (a .git in a new folder, a .npmrc, an
// .envrc), nor from making a file executable. What the command did is
// known after it ends (the file tracking of the roots), and then put right
// (issue 24 #1), before the user's next git command or shell prompt:
//
//   - a protected path the command created is moved out of the project
//     into flemma's state (quarantine/<time>-<call>/…), where the user can
//     take it back;
//   - a protected path it changed is put back as it was (the file tracking
//     keeps the previous content), or named when that is not possible;
//   - a protected path that was a symbolic link (a .git leading to the
//     project's git directory, an .envrc leading to a shared one) and that
//     it replaced, repointed or removed is made again as it was, whatever
//     stands there now moved out like a created one: a mount cannot make a
//     link read-only (it lands on the target), so a command could
//     otherwise point the user's next git command at hooks it wrote;
//   - an executable bit it set on a file git does not track is cleared
//     (a tracked file's mode change shows in git's diff; an untracked
//     executable on PATH — ./bin/git with direnv's PATH_add — would not).
//
// The result says what was put right and that the user may run the
// command again, approving it themselves, to keep such a change.

// guardResult is what guardProtected did.
type guardResult struct {
	moved, restored, unrestored, unexec []string
	quarantine                          string
	drop                                map[string]bool // Changes no longer to offer for undo
}

// guardProtected puts right what a policy-approved command did to
// protected paths and executable bits (see above). c are its changes,
// after the roots as it left them, changes the undoable ones.
func guardProtected(sb *sandbox.Sandbox, c fileChanges, before, after rootSnapshot, changes []tools.Change, backups backupConfig, callID string) guardResult {
	g := guardResult{drop: map[string]bool{}}
	quarantine := func() string {
		if g.quarantine == "" {
			dir := backups.dir
			if dir == "" {
				dir, _ = DefaultBackupDir()
			}
			g.quarantine = filepath.Join(filepath.Dir(dir), "quarantine", time.Now().Format("20060102-150405")+"-"+safeID(callID))
		}
		return g.quarantine
	}
	g.moveCreated(sb, c.created, before, quarantine)
	g.relink(sb, c, before, quarantine)
	g.undoChanged(sb, c.changed, changes, backups)
	g.clearExec(c, before, after)
	return g
}

// moveCreated moves each protected path the command created into the
// quarantine, and the protected folders it made that are left empty.
func (g *guardResult) moveCreated(sb *sandbox.Sandbox, created []string, before rootSnapshot, quarantine func() string) {
	for _, p := range created {
		if _, ok := sb.Protected(p); !ok {
			continue
		}
		rel := strings.TrimPrefix(p, "/")
		if err := moveAside(p, filepath.Join(quarantine(), rel)); err != nil {
			g.unrestored = append(g.unrestored, p+" ("+err.Error()+")")
			continue
		}
		g.moved = append(g.moved, p)
		g.drop[p] = true
		removeEmptyProtectedDirs(sb, filepath.Dir(p), before)
	}
}

// relink makes again each protected symbolic link the command changed
// or removed, with the target it had before (what stands in its place
// moved to the quarantine's replaced/ folder).
func (g *guardResult) relink(sb *sandbox.Sandbox, c fileChanges, before rootSnapshot, quarantine func() string) {
	for _, list := range [][]string{c.changed, c.deleted} {
		for _, p := range list {
			target, ok := before.links[p]
			if !ok || !before.files[p].isSymlink() {
				continue
			}
			if _, ok := sb.Protected(p); !ok {
				continue
			}
			g.drop[p] = true
			if err := restoreLink(p, target.target, target.dir, func() string { return filepath.Join(quarantine(), "replaced", strings.TrimPrefix(p, "/")) }); err != nil {
				g.unrestored = append(g.unrestored, p+" ("+err.Error()+")")
				continue
			}
			g.restored = append(g.restored, p)
		}
	}
}

// undoChanged puts back each other protected file the command changed,
// from the backup taken before it (changes: the undoable ones).
func (g *guardResult) undoChanged(sb *sandbox.Sandbox, changed []string, changes []tools.Change, backups backupConfig) {
	undoable := map[string]tools.Change{}
	for _, ch := range changes {
		undoable[ch.Path] = ch
	}
	for _, p := range changed {
		if g.drop[p] {
			continue
		}
		if _, ok := sb.Protected(p); !ok {
			continue
		}
		ch, ok := undoable[p]
		if !ok || Undo(ch, backups.dir) != nil {
			g.unrestored = append(g.unrestored, p)
			continue
		}
		g.restored = append(g.restored, p)
		g.drop[p] = true
	}
}

// clearExec clears the executable bit the command set on a file git's
// index does not list.
func (g *guardResult) clearExec(c fileChanges, before, after rootSnapshot) {
	tracked := newGitTracked()
	for _, list := range [][]string{c.created, c.changed} {
		for _, p := range list {
			if g.drop[p] {
				continue
			}
			a, b := after.files[p], before.files[p]
			if a.isSymlink() || a.mode&0o111 == 0 || (b.mode != 0 && b.mode&0o111 == a.mode&0o111) {
				continue
			}
			if tracked.has(p) {
				continue
			}
			if f, err := sandbox.OpenNoFollow(p); err == nil {
				err = f.Chmod(a.mode.Perm() &^ 0o111)
				f.Close()
				if err == nil {
					g.unexec = append(g.unexec, p)
				}
			}
		}
	}
}

// text is the guard's account for the result ("" when it did nothing).
func (g guardResult) text(dir string) string {
	if len(g.moved)+len(g.restored)+len(g.unrestored)+len(g.unexec) == 0 {
		return ""
	}
	rel := func(ps []string) string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p
			if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
				out[i] = r
			}
		}
		if len(out) > maxTrackListed {
			out = append(out[:maxTrackListed], fmt.Sprintf("and %d more", len(out)-maxTrackListed))
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	b.WriteString("Protected paths: this command was approved by a policy, not by the user, so what it did to files that run code later was put right")
	if len(g.moved) > 0 {
		fmt.Fprintf(&b, "\n  created, moved to %s: %s", g.quarantine, rel(g.moved))
	}
	if len(g.restored) > 0 {
		fmt.Fprintf(&b, "\n  changed, put back as they were: %s", rel(g.restored))
	}
	if len(g.unrestored) > 0 {
		fmt.Fprintf(&b, "\n  changed, and could NOT be put back (check them): %s", rel(g.unrestored))
	}
	if len(g.unexec) > 0 {
		fmt.Fprintf(&b, "\n  made executable outside git's tracked files, executable bit cleared: %s", rel(g.unexec))
	}
	b.WriteString("\n  To make such a change, ask the user to approve the command themselves.")
	return b.String()
}

// removeEmptyProtectedDirs removes the folders from dir upwards that the
// command made (no tracked file was in them before), are protected (a new
// .git) and are empty now.
func removeEmptyProtectedDirs(sb *sandbox.Sandbox, dir string, before rootSnapshot) {
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, ok := sb.Protected(d); !ok {
			return
		}
		for p := range before.files {
			if strings.HasPrefix(p, d+"/") {
				return
			}
		}
		if removeEmptyDir(d) != nil { // not empty, or not ours to remove
			return
		}
	}
}

// safeID keeps a call id to file-name characters.
func safeID(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	if b.Len() > 64 {
		return b.String()[:64]
	}
	return b.String()
}
