package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// DefaultProtected are the built-in protected paths (issue 11 #9): files
// whose content runs as code later, without the user running it on
// purpose — git's configuration and hooks (core.fsmonitor, core.hooksPath,
// hooks run by every git command), shell start-up files, direnv and mise
// files run on `cd`, editor configurations that execute on open, and the
// places programs are started from. Same syntax as deny_read; matched
// against the path as written and as resolved. Config.Protected adds
// to them; the folder that a repository's core.hooksPath names is
// protected as well.
var DefaultProtected = []string{
	// git: configuration, hooks, and what points git elsewhere.
	"**/.git", "**/.git/config", "**/.git/config.worktree", "**/.git/hooks/**",
	"**/.git/worktrees/*/config", "**/.git/worktrees/*/config.worktree",
	"**/.git/modules/**/config", "**/.git/modules/**/config.worktree", "**/.git/modules/**/hooks/**",
	"**/.gitconfig", "~/.config/git/**",
	"**/.husky/**", "**/.pre-commit-config.yaml", "**/lefthook.yml", "**/.lefthook.yml",
	// Shell start-up files.
	"**/.bashrc", "**/.bash_profile", "**/.bash_login", "**/.bash_logout", "**/.bash_aliases", "**/.bashrc.d/**",
	"**/.profile", "**/.zshrc", "**/.zshenv", "**/.zprofile", "**/.zlogin", "**/.zlogout", "**/.zshrc.d/**",
	"**/.kshrc", "**/.mkshrc", "**/.cshrc", "**/.tcshrc", "**/.login", "**/.logout",
	"**/.xprofile", "**/.xinitrc", "**/.xsession", "**/.xsessionrc", "**/.pam_environment",
	"**/.config/fish/**", "**/.config/nushell/**", "**/.config/zsh/**", "~/.oh-my-zsh/**",
	// Run on cd.
	"**/.envrc", "**/.mise.toml", "**/mise.toml", "**/.mise/**", "**/.config/mise/**",
	// Editors that execute their project or user configuration.
	"**/.vscode/**", "**/.idea/**", "**/.nvim.lua", "**/.nvimrc", "**/.exrc", "**/.lazy.lua",
	"**/.dir-locals.el", "**/.helix/**", "**/.zed/**",
	"~/.config/nvim/**", "~/.local/share/nvim/**", "~/.vimrc", "~/.vim/**", "~/.emacs", "~/.emacs.d/**",
	// Started by the session or found on PATH.
	"~/.config/autostart/**", "~/.config/systemd/**", "~/.config/environment.d/**",
	"~/.local/bin/**", "~/bin/**",
}

// Protected reports whether path (resolved like CheckWrite: relative to
// the buffer's directory, `~`, `..`, symlinks) is a protected path, and the
// rule that says so. A write there could plant code that runs later (git
// hooks and configuration, shell start-up files, .envrc, editor
// configurations, and what Config.Protected adds), so the host must
// not let a policy approve it: with Env.Protect, write and edit refuse it
// and bash under bubblewrap sees it read-only. Independent of
// Config.Enabled.
func (s *Sandbox) Protected(path string) (rule string, protected bool) {
	abs := s.Resolve(path)
	resolved, err := canonical(abs)
	if err != nil {
		resolved = abs
	}
	for _, p := range []string{abs, resolved} {
		if r := s.matchRules(s.prot, foldPath(p), false); r != nil {
			return r.glob, true
		}
	}
	if hp, repo := hooksPathOf(resolved); hp != "" && within(resolved, hp) {
		return "core.hooksPath of the repository " + repo, true
	}
	return "", false
}

// hooksPathOf finds the git repository holding p (the nearest ancestor
// with a .git) and returns its core.hooksPath made absolute, with the
// repository's top folder; "" when there is none.
func hooksPathOf(p string) (hooksPath, top string) {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		gitDir := filepath.Join(dir, ".git")
		if fi, err := os.Lstat(gitDir); err == nil {
			if !fi.IsDir() {
				gitDir = gitfileTarget(gitDir, dir)
			}
			if hp := readHooksPath(filepath.Join(gitDir, "config"), dir); hp != "" {
				return hp, dir
			}
			return "", dir
		}
		if filepath.Dir(dir) == dir {
			return "", ""
		}
	}
}

// gitfileTarget reads a `gitdir: PATH` file (worktrees, submodules).
func gitfileTarget(file, dir string) string {
	b, err := readSmall(file, 4096)
	if err != nil {
		return ""
	}
	t, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	t = strings.TrimSpace(t)
	if !filepath.IsAbs(t) {
		t = filepath.Join(dir, t)
	}
	return filepath.Clean(t)
}

// readHooksPath returns core.hooksPath of a git config file, absolute
// (relative values are relative to the repository's top folder, `~/`
// to the home directory), resolved; "" when unset.
func readHooksPath(config, top string) string {
	b, err := readSmall(config, 1<<20)
	if err != nil {
		return ""
	}
	section, value := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if section != "core" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(v), `"`)
	}
	if value == "" {
		return ""
	}
	if value == "~" || strings.HasPrefix(value, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			value = home + value[1:]
		}
	}
	if !filepath.IsAbs(value) {
		value = filepath.Join(top, value)
	}
	return CanonicalOr(filepath.Clean(value))
}

// readSmall reads at most max bytes of a regular file, never following a
// FIFO into a block.
func readSmall(p string, max int64) ([]byte, error) {
	f, err := openNoFollowLoose(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := f.Read(buf)
	if n > 0 {
		return buf[:n], nil
	}
	return nil, err
}

// openNoFollowLoose opens a regular file for reading without blocking on a
// FIFO; symlinks are followed (the config files of git may be links).
func openNoFollowLoose(p string) (*os.File, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	return os.Open(p)
}
