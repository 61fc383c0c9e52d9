package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// homeSkip are the folders of the home directory the scan does not enter:
// installed toolchains and caches of public packages (their test fixtures
// are full of *.pem and *.key files, and they are large). The rules that
// name a fixed path (~/.cargo/credentials*) still apply.
var homeSkip = []string{
	".pyenv", ".rbenv", ".rustup", ".nvm", ".npm", ".cache", ".gradle", ".m2", ".nuget", ".conda",
	".cargo/registry", ".cargo/git", "go/pkg", ".local/share/Trash", ".local/lib", "snap",
	".vscode-server", ".vscode/extensions", ".cursor/extensions", "anaconda3", "miniconda3",
}

// heavyDirs are walked after everything else in their tree.
var heavyDirs = map[string]bool{
	"node_modules": true, ".cache": true, "target": true, "vendor": true, "__pycache__": true,
	".venv": true, "venv": true, ".tox": true, ".npm": true, ".pnpm-store": true, ".yarn": true,
	".cargo": true, ".rustup": true, ".gradle": true, ".m2": true, ".nuget": true, "site-packages": true,
	".next": true, ".nuxt": true, "dist": true, "build": true, ".terraform": true, "Trash": true,
	".mozilla": true, ".thunderbird": true, "snap": true, ".local": true,
}

// tmpSocketDirs are folders of /tmp that hold other programs' sockets.
var tmpSocketDirs = []string{".X11-unix", ".ICE-unix", ".XIM-unix", ".font-unix", "tmux-", "zellij-", "screens", "uscreens", "kitty-", "wezterm-", "vscode-"}

// Well-known sockets outside the scanned trees.
var knownSockets = []string{
	"/var/run/docker.sock", "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket",
	"/var/snap/microk8s/current/var/kubernetes/backend/kine.sock",
}

// Filesystems the scan never enters below its top (slow or not files).
var scanSkipFS = map[uint32]string{
	0x6969: "NFS", 0x517b: "SMB", 0xff534d42: "CIFS", 0xfe534d42: "SMB2", 0x65735546: "FUSE",
	0x01021997: "9p", 0x00c36400: "Ceph", 0x5346414f: "AFS", 0x73757245: "Coda", 0x564c: "NCP",
	0x9fa0: "proc", 0x62656572: "sysfs", 0x1cd1: "devpts", 0x27e0eb: "cgroup", 0x63677270: "cgroup2",
	0x64626720: "debugfs", 0x74726163: "tracefs", 0x73636673: "securityfs", 0xcafe4a11: "bpf",
}

// maskPlan is what bubblewrap must hide or protect for one command.
type maskPlan struct {
	early   []string // folders hidden before the roots are bound (/run/user, $XDG_RUNTIME_DIR, private temps)
	private []string // temporary folders replaced by an empty tmpfs (in early)
	rebind  []string // folders inside a private one bound back read-only (a home in /tmp)
	ro      []string // protected paths, re-bound read-only (Env.Protect)
	tmpfs   []string // folders hidden by an empty tmpfs
	null    []string // files and sockets hidden by /dev/null
	reveal  []string // folders bound back read-only after the masks (Config.HiddenExcept)
	sockets int
	entries int
	scanned []string // trees walked
	notes   []string // what was cut short or skipped
	seen    map[string]bool
	roots   []string
	temps   []string // canonical temporary folders (/tmp, $TMPDIR)
	mounts  map[string]bool
	skip    map[string]bool // folders not entered
	// seccomp: the socket filter refuses every AF_UNIX socket, so no
	// socket needs finding or hiding (nor the folder holding one).
	seccomp bool
}

// planMasks finds what to hide for a command under bubblewrap.
func (s *Sandbox) planMasks() *maskPlan {
	p := s.newMaskPlan()
	s.planSessionFolders(p)
	s.planPrivateTemps(p)
	// Without the socket filter: the sockets named by the host's
	// environment ($NVIM, $SSH_AUTH_SOCK, …) and well-known ones.
	if !p.seccomp {
		s.planNamedSockets(p)
	}
	// What deny_read names literally (~/.aws/**, ~/.netrc, ~/.*_history):
	// hidden whatever the scans' budgets.
	s.planLiteralDenies(p)
	// flemma's and the editor's state, but the conversation's own
	// outputs.
	for _, h := range s.hidden {
		s.hideState(p, h)
	}
	p.reveal = append(p.reveal, s.reveal...)
	s.planScans(p)
	// Without the socket filter: every other socket bound in this network
	// namespace (docker, containerd, podman, dbus, snapd, Neovim, agents,
	// terminals, …): the kernel lists them, no walk needed.
	if !p.seccomp {
		s.planBoundSockets(p)
	}
	p.finish(s)
	return p
}

// newMaskPlan is an empty plan for s: its temporary folders are /tmp and
// $TMPDIR (canonical) when that is another.
func (s *Sandbox) newMaskPlan() *maskPlan {
	p := &maskPlan{seen: map[string]bool{}, roots: s.roots, mounts: mountPoints(), skip: map[string]bool{}, seccomp: s.socketFilter()}
	p.temps = []string{"/tmp"}
	if t := CanonicalOr(os.TempDir()); t != "/tmp" {
		p.temps = append(p.temps, t)
	}
	return p
}

