package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// What is protected (issue 11 #9, issue 24 #1) is a rule: every file whose
// content runs as code on the user's next ordinary action — a git command
// (a shell prompt, gitsigns, fugitive run one on their own), opening a
// shell, an editor or a folder, starting an interpreter or a package
// manager — without the user running that file on purpose. It holds by
// structure, for what nobody listed:
//
//   - everything inside any .git folder, and the .git entry itself (a
//     .git file points git elsewhere: commondir, worktrees, alternates,
//     info/ and config are all there), and everything inside any git
//     directory (a folder git takes for one, see isGitDir: a HEAD file
//     with objects/ or a commondir file, links followed as git follows
//     them — bare repositories, the gitdir a .git file names, the folder
//     a .git symbolic link leads to, worktrees' and submodules' folders),
//     and a file named HEAD or commondir anywhere (what makes a folder a
//     git directory);
//   - the hooks folders of the effective git configuration (core.hooksPath
//     of the system's, the user's and the repository's configuration and
//     every file they include, whatever the condition), and those
//     included files;
//   - interpreter environments: every folder holding pyvenv.cfg (a
//     virtualenv) or conda-meta (a conda environment), every site-packages
//     and dist-packages folder, node_modules/.bin, and .pth files;
//   - configuration that tools read on their own from the folder they
//     work in or its parents and that can name a program to run or code
//     to load: DefaultProtected (package managers and build tools, direnv
//     and mise, editors, shells and interpreters' start-up files, git's
//     hook managers, the places programs start from) — a list that
//     illustrates the rule; Config.Protected adds to it.
//
// The project's own build files (Makefile, package.json, go.mod,
// pyproject.toml, build.gradle, Cargo.toml, conftest.py, …) are not
// protected: they run only when the user builds or tests the project, and
// writing them is the everyday work a model is asked for, visible in the
// project's history like any source file.
//
// A protected path that is a symbolic link is protected by what it leads
// to (under bubblewrap its target is read-only), and the link itself by
// being made again as it was when a command approved by a policy changed
// it (tools/builtin's guard): a mount cannot cover a link.

// DefaultProtected are the protected paths named by glob (same syntax as
// deny_read; matched against the path as written and as resolved),
// besides what the structural rules above protect.
var DefaultProtected = []string{
	// git: configuration and hooks outside .git, hook managers.
	"**/.git", "**/.gitconfig", "~/.config/git/**",
	"**/.husky/**", "**/.pre-commit-config.yaml", "**/lefthook.yml", "**/.lefthook.yml", "**/lefthook-local.yml",
	// Shell start-up files.
	"**/.bashrc", "**/.bash_profile", "**/.bash_login", "**/.bash_logout", "**/.bash_aliases", "**/.bashrc.d/**",
	"**/.profile", "**/.zshrc", "**/.zshenv", "**/.zprofile", "**/.zlogin", "**/.zlogout", "**/.zshrc.d/**",
	"**/.kshrc", "**/.mkshrc", "**/.cshrc", "**/.tcshrc", "**/.login", "**/.logout",
	"**/.xprofile", "**/.xinitrc", "**/.xsession", "**/.xsessionrc", "**/.pam_environment",
	"**/.config/fish/**", "**/.config/nushell/**", "**/.config/zsh/**", "~/.oh-my-zsh/**",
	// Run on cd.
	"**/.envrc", "**/.mise.toml", "**/mise.toml", "**/.mise/**", "**/.config/mise/**",
	// Package managers and build tools: their project configuration.
	"**/.npmrc", "**/.yarnrc", "**/.yarnrc.yml", "**/.yarn/releases/**", "**/.yarn/plugins/**", "**/.pnpmfile.cjs",
	"**/.cargo/config", "**/.cargo/config.toml", "**/pip.conf", "**/pip.ini", "**/.pip/**", "**/.bundle/config",
	"**/gradle.properties", "**/gradle/wrapper/**", "**/gradlew", "**/gradlew.bat", "**/.mvn/**", "**/mvnw", "**/mvnw.cmd",
	"**/*.pth", "**/sitecustomize.py", "**/usercustomize.py",
	// Interpreters and debuggers that run a file of the folder they start in.
	"**/.irbrc", "**/.pryrc", "**/.Rprofile", "**/.gdbinit", "**/.lldbinit", "**/.octaverc", "**/.pythonrc", "**/.pythonrc.py",
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
// rule that says so. A write there could plant code that runs later, so
// the host must not let a policy approve it: with Env.Protect, write and
// edit refuse it and bash under bubblewrap sees it read-only. Independent
// of Config.Enabled.
func (s *Sandbox) Protected(path string) (rule string, protected bool) {
	abs := s.Resolve(path)
	resolved, err := canonical(abs)
	if err != nil {
		resolved = abs
	}
	for _, p := range []string{abs, resolved} {
		if why := structurallyProtected(p); why != "" {
			return why, true
		}
		if r := s.matchRules(s.prot, foldPath(p), false); r != nil {
			return r.glob, true
		}
	}
	eff := effectiveGit(resolved)
	for _, hp := range eff.hooks {
		if within(resolved, hp) {
			return "a hooks folder of the effective git configuration (core.hooksPath)", true
		}
	}
	for _, f := range eff.files {
		if resolved == f {
			return "a file the effective git configuration includes", true
		}
	}
	for _, t := range eff.hookTargets() {
		if within(resolved, t) {
			return "what a symbolic link in a git hooks folder leads to (git runs it as a hook)", true
		}
	}
	return "", false
}

// structurallyProtected says why the absolute path p is protected by the
// structural rules (see above), or "".
func structurallyProtected(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, c := range parts {
		switch strings.ToLower(c) {
		case ".git":
			return "inside a .git folder (git runs what its configuration, hooks and pointers to other folders say)"
		case "site-packages", "dist-packages":
			return "inside a Python environment (" + c + "): its code runs when Python starts"
		case ".bin":
			if i > 0 && strings.ToLower(parts[i-1]) == "node_modules" {
				return "node_modules/.bin: the programs npm, yarn and npx run"
			}
		}
	}
	if base := parts[len(parts)-1]; base == "HEAD" || base == "commondir" {
		return "a " + base + " file makes a folder a git directory"
	}
	// The folders above: a git directory, a Python environment.
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		if why := specialDir(dir); why != "" {
			return why
		}
		if dir == "/" || dir == "." {
			return ""
		}
	}
}