// planSessionFolders hides the socket folders of the session (/run/user,
// $XDG_RUNTIME_DIR) before the roots are bound, so that a root inside one
// stays usable.
func (s *Sandbox) planSessionFolders(p *maskPlan) {
	if fi, err := os.Stat("/run/user"); err == nil && fi.IsDir() {
		p.early = append(p.early, "/run/user")
		p.seen["/run/user"] = true
	}
	x := os.Getenv("XDG_RUNTIME_DIR")
	if x == "" || !filepath.IsAbs(x) {
		return
	}
	c, err := filepath.EvalSymlinks(x)
	if err != nil || within(c, "/run/user") || !s.safeToHide(c) {
		return
	}
	if fi, err := os.Stat(c); err == nil && fi.IsDir() {
		p.early = append(p.early, c)
		p.seen[c] = true
	}
}

// planPrivateTemps replaces each temporary folder that is not a writable
// root by a private, empty tmpfs: nothing of the machine's /tmp reaches the
// command — other programs' files and sockets, which come and go (a mask
// on a socket folder that vanished before bubblewrap mounted it made the
// command fail) — and commands that need a scratch folder work. Roots
// inside it are bound on top, and the home directory and the folder the
// command works in, when they lie inside it, are bound back read-only.
func (s *Sandbox) planPrivateTemps(p *maskPlan) {
	for _, t := range p.temps {
		if s.insideRoot(t) || p.seen[t] {
			continue
		}
		if fi, err := os.Stat(t); err == nil && fi.IsDir() {
			p.early = append(p.early, t)
			p.private = append(p.private, t)
			p.seen[t] = true
			for _, keep := range []string{CanonicalOr(s.home), CanonicalOr(s.base)} {
				if s.rebindInPrivate(keep, t, p.rebind) {
					p.rebind = append(p.rebind, keep)
				}
			}
		}
	}
}

// rebindInPrivate says whether the folder keep (the home directory or
// the working folder) must be bound back read-only over the private
// temporary folder t: it lies strictly inside t, outside every root (a
// root is bound anyway), and is not bound back already.
func (s *Sandbox) rebindInPrivate(keep, t string, rebind []string) bool {
	return keep != "" && keep != "." && within(keep, t) && keep != t && !s.insideRoot(keep) && !slices.Contains(rebind, keep)
}

// planNamedSockets hides the sockets that the host's environment names
// and the well-known ones.
func (s *Sandbox) planNamedSockets(p *maskPlan) {
	for _, sock := range socketPathsFromEnv(os.Environ()) {
		s.hideSocketAt(p, sock)
	}
	for _, sock := range knownSockets {
		s.hideSocketAt(p, sock)
	}
}

// planScans walks the writable roots, the home directory and the
// temporary folders. The folder commands work in (the project) comes
// first, whole, within the roots' budget: it is where a command reads,
// and a project inside a large root (a chat under /tmp, whose root is /tmp
// with its small shared budget) must not have its deny_read files left
// visible because other programs' files filled the root's budget first. A
// temporary folder that is a root keeps its own, smaller budget: it is
// shared with every other program of the machine.
func (s *Sandbox) planScans(p *maskPlan) {
	isRoot := map[string]bool{}
	for _, r := range s.roots {
		isRoot[r] = true
	}
	budget := scanRootEntries
	if base := CanonicalOr(s.base); scanProjectFirst(base, p.seen, p.temps) {
		s.scanTree(p, base, s.insideRoot(base), isRoot, &budget, scanRootEntries)
		p.skip[base] = true
	}
	for _, r := range s.roots {
		if slices.Contains(p.temps, r) {
			b := scanTempEntries
			s.scanTree(p, r, true, isRoot, &b, scanTempEntries)
			continue
		}
		s.scanTree(p, r, true, isRoot, &budget, scanRootEntries)
	}
	s.scanHome(p, isRoot)
	for _, t := range dedupRoots(append([]string(nil), p.temps...)) {
		if !s.insideRoot(t) && !p.seen[t] {
			b := scanTempEntries
			s.scanTree(p, t, false, isRoot, &b, scanTempEntries)
		}
	}
}

// scanProjectFirst says whether the working folder base (canonical) is
// scanned on its own before the roots: not when it is unknown or "/",
// already hidden, or a temporary folder (scanned with its own budget).
func scanProjectFirst(base string, seen map[string]bool, temps []string) bool {
	return base != "" && base != "." && base != "/" && !seen[base] && !slices.Contains(temps, base)
}

// scanHome walks the home directory outside the roots, within its own
// budget, without entering toolchains and package caches (homeSkip).
func (s *Sandbox) scanHome(p *maskPlan, isRoot map[string]bool) {
	home := CanonicalOr(s.home)
	if s.home == "" || home == "/" || s.insideRoot(home) {
		return
	}
	b := scanHomeEntries
	for _, d := range homeSkip {
		p.skip[home+"/"+d] = true
	}
	s.scanTree(p, home, false, isRoot, &b, scanHomeEntries)
	p.notes = append(p.notes, "not scanned in the home directory (toolchains and package caches): "+strings.Join(homeSkip, ", "))
}

// insideRoot reports whether p lies in a writable root.
func (s *Sandbox) insideRoot(p string) bool {
	for _, r := range s.roots {
		if within(p, r) {
			return true
		}
	}
	return false
}

// safeToHide reports whether an empty tmpfs may cover the folder d: never
// a writable root or an ancestor of one, nor the folder commands work in
// (the buffer's, else Neovim's cwd) or an ancestor of it, nor the home
// directory or an ancestor of it (that would hide the work itself: a mask
// over the folder holding a socket once made bash run in $HOME, without
// the project — issue 26 #5).
func (s *Sandbox) safeToHide(d string) bool {
	for _, r := range s.roots {
		if within(r, d) {
			return false
		}
	}
	if s.base != "" && within(CanonicalOr(s.base), d) {
		return false
	}
	if s.home != "" && within(CanonicalOr(s.home), d) {
		return false
	}
	return d != "/"
}

func (p *maskPlan) hideSocket(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		r, err := filepath.EvalSymlinks(path)
		if err != nil {
			return
		}
		if fi, err = os.Lstat(r); err != nil {
			return
		}
		path = r
	}
	if fi.Mode()&os.ModeSocket != 0 && !p.seen[path] {
		p.seen[path] = true
		p.null = append(p.null, path)
		p.sockets++
	}
}

// hide masks the existing path (a folder by tmpfs, anything else by
// /dev/null), once.
func (p *maskPlan) hide(s *Sandbox, path string, isDir bool) {
	if p.seen[path] {
		return
	}
	p.seen[path] = true
	if isDir {
		if !s.safeToHide(path) {
			p.notes = append(p.notes, path+" matches deny_read but holds a writable root or the home directory: not hidden from bash")
			return
		}
		p.tmpfs = append(p.tmpfs, path)
		return
	}
	p.null = append(p.null, path)
}

// hideState hides a folder or file of Config.Hidden. One that holds a
// writable root (a plugin developed inside Neovim's data folder) is hidden
// before the roots are bound, so that they show again on top of it; one
// inside a root, after them; one that holds the home directory, or the
// working folder outside every root, is not hidden (a note says so).
func (s *Sandbox) hideState(p *maskPlan, h string) {
	r, err := filepath.EvalSymlinks(h)
	if err != nil {
		return
	}
	fi, err := os.Stat(r)
	if err != nil {
		return
	}
	if !fi.IsDir() {
		p.hide(s, r, false)
		return
	}
	holdsRoot := false
	for _, root := range s.roots {
		holdsRoot = holdsRoot || within(root, r) && root != r
	}
	base := CanonicalOr(s.base)
	switch {
	case !holdsRoot:
		p.hide(s, r, true)
	case r == "/" || s.home != "" && within(CanonicalOr(s.home), r) || base != "" && within(base, r) && !s.insideRoot(base):
		p.notes = append(p.notes, r+" (flemma's or the editor's state) holds the home directory or the working folder: not hidden from bash")
	case !p.seen[r]:
		p.seen[r] = true
		p.early = append(p.early, r)
	}
}

// hideResolved masks what the path leads to (symlinks resolved), when it
// exists.
func (p *maskPlan) hideResolved(s *Sandbox, path string) {
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return
	}
	fi, err := os.Stat(r)
	if err != nil {
		return
	}
	p.hide(s, r, fi.IsDir())
}

// planLiteralDenies hides the deny_read rules that name a fixed path, or a
// glob in one fixed folder, without walking.
func (s *Sandbox) planLiteralDenies(p *maskPlan) {
	const meta = "*?[{\\"
	listed := map[string][]os.DirEntry{}
	for i := range s.deny {
		r := &s.deny[i]
		switch r.kind {
		case denyDirName:
			if s.home != "" {
				p.hideResolved(s, filepath.Join(s.home, r.lit))
			}
		case denyPath:
			raw := r.raw
			head, tree := strings.CutSuffix(raw, "/**")
			switch {
			case !strings.ContainsAny(raw, meta):
				p.hideResolved(s, raw)
			case tree && !strings.ContainsAny(head, meta):
				p.hideResolved(s, head)
			default:
				dir, base := filepath.Split(raw)
				dir = filepath.Clean(dir)
				if strings.ContainsAny(dir, meta) || !strings.ContainsAny(base, meta) {
					continue
				}
				ents, ok := listed[dir]
				if !ok {
					ents, _ = os.ReadDir(dir)
					listed[dir] = ents
				}
				for _, e := range ents {
					abs := filepath.Join(dir, e.Name())
					if ok, _ := doublestar.Match(r.pat, foldPath(abs)); ok {
						p.hideResolved(s, abs)
					}
				}
			}
		}
	}
}

type scanItem struct {
	dir       string
	depth     int
	inRoot    bool   // inside a writable root
	protected bool   // already covered by a read-only protected folder
	heavy     bool   // under one of heavyDirs: walked last
	anchor    string // in a temporary folder: the folder at depth 1 holding this one
}

// scanRules are rules split for the scan: those that need only an entry's
// name, and those that need its path (checked only in the folders where
// they can match).
type scanRules struct {
	name []*denyRule
	path []*denyRule
}

func splitRules(rules []denyRule, skip func(*denyRule) bool) scanRules {
	var sr scanRules
	for i := range rules {
		r := &rules[i]
		switch {
		case skip != nil && skip(r):
		case r.kind == denyBase || r.kind == denyDirName:
			sr.name = append(sr.name, r)
		default:
			sr.path = append(sr.path, r)
		}
	}
	return sr
}

// in returns the path rules that can match an entry of the folder whose
// folded path is fdir.
func (sr scanRules) in(fdir string) []*denyRule {
	var out []*denyRule
	d := fdir + "/"
	for _, r := range sr.path {
		switch r.kind {
		case denySubpath, denySubtree:
			if i := strings.LastIndexByte(r.lit, '/'); i >= 0 && strings.HasSuffix(fdir, "/"+r.lit[:i]) {
				out = append(out, r)
			}
		default:
			if strings.HasPrefix(d, r.prefix) || strings.HasPrefix(r.prefix, d) {
				out = append(out, r)
			}
		}
	}
	return out
}