// specialDir says whether the folder d is a git directory or an
// interpreter environment (everything inside is protected), by what it
// holds; "" when it is neither.
func specialDir(d string) string {
	isFile := func(name string) bool {
		fi, err := os.Lstat(d + "/" + name)
		return err == nil && fi.Mode().IsRegular()
	}
	isDir := func(name string) bool {
		fi, err := os.Lstat(d + "/" + name)
		return err == nil && fi.IsDir()
	}
	isLink := func(name string) bool {
		fi, err := os.Lstat(d + "/" + name)
		return err == nil && fi.Mode()&os.ModeSymlink != 0
	}
	leadsToDir := func(name string) bool {
		fi, err := os.Stat(d + "/" + name)
		return err == nil && fi.IsDir()
	}
	switch {
	case isGitDir(isFile("HEAD") || isLink("HEAD"), isDir("objects") || isLink("objects") && leadsToDir("objects"), isFile("commondir")):
		return "inside the git directory " + d
	case isFile("pyvenv.cfg"):
		return "inside the Python environment " + d
	case isDir("conda-meta"):
		return "inside the conda environment " + d
	}
	return ""
}

// isGitDir is the rule by which a folder is a git directory, as git
// itself tells one (a superset): a HEAD that is a file or a symbolic link
// (git takes a link to refs/…), with an objects folder — or a symbolic
// link to one, which git follows — or a commondir file (a worktree's
// folder, whose objects are in the common one).
func isGitDir(head, objects, commondir bool) bool {
	return head && (objects || commondir)
}

// gitEffective is what the effective git configuration of a repository
// says that runs code: the hooks folders (core.hooksPath of every file),
// and the files included.
type gitEffective struct {
	hooks    []string
	files    []string
	gitHooks []string // the git directory's own hooks folders (its common folder's too)
}

// hookTargets are what the symbolic links in the hooks folders of eff
// lead to (canonical), and the hooks folders themselves when reached
// through a link (a .git/hooks leading to scripts/hooks): a hook git runs
// is the file a link there names, so that file is protected too (a
// protected path that is a symbolic link is protected by what it leads
// to). Those that lead nowhere are left out.
func (eff gitEffective) hookTargets() []string {
	var out []string
	for _, h := range append(append([]string(nil), eff.hooks...), eff.gitHooks...) {
		r, err := filepath.EvalSymlinks(h)
		if err != nil {
			continue
		}
		if r != h {
			out = append(out, r)
		}
		ents, err := os.ReadDir(r)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if t, err := filepath.EvalSymlinks(filepath.Join(r, e.Name())); err == nil {
				out = append(out, t)
			}
		}
	}
	return out
}