// match reports whether an entry (folded name, in the folder fdir whose
// path rules are rel) matches.
func (s *Sandbox) scanMatch(sr scanRules, rel []*denyRule, fdir, fname string, isDir, exceptions bool) bool {
	for _, r := range sr.name {
		if r.kind == denyDirName {
			if isDir && fname == r.lit {
				return true
			}
		} else if MatchGlob(r.baseKind, r.baseLit, r.lit, fname) && !(exceptions && s.excepted(fname)) {
			return true
		}
	}
	if len(rel) == 0 {
		return false
	}
	fabs := fdir + "/" + fname
	for _, r := range rel {
		switch r.kind {
		case denySubpath, denySubtree:
			if strings.HasSuffix(fabs, "/"+r.lit) {
				return true
			}
		default:
			if strings.HasPrefix(fabs, r.prefix) {
				if ok, _ := doublestar.Match(r.pat, fabs); ok {
					return true
				}
			}
		}
	}
	return false
}

// Directory entry types of getdents64.
const (
	dtUnknown = 0
	dtDir     = 4
	dtReg     = 8
	dtLink    = 10
	dtSock    = 12
)

type dirent struct {
	name string
	typ  uint8
}

// readDirents lists the folder at path, opened without following a
// symlink at its last component, reusing buf and ents.
func readDirents(path string, buf []byte, ents []dirent) ([]dirent, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ents[:0], err
	}
	defer syscall.Close(fd)
	ents = ents[:0]
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return ents, err
		}
		for off := 0; off+19 <= n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			reclen := int(buf[off+16]) | int(buf[off+17])<<8
			if reclen == 0 || off+reclen > n {
				break
			}
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
				continue
			}
			ents = append(ents, dirent{name: string(name), typ: typ})
		}
	}
}

// dirCache remembers folder listings between scans: a listing is used
// again while the folder's device, inode, change and modification times
// are those it had when it was listed (creating, removing or renaming an
// entry changes them). A folder changed less than racyWindow before it was
// listed is listed again next time: a change in the same clock tick would
// not show in its times.
var dirCache = struct {
	sync.Mutex
	m       map[string]*cachedDir
	entries int
}{m: map[string]*cachedDir{}}

const (
	racyWindow      = 2 * time.Second
	dirCacheEntries = 400000 // listings dropped beyond this many entries
)

type cachedDir struct {
	dev, ino     uint64
	mtime, ctime syscall.Timespec
	ents         []dirent
}

// listDir returns the entries of the folder at path, from dirCache when
// the folder did not change. The slice must not be modified.
func listDir(path string, buf []byte) ([]dirent, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOTDIR
	}
	dirCache.Lock()
	c := dirCache.m[path]
	dirCache.Unlock()
	if c != nil && c.dev == uint64(st.Dev) && c.ino == uint64(st.Ino) && c.mtime == st.Mtim && c.ctime == st.Ctim {
		return c.ents, nil
	}
	ents, err := readDirents(path, buf, nil)
	if err != nil {
		return ents, err
	}
	now := time.Now()
	racy := now.Sub(time.Unix(st.Mtim.Unix())) < racyWindow || now.Sub(time.Unix(st.Ctim.Unix())) < racyWindow
	dirCache.Lock()
	if old := dirCache.m[path]; old != nil {
		dirCache.entries -= len(old.ents)
		delete(dirCache.m, path)
	}
	if !racy {
		if dirCache.entries+len(ents) > dirCacheEntries {
			dirCache.m, dirCache.entries = map[string]*cachedDir{}, 0
		}
		dirCache.m[path] = &cachedDir{dev: uint64(st.Dev), ino: uint64(st.Ino), mtime: st.Mtim, ctime: st.Ctim, ents: ents}
		dirCache.entries += len(ents)
	}
	dirCache.Unlock()
	return ents, nil
}

// mountPoints are the mount points of this mount namespace.
func mountPoints() map[string]bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint options …
		f := strings.Fields(line)
		if len(f) >= 5 {
			m[unescapeMount(f[4])] = true
		}
	}
	return m
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// scanTree walks top breadth first, within *budget entries, hiding
// deny_read matches and sockets, and (with protect, inside the roots)
// collecting protected paths.
func (s *Sandbox) scanTree(p *maskPlan, top string, inRoot bool, isRoot map[string]bool, budget *int, limit int) {
	var w treeScan
	if !s.startScan(&w, p, top, inRoot, isRoot, budget) {
		return
	}
	buf := make([]byte, 32<<10)
	for it, ok := w.pop(); ok; it, ok = w.pop() {
		if *budget <= 0 {
			w.skipped++
			continue
		}
		w.folder(it, buf)
	}
	if w.skipped > 0 {
		p.notes = append(p.notes, fmt.Sprintf("scan of %s stopped after %d entries (%d folders not looked at): deny_read files and sockets there stay visible to bash", top, limit, w.skipped))
	}
}

// treeScan is one walk of scanTree: the rules split for it, its queues,
// and the folders it could not look at.
type treeScan struct {
	s       *Sandbox
	p       *maskPlan
	temp    bool // the top is a temporary folder (its folders at depth 1 anchor sockets)
	protect bool // collect protected paths: a policy approved the call, and the top is in a root
	deny    scanRules
	prot    scanRules
	isRoot  map[string]bool
	budget  *int
	queue   []scanItem
	heavy   []scanItem // under one of heavyDirs: after the queue
	skipped int
}

// startScan prepares w for the walk of top; false when there is nothing
// to walk (already hidden, or not a folder). With protect, a top that is
// itself a protected path becomes read-only.
func (s *Sandbox) startScan(w *treeScan, p *maskPlan, top string, inRoot bool, isRoot map[string]bool, budget *int) bool {
	if p.seen[top] {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Stat(top, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return false
	}
	p.scanned = append(p.scanned, top)
	*w = treeScan{
		s: s, p: p, temp: slices.Contains(p.temps, top), protect: s.protect && inRoot,
		deny: splitRules(s.deny, nil), prot: splitRules(s.prot, gitInnerRule),
		isRoot: isRoot, budget: budget, queue: []scanItem{{dir: top, inRoot: inRoot}},
	}
	if w.protect && s.entryRule(&s.protSet, top, filepath.Base(top), true, false) != nil {
		p.ro = append(p.ro, top)
	}
	return true
}

// gitInnerRule says whether the protected-path rule r names paths inside
// .git: scanGit applies those, so the walk skips them.
func gitInnerRule(r *denyRule) bool {
	return r.glob == "**/.git" || strings.Contains(r.glob, "/.git/") && slices.Contains(DefaultProtected, r.glob)
}

// pop takes the next folder to list: the queue first, then the heavy
// folders.
func (w *treeScan) pop() (scanItem, bool) {
	var it scanItem
	switch {
	case len(w.queue) > 0:
		it, w.queue = w.queue[0], w.queue[1:]
	case len(w.heavy) > 0:
		it, w.heavy = w.heavy[0], w.heavy[1:]
	default:
		return it, false
	}
	return it, true
}

// scanFolder is a folder being listed, with what the rules need of it.
type scanFolder struct {
	scanItem
	fdir    string      // the folded path
	denyRel []*denyRule // deny_read path rules that can match in it
	protRel []*denyRule // protected-path rules that can match in it (none when covered already)
}

// folder lists the folder of it (buf: scratch space for the listing) and
// handles each entry, within the budget. A git directory or an interpreter environment, told by what it
// holds, becomes read-only whole (with protect, inside a root).
func (w *treeScan) folder(it scanItem, buf []byte) {
	ents, err := listDir(it.dir, buf)
	if err != nil && len(ents) == 0 {
		return
	}
	f := &scanFolder{scanItem: it, fdir: foldPath(it.dir)}
	f.denyRel = w.deny.in(f.fdir)
	if w.protect && it.inRoot && !it.protected && specialListing(it.dir, ents) {
		w.p.ro = append(w.p.ro, it.dir)
		f.protected = true
	}
	if w.protect && !f.protected {
		f.protRel = w.prot.in(f.fdir)
	}
	for _, e := range ents {
		if *w.budget <= 0 {
			break
		}
		*w.budget--
		w.p.entries++
		w.entry(f, e)
	}
}

// scanStep is what the walk does first with an entry.
type scanStep int

const (
	stepRules        scanStep = iota // match deny_read and the protected paths; enter a folder
	stepNone                         // nothing: a socket under the socket filter
	stepSocket                       // hide the socket (or the folder anchoring it)
	stepLink                         // follow the symlink and hide what it leads to if need be
	stepSocketFolder                 // hide the folder of other programs' sockets, if it may be hidden (else stepRules)
	stepGit                          // hand the .git entry (folder, file or symlink) to scanGit
)

// entryStep says what the walk does first with an entry of type typ
// (resolved, never dtUnknown) and name, in a folder at depth of a top
// that is a temporary folder or not: a socket is hidden unless the socket
// filter refuses every socket; .git — a folder, a file or a symlink —
// goes to scanGit (scanGitLink); another symlink is followed; at the top
// of a temporary folder, a folder named like other programs' socket
// folders (tmpSocketDirs) is hidden whole unless the socket filter is on;
// anything else is matched against the rules.
func entryStep(typ uint8, name string, depth int, temp, seccomp bool) scanStep {
	switch {
	case typ == dtSock && seccomp:
		return stepNone
	case typ == dtSock:
		return stepSocket
	case name == ".git":
		return stepGit
	case typ == dtLink:
		return stepLink
	case !seccomp && depth == 0 && typ == dtDir && temp && hasAnyPrefix(name, tmpSocketDirs):
		return stepSocketFolder
	}
	return stepRules
}

// entry handles one entry of the folder f.
func (w *treeScan) entry(f *scanFolder, e dirent) {
	typ := e.typ
	if typ == dtUnknown {
		var ok bool
		if typ, ok = lstatType(f.dir + "/" + e.name); !ok {
			return
		}
	}
	switch entryStep(typ, e.name, f.depth, w.temp, w.p.seccomp) {
	case stepNone:
		return
	case stepSocket:
		w.socket(f, f.dir+"/"+e.name)
		return
	case stepLink:
		w.link(f, e.name)
		return
	case stepSocketFolder:
		if abs := f.dir + "/" + e.name; w.s.safeToHide(abs) {
			w.p.hide(w.s, abs, true)
			return
		}
	case stepGit:
		if typ == dtLink {
			w.s.scanGitLink(w.p, f.dir+"/"+e.name, w.protect)
			return
		}
		w.s.scanGit(w.p, f.dir+"/"+e.name, typ == dtDir, w.protect)
		return
	}
	w.rules(f, e.name, typ == dtDir)
}

// lstatType is the dirent type of what path is (a symlink not followed):
// a folder, a symlink, a socket, else a regular file. ok is false when it
// cannot be told.
func lstatType(path string) (typ uint8, ok bool) {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return dtUnknown, false
	}
	return scanModeType(st.Mode), true
}

// scanModeType is the dirent type of a stat mode: a folder, a symlink, a
// socket, else a regular file.
func scanModeType(mode uint32) uint8 {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return dtDir
	case syscall.S_IFLNK:
		return dtLink
	case syscall.S_IFSOCK:
		return dtSock
	}
	return dtReg
}