// effectiveGit reads the git configuration that applies to the path p:
// the system's (/etc/gitconfig, $GIT_CONFIG_SYSTEM), the user's
// ($GIT_CONFIG_GLOBAL, $XDG_CONFIG_HOME/git/config, ~/.gitconfig) and, when
// p lies in a repository, the repository's (config, config.worktree, and
// its common folder's), following include.path and includeIf.*.path
// whatever their condition (a superset of what git reads), at most 10
// levels and 64 files. Relative hook folders are taken in the repository's
// top folder.
func effectiveGit(p string) gitEffective {
	var eff gitEffective
	top, gitDir := repositoryOf(p)
	home, _ := os.UserHomeDir()
	var roots []string
	if v := os.Getenv("GIT_CONFIG_SYSTEM"); v != "" {
		roots = append(roots, v)
	}
	roots = append(roots, "/etc/gitconfig")
	if v := os.Getenv("GIT_CONFIG_GLOBAL"); v != "" {
		roots = append(roots, v)
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		roots = append(roots, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		roots = append(roots, filepath.Join(home, ".gitconfig"))
	}
	if gitDir != "" {
		var configs []string
		configs, eff.gitHooks = repositoryGit(gitDir)
		roots = append(roots, configs...)
	}
	seen := map[string]bool{}
	var visit func(file string, depth int)
	visit = func(file string, depth int) {
		file = CanonicalOr(filepath.Clean(file))
		if seen[file] || len(seen) >= 64 || depth > 10 {
			return
		}
		seen[file] = true
		hooks, includes, ok := readGitConfig(file)
		if !ok {
			return
		}
		if depth > 0 {
			eff.files = append(eff.files, file)
		}
		for _, h := range hooks {
			h = expandHome(h, home)
			if !filepath.IsAbs(h) {
				if top == "" {
					continue
				}
				h = filepath.Join(top, h)
			}
			eff.hooks = append(eff.hooks, CanonicalOr(filepath.Clean(h)))
		}
		for _, inc := range includes {
			inc = expandHome(inc, home)
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(file), inc)
			}
			visit(inc, depth+1)
		}
	}
	for _, r := range roots {
		visit(r, 0)
	}
	return eff
}

// repositoryGit are the configuration files and the hooks folders of the
// git directory gitDir and its common folder.
func repositoryGit(gitDir string) (configs, hooks []string) {
	configs = []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree")}
	hooks = []string{filepath.Join(gitDir, "hooks")}
	if c, err := readSmall(filepath.Join(gitDir, "commondir"), 4096); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
		configs = append(configs, filepath.Join(common, "config"))
		hooks = append(hooks, filepath.Join(common, "hooks"))
	}
	return configs, hooks
}

func expandHome(p, home string) string {
	if (p == "~" || strings.HasPrefix(p, "~/")) && home != "" {
		return home + p[1:]
	}
	return p
}

// repositoryOf finds the repository holding p (the nearest folder above
// it with a .git entry): its top folder and its git directory (a .git
// file's gitdir followed, a .git symbolic link followed); "" when there
// is none.
func repositoryOf(p string) (top, gitDir string) {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		g := filepath.Join(dir, ".git")
		if _, err := os.Lstat(g); err == nil {
			// A symbolic link is followed, as git does: to a folder
			// (the git directory) or a `gitdir:` file.
			if fi, err := os.Stat(g); err != nil || !fi.IsDir() {
				g = gitfileTarget(g, dir)
			}
			return dir, g
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

// readGitConfig reads the core.hooksPath values and the include paths
// (include.path, includeIf.<condition>.path) of a git config file (at most
// 1 MiB; quotes removed).
func readGitConfig(config string) (hooks, includes []string, ok bool) {
	b, err := readSmall(config, 1<<20)
	if err != nil {
		return nil, nil, false
	}
	section := ""
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
			// [core], [include], [includeIf "gitdir:~/x/"]: the name
			// before any subsection.
			name, _, _ := strings.Cut(strings.TrimSpace(line[1:end]), " ")
			section = strings.ToLower(strings.Trim(name, `"`))
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		k, v, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, `"`) {
			v = strings.TrimSpace(v[:i])
		}
		v = strings.Trim(v, `"`)
		switch {
		case section == "core" && k == "hookspath" && v != "":
			hooks = append(hooks, v)
		case (section == "include" || section == "includeif") && k == "path" && v != "":
			includes = append(includes, v)
		}
	}
	return hooks, includes, true
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