// socket hides the socket at abs: in a temporary folder the folder at
// depth 1 holding it, when that may be hidden, else the socket itself.
func (w *treeScan) socket(f *scanFolder, abs string) {
	if f.anchor != "" && w.s.hideAnchor(w.p, f.anchor) {
		return
	}
	w.p.hideSocket(abs)
}

// rules hides the entry name of f when deny_read names it, else (with
// protect) makes it read-only when it is a protected path; a folder not
// hidden is entered. The common case — a file no rule names — builds no
// path.
func (w *treeScan) rules(f *scanFolder, name string, isDir bool) {
	s := w.s
	fname := foldPath(name)
	denied := s.cfg.Enabled && s.scanMatch(w.deny, f.denyRel, f.fdir, fname, isDir, true)
	prot := !denied && w.protect && !f.protected &&
		(s.scanMatch(w.prot, f.protRel, f.fdir, fname, isDir, false) || isDir && structuralDirName(f.dir, name))
	if !denied && !prot && !isDir {
		return
	}
	abs := f.dir + "/" + name
	switch {
	case denied:
		w.p.hide(s, abs, isDir)
		return
	case prot:
		w.p.ro = append(w.p.ro, abs)
	}
	if isDir {
		w.enter(f, abs, name, f.protected || prot)
	}
}

// enter queues the folder abs (named name, in f) for listing — covered
// when it lies in a read-only protected folder — unless it is too deep,
// scanned as a root of its own, not to be scanned, or on a filesystem the
// walk never enters.
func (w *treeScan) enter(f *scanFolder, abs, name string, covered bool) {
	if f.depth+1 > scanMaxDepth {
		return
	}
	if w.isRoot[abs] && !f.inRoot || w.p.skip[abs] {
		return // scanned as a root, or not to be scanned
	}
	if w.p.mounts[abs] && w.p.skipMount(abs) {
		return
	}
	next := childItem(f.scanItem, abs, name, covered, w.temp)
	if next.heavy {
		w.heavy = append(w.heavy, next)
	} else {
		w.queue = append(w.queue, next)
	}
}

// skipMount says whether the mount point abs is a filesystem the walk
// never enters — a network or FUSE mount, whose listing could take
// seconds, or a pseudo-filesystem — and notes it.
func (p *maskPlan) skipMount(abs string) bool {
	var fs syscall.Statfs_t
	if syscall.Statfs(abs, &fs) != nil {
		return false
	}
	kind, skip := scanSkipFS[uint32(fs.Type)]
	if skip {
		p.notes = append(p.notes, fmt.Sprintf("%s is a %s mount: not scanned", abs, kind))
	}
	return skip
}

// childItem is the folder abs, named name, found in the folder of it:
// one level deeper, in a root when it is, covered when a read-only
// protected folder holds it, heavy under a heavy folder or when named like
// one (walked last), and in a temporary folder anchored at its folder at
// depth 1 (the folder a socket below hides).
func childItem(it scanItem, abs, name string, covered, temp bool) scanItem {
	next := scanItem{dir: abs, depth: it.depth + 1, inRoot: it.inRoot, protected: covered, heavy: it.heavy || heavyDirs[name], anchor: it.anchor}
	if temp && it.depth == 0 {
		next.anchor = abs
	}
	return next
}

// link handles the symbolic link name of f: what it leads to is hidden
// when that is a socket or denied (scanSymlink), and with protect, when
// the link is a protected path (by the rules, as its name and place say),
// what it leads to is protected: read-only when it lies in a writable
// root, unless it holds a root or the working folder (that would stop all
// work; a note says so). The link itself cannot be made read-only (a
// mount lands on its target): a command that repoints or removes it is
// put right once it ends (tools/builtin's guard).
func (w *treeScan) link(f *scanFolder, name string) {
	abs := f.dir + "/" + name
	w.s.scanSymlink(w.p, abs)
	if !w.protect || f.protected {
		return
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil || !w.s.insideRoot(r) {
		return
	}
	fi, err := os.Stat(r)
	if err != nil {
		return
	}
	isDir := fi.IsDir()
	if !w.s.scanMatch(w.prot, f.protRel, f.fdir, foldPath(name), isDir, false) && !(isDir && structuralDirName(f.dir, name)) {
		return
	}
	if isDir && !w.s.safeToHide(r) {
		// A link leading to the project or a root above it: making that
		// read-only would stop all work.
		w.p.notes = append(w.p.notes, abs+" is a protected path leading to "+r+", which holds a writable root or the working folder: not made read-only")
		return
	}
	w.p.ro = append(w.p.ro, r)
}

// scanSymlink hides what a symlink leads to when that is a socket or
// denied.
func (s *Sandbox) scanSymlink(p *maskPlan, abs string) {
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return
	}
	fi, err := os.Stat(r)
	if err != nil {
		return
	}
	switch {
	case fi.Mode()&os.ModeSocket != 0:
		if !p.seccomp {
			p.hideSocket(r)
		}
	case s.cfg.Enabled && s.deniedBy(r) != "":
		p.hide(s, r, fi.IsDir())
	}
}

// scanGit handles a .git entry: without the socket filter its fsmonitor
// socket is hidden, and with protect the whole entry becomes read-only —
// a .git folder with everything in it, a .git file with the git
// directory it names and that one's common folder (when they lie in a
// writable root; elsewhere all is read-only anyway) — and so do the hooks
// folders and included files of the repository's effective git
// configuration that lie in a writable root.
func (s *Sandbox) scanGit(p *maskPlan, gitPath string, isDir, protect bool) {
	if isDir && !p.seccomp {
		p.hideSocket(gitPath + "/fsmonitor--daemon.ipc")
	}
	if !protect {
		return
	}
	p.ro = append(p.ro, gitPath)
	s.protectGitFile(p, gitPath, isDir)
}

// protectGitFile makes read-only, with the .git entry at gitPath (a
// folder when isDir, else a file, either maybe reached through a link),
// what git then uses from the writable roots: a file's git directory and
// that one's common folder, and the hooks folders and included files of
// the repository's effective configuration.
func (s *Sandbox) protectGitFile(p *maskPlan, gitPath string, isDir bool) {
	top := filepath.Dir(gitPath)
	if !isDir {
		if g := gitfileTarget(gitPath, top); g != "" {
			g = CanonicalOr(g)
			if s.insideRoot(g) {
				p.ro = append(p.ro, g)
			}
			if c, err := readSmall(filepath.Join(g, "commondir"), 4096); err == nil {
				common := strings.TrimSpace(string(c))
				if !filepath.IsAbs(common) {
					common = filepath.Join(g, common)
				}
				if common = CanonicalOr(filepath.Clean(common)); s.insideRoot(common) {
					p.ro = append(p.ro, common)
				}
			}
		}
	}
	eff := effectiveGit(filepath.Join(top, "x"))
	for _, q := range append(eff.hooks, eff.files...) {
		if s.insideRoot(q) {
			if _, err := os.Lstat(q); err == nil {
				p.ro = append(p.ro, q)
			}
		}
	}
	s.protectHookTargets(p, eff)
}

// protectHookTargets makes read-only what the symbolic links in the
// repository's hooks folders lead to, when that lies in a writable root
// (a .git/hooks/pre-commit leading to scripts/pre-commit: git runs the
// script), by the rule that a protected path that is a symbolic link is
// protected by what it leads to. The walk does not enter .git, so the
// links there are read here. A folder holding a root or the working
// folder is left writable (that would stop all work), and a note says so.
func (s *Sandbox) protectHookTargets(p *maskPlan, eff gitEffective) {
	for _, t := range eff.hookTargets() {
		if !s.insideRoot(t) {
			continue
		}
		if fi, err := os.Stat(t); err == nil && fi.IsDir() && !s.safeToHide(t) {
			p.notes = append(p.notes, t+" is a git hooks folder or hook (through a symbolic link) and holds a writable root or the working folder: not made read-only")
			continue
		}
		p.ro = append(p.ro, t)
	}
}

// scanGitLink handles a .git that is a symbolic link: what it leads to is
// hidden when that is a socket or denied (scanSymlink), and with protect
// it is protected like a .git folder or file standing there — the folder
// or file it leads to, when that lies in a writable root (elsewhere all
// is read-only anyway), with the git directory a file names and the hooks
// folders of the repository's configuration. The link itself is not made
// read-only (a mount cannot cover a symlink: it lands on the target); a
// command that replaces or removes it is put right once it ends (see
// tools/builtin's guard).
func (s *Sandbox) scanGitLink(p *maskPlan, link string, protect bool) {
	s.scanSymlink(p, link)
	r, err := filepath.EvalSymlinks(link)
	if err != nil {
		return
	}
	fi, err := os.Stat(r)
	if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
		return
	}
	if fi.IsDir() && !p.seccomp {
		p.hideSocket(r + "/fsmonitor--daemon.ipc")
	}
	if !protect {
		return
	}
	switch {
	case fi.IsDir() && !s.safeToHide(r):
		p.notes = append(p.notes, link+" leads to "+r+", which holds a writable root or the working folder: not made read-only")
	case s.insideRoot(r):
		p.ro = append(p.ro, r)
	}
	s.protectGitFile(p, link, fi.IsDir())
}

// specialListing says whether the folder dir, whose entries are ents, is
// a git directory as git tells one (see isGitDir) or an interpreter
// environment (pyvenv.cfg, conda-meta/).
func specialListing(dir string, ents []dirent) bool {
	has := map[string]uint8{}
	for _, e := range ents {
		switch e.name {
		case "HEAD", "objects", "commondir", "pyvenv.cfg", "conda-meta":
			typ := e.typ
			if typ == dtUnknown {
				typ, _ = lstatType(dir + "/" + e.name)
			}
			has[e.name] = typ
		}
	}
	objectsDir := func() bool {
		fi, err := os.Stat(dir + "/objects")
		return err == nil && fi.IsDir()
	}
	return isGitDir(has["HEAD"] == dtReg || has["HEAD"] == dtLink, has["objects"] == dtDir || has["objects"] == dtLink && objectsDir(), has["commondir"] == dtReg) ||
		has["pyvenv.cfg"] == dtReg || has["conda-meta"] == dtDir
}

// structuralDirName says whether the folder name in dir is protected by
// its name alone: site-packages, dist-packages, node_modules/.bin.
func structuralDirName(dir, name string) bool {
	switch strings.ToLower(name) {
	case "site-packages", "dist-packages":
		return true
	case ".bin":
		return strings.EqualFold(filepath.Base(dir), "node_modules")
	}
	return false
}

// planBoundSockets hides the unix sockets that /proc/net/unix lists with a
// path: every socket bound in this network namespace, which is the one
// sandboxed commands share with sandbox.network = true (with it off, they
// can only reach a socket through its path, which this hides).
func (s *Sandbox) planBoundSockets(p *maskPlan) {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		p.notes = append(p.notes, "cannot read /proc/net/unix: only the sockets found by the scans are hidden")
		return
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[7], "/") {
			continue // unnamed, abstract (@…) or relative
		}
		path := strings.Join(f[7:], " ")
		if seen[path] {
			continue
		}
		seen[path] = true
		s.hideSocketAt(p, path)
	}
}

// hideSocketAt hides the socket at path, when there is one: in a
// temporary folder, the folder at depth 1 that holds it (sockets and their
// folders come and go with their programs; the folder at depth 1 outlives
// them, so bubblewrap does not fail on a mount point that vanished), else
// the socket itself.
func (s *Sandbox) hideSocketAt(p *maskPlan, path string) {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return
	}
	for _, t := range p.temps {
		if rest, ok := strings.CutPrefix(path, t+"/"); ok {
			if first, _, deeper := strings.Cut(rest, "/"); deeper {
				if s.hideAnchor(p, t+"/"+first) {
					return
				}
			}
		}
	}
	p.hideSocket(path)
}

// hideAnchor hides the folder at depth 1 of a temporary folder that holds
// a socket, counting the socket, when that folder may be hidden
// (safeToHide); false when it may not.
func (s *Sandbox) hideAnchor(p *maskPlan, anchor string) bool {
	if !s.safeToHide(anchor) {
		return false
	}
	if !p.seen[anchor] {
		p.sockets++
	}
	p.hide(s, anchor, true)
	return true
}

// finish orders the masks for bubblewrap: outside the roots a folder
// holding groupMasks hidden files or more is hidden whole (each mount
// costs bubblewrap time); a path under a folder already hidden is dropped,
// so is one that no longer exists (bubblewrap would fail on it), and the
// number of mounts is capped.
func (p *maskPlan) finish(s *Sandbox) {
	p.groupFiles(s)
	p.dropPrivate(s)
	p.dropMissing()
	p.ro = dedupRoots(p.ro)
	sort.Strings(p.tmpfs)
	p.tmpfs = dedupRoots(p.tmpfs)
	p.dropCovered(s)
	p.capMasks()
}

// groupFiles hides whole each folder outside the roots that holds
// groupMasks hidden files or more, when it may be hidden.
func (p *maskPlan) groupFiles(s *Sandbox) {
	perDir := map[string]int{}
	for _, n := range p.null {
		if d := filepath.Dir(n); !s.insideRoot(d) {
			perDir[d]++
		}
	}
	for d, n := range perDir {
		if n >= groupMasks && s.safeToHide(d) {
			p.tmpfs = append(p.tmpfs, d)
		}
	}
}

// dropPrivate drops the masks of what lies in a private temporary folder,
// outside the roots and what is bound back: it is not there for the
// command (no mask needed, and none to fail).
func (p *maskPlan) dropPrivate(s *Sandbox) {
	keep := func(l []string) []string {
		out := l[:0]
		for _, q := range l {
			if !underAny(q, p.private) || s.insideRoot(q) || underAny(q, p.rebind) {
				out = append(out, q)
			}
		}
		return out
	}
	p.tmpfs, p.null = keep(p.tmpfs), keep(p.null)
}

// dropMissing drops every path that no longer exists: bubblewrap would
// fail on it.
func (p *maskPlan) dropMissing() {
	exists := func(l []string) []string {
		out := l[:0]
		for _, q := range l {
			if _, err := os.Lstat(q); err == nil {
				out = append(out, q)
			}
		}
		return out
	}
	p.early, p.ro, p.tmpfs, p.null, p.rebind = exists(p.early), exists(p.ro), exists(p.tmpfs), exists(p.null), exists(p.rebind)
	p.reveal = exists(p.reveal)
	p.private = exists(p.private)
}

// dropCovered drops the file masks under a hidden folder — under a folder
// hidden early, only what a root bound on top of it (or a folder bound
// back) shows needs one — and the protected paths inside a hidden folder,
// which stay hidden. The file masks come out sorted.
func (p *maskPlan) dropCovered(s *Sandbox) {
	var null []string
	sort.Strings(p.null)
	for _, n := range p.null {
		if !underAny(n, p.tmpfs) && (!underAny(n, p.early) || s.insideRoot(n) || underAny(n, p.rebind)) {
			null = append(null, n)
		}
	}
	p.null = null
	var ro []string
	for _, r := range p.ro {
		if !underAny(r, p.tmpfs) {
			ro = append(ro, r)
		}
	}
	p.ro = ro
}

// capMasks keeps at most scanMaxMasks mounts — read-only protected paths
// first, then folders, then files — and notes a cut.
func (p *maskPlan) capMasks() {
	if n := len(p.ro) + len(p.tmpfs) + len(p.null); n > scanMaxMasks {
		p.notes = append(p.notes, fmt.Sprintf("%d paths to hide or protect: only the first %d are (read-only protected paths first, then folders, then files)", n, scanMaxMasks))
	}
	room := scanMaxMasks
	cut := func(l []string) []string {
		if len(l) > room {
			l = l[:room]
		}
		room -= len(l)
		return l
	}
	p.ro = cut(p.ro)
	p.tmpfs = cut(p.tmpfs)
	p.null = cut(p.null)
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// socketPathsFromEnv extracts the socket paths that SocketEnv variables of
// environ name (unix:path=…, unix://…, a path before a comma, …).
func socketPathsFromEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" || !EnvDenied(name, SocketEnv) {
			continue
		}
		for _, part := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ';' }) {
			if _, v, ok := strings.Cut(part, "path="); ok {
				part = v
			}
			for _, pre := range []string{"unix://", "unix:"} {
				part = strings.TrimPrefix(part, pre)
			}
			if filepath.IsAbs(part) {
				out = append(out, filepath.Clean(part))
			}
		}
	}
	return out
}
