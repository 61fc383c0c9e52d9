package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Config is the `sandbox` section of setup (SPEC §12). A nil slice
// means the default; an empty non-nil slice means none.
type Config struct {
	Enabled bool
	// Backend is "auto" (bubblewrap when it works, else none), "bwrap"
	// (required: commands fail when it does not work) or "none".
	Backend string
	// Writable are the roots write and edit may change, and that bash may
	// change under bubblewrap: absolute paths, `~`, `$VAR`, `${VAR:-def}`,
	// urn:flemma:cwd (Neovim's cwd) and urn:flemma:buffer:path (the .chat
	// file's directory; dropped for unnamed buffers).
	Writable []string
	// DenyRead are globs (doublestar, matched case- and Unicode-
	// insensitively against resolved absolute paths) that no tool reads or
	// writes, and that bash under bubblewrap cannot read (see WrapCommand).
	// A glob without `/` matches a base name anywhere. An entry `!GLOB`
	// (GLOB a base-name glob, optionally written `!**/GLOB`) exempts the
	// files whose base name matches it from the base-name rules (so
	// `**/.env.*` with `!**/.env.example` keeps the example readable); it
	// never exempts from a folder rule (`**/.ssh/**`) or a path rule.
	DenyRead []string
	// EnvDeny are the environment variable globs removed from commands and
	// whose values are redacted from output.
	EnvDeny []string
	// Network allows network access under bubblewrap (off by default).
	// With it, the command shares the host's network namespace, and so its
	// abstract unix sockets (X11's @/tmp/.X11-unix/X0, some D-Bus buses).
	Network bool
	// UnixSockets lets sandboxed commands create unix sockets
	// (sandbox.unix_sockets; off by default). Off, a seccomp filter
	// refuses every AF_UNIX socket, so none of the user's is reachable
	// wherever it lies; on, only the sockets the scans find are hidden
	// (for test suites that start a unix-socket server of their own).
	UnixSockets bool
	// Protected are paths or globs (same syntax as DenyRead) added to the
	// built-in protected paths (DefaultProtected): the host adds the
	// buffer's own .chat file and flemma's state directory. See
	// Sandbox.Protected.
	Protected []string
	// Hidden are flemma's and the editor's state (issue 24 #3): the
	// journal, the trust store, backups, logs, other conversations' full
	// outputs, Neovim's shada, undo and swap files. No tool reads or
	// writes them (as if deny_read named them) and commands under
	// bubblewrap do not see them at all. Absolute paths (folders or
	// files); the host fills them from the plugin's paths.
	Hidden []string
	// HiddenExcept are folders inside Hidden that stay readable (and
	// visible, read-only, to bash): the conversation's own full outputs,
	// which its truncation notices name.
	HiddenExcept []string
	// CacheDir is a folder of flemma's state where sandboxed commands
	// keep tool caches (Go's build cache: GOCACHE): the user's own caches
	// in the home folder are read-only to them, and go test fails on a
	// read-only build cache. One per project (the host names it), created
	// 0700 and bound read-write; "" for none.
	CacheDir string
	// Limits bound each command (sandbox.limits; issue 24 #6); nil means
	// DefaultLimits. A zero field is no limit.
	Limits *Limits
}

// DefaultLimits are the limits of a command unless sandbox.limits says
// otherwise: enough for `go test ./...`, `npm test`, `pytest` and `make` on
// a large project, not enough for a fork bomb or a runaway allocation to
// take the machine down: 1024 processes, half of the machine's memory (in
// each process and for the tree together), files of 4 GiB at most, 8192
// open files, 600 s of processor time per process.
func DefaultLimits() Limits {
	return Limits{Processes: 1024, Memory: memTotal() / 2, FileSize: 4 << 30, OpenFiles: 8192, CPU: 600}
}

// ParseMemoryLimit reads sandbox.limits.memory: a number of MiB (0 = no
// limit) or "N%" of the machine's memory (1 to 100). ok is false for nil
// or anything else (the default applies; setup reports the mistake).
func ParseMemoryLimit(v any) (bytes int64, ok bool) {
	switch x := v.(type) {
	case float64:
		if x >= 0 && x == float64(int64(x)) {
			return int64(x) << 20, true
		}
	case string:
		if p, found := strings.CutSuffix(x, "%"); found {
			if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= 100 {
				return memTotal() * int64(n) / 100, true
			}
		}
	}
	return 0, false
}

// memTotal is the machine's memory (MemTotal of /proc/meminfo), 8 GiB
// where it cannot be read. Read once: every call categorized asks for the
// default limits (issue 23: the read was a tenth of a press).
var memTotal = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
						return kb * 1024
					}
				}
			}
		}
	}
	return 8 << 30
})

// Sandbox URNs (reference §10.2).
const (
	URNCwd        = "urn:flemma:cwd"
	URNBufferPath = "urn:flemma:buffer:path"
)

// DefaultWritable and DefaultDenyRead are the defaults of SPEC §12
// (DefaultDenyRead broadened after the first outside security review).
var (
	DefaultWritable = []string{URNCwd, URNBufferPath, "${TMPDIR:-/tmp}"}
	DefaultDenyRead = []string{
		// Keys and certificates, anywhere.
		"**/.ssh/**", "**/.gnupg/**",
		"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
		"**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.jks", "**/*.keystore",
		"!**/cacert.pem", // the public CA bundle of certifi and pip: TLS needs it
		// Environment files, anywhere; their templates stay readable.
		"**/.env", "**/.env.*", "**/.envrc",
		"!**/.env.example", "!**/.env.sample", "!**/.env.template", "!**/.env.dist", "!**/.env.defaults",
		// Credential stores in the home directory.
		"~/.aws/**", "~/.azure/**", "~/.config/gcloud/**", "~/.kube/**", "~/.docker/**",
		"~/.config/gh/**", "~/.config/hub", "~/.config/glab-cli/**", "~/.config/git/credentials",
		"~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.yarnrc.yml", "~/.pypirc", "~/.pgpass", "~/.my.cnf",
		"~/.cargo/credentials*", "~/.gem/credentials", "~/.vault-token", "~/.terraform.d/credentials*",
		"~/.password-store/**", "~/.local/share/keyrings/**", "~/.config/op/**", "~/.config/rclone/**",
		"~/.config/github-copilot/**", "~/.claude/.credentials.json", "~/.codex/auth.json",
		// Shell histories (commands with tokens in them).
		"~/.*_history", "~/.local/share/fish/fish_history",
	}
)

// DefaultConfig is the sandbox of SPEC §12: enabled, automatic
// backend, network off (sandbox.network = true opts in).
func DefaultConfig() Config {
	return Config{Enabled: true, Backend: "auto", Network: false}
}

// Sandbox is a resolved sandbox policy for one buffer: its writable roots
// are absolute and canonical, its globs compiled. It is immutable and safe
// for concurrent use.
type Sandbox struct {
	cfg     Config
	base    string            // where relative paths resolve: the buffer's directory, else cwd
	roots   []string          // canonical writable roots, sorted, none under another
	ids     map[string]fileID // identity of each existing root when it was resolved
	refused []string          // configured roots that were dropped, and why
	deny    []denyRule
	denySet ruleSet
	allow   []allowRule // deny_read exceptions (`!glob`)
	prot    []denyRule  // protected paths: DefaultProtected + cfg.Protected
	protSet ruleSet
	home    string
	hidden  []string // canonical Config.Hidden
	reveal  []string // canonical Config.HiddenExcept
	// protect: the call was approved by a policy, not by the user
	// (Env.Protect); write/edit refuse protected paths and bash gets them
	// read-only. Set only on the copy Env.sandbox makes.
	protect bool
}

// Option is an optional argument of New.
type Option func(*sandboxOptions)

type sandboxOptions struct {
	pins    *RootPins
	pinsSet bool
}

// WithRootPins makes New check the writable roots against pins (see
// RootPins): the host keeps one RootPins per buffer. Without this option a
// process-wide RootPins is used; WithRootPins(nil) turns pinning off.
func WithRootPins(p *RootPins) Option {
	return func(o *sandboxOptions) { o.pins, o.pinsSet = p, true }
}

type denyKind int

const (
	denyPath    denyKind = iota // match the whole path
	denyDirName                 // **/NAME/**: a path component equals NAME
	denyBase                    // **/GLOB: the base name matches GLOB
	denySubpath                 // **/A/B: the path ends with /A/B (no metacharacters)
	denySubtree                 // **/A/B/**: /A/B is a run of components (no metacharacters)
)

type denyRule struct {
	glob     string // as configured, for messages
	pat      string // folded, absolute doublestar pattern
	kind     denyKind
	lit      string // denyDirName: the name; denyBase: the base-name glob; denySub*: the sub-path
	baseKind GlobKind
	baseLit  string // denyBase: fast form of lit
	prefix   string // denyPath: the literal folded start of pat (a match must start with it)
	raw      string // denyPath: the pattern with ~ expanded, not folded (for literal look-ups)
}

// allowRule is a deny_read exception: a base-name glob.
type allowRule struct {
	glob string
	pat  string
	kind GlobKind
	lit  string
}

// New resolves cfg for a buffer: URNs and environment references in
// the writable roots are expanded, every root is made absolute with its
// symlinks resolved, and the deny globs are compiled. cwd is Neovim's
// working directory, bufferPath the .chat file ("" when unnamed).
//
// A root that resolves to "/", to the home directory or to an ancestor of
// it is dropped, and so is a root whose identity differs from the one its
// RootPins recorded when it was first resolved (it was replaced, e.g. by a
// symlink): Refused and Status say which and why.
func New(cfg Config, cwd, bufferPath string, opts ...Option) (*Sandbox, error) {
	pins := rootPins(opts)
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	cwd = workingDir(cwd)
	home, _ := os.UserHomeDir()
	s := &Sandbox{cfg: cfg, base: cwd, home: home, ids: map[string]fileID{}}
	bufDir := ""
	if bufferPath != "" {
		bufDir = filepath.Dir(ResolvePath(bufferPath, cwd))
		s.base = bufDir
		if r, err := filepath.EvalSymlinks(bufDir); err == nil {
			s.base = r
		}
	}
	if err := s.resolveRoots(cfg.Writable, cwd, bufDir, pins); err != nil {
		return nil, err
	}
	if s.deny, s.allow, err = compileDenyRead(cfg.DenyRead, home); err != nil {
		return nil, err
	}
	if s.prot, err = compileProtected(cfg.Protected, home); err != nil {
		return nil, err
	}
	s.denySet, s.protSet = newRuleSet(s.deny), newRuleSet(s.prot)
	s.hidden, s.reveal = canonicalAbs(cfg.Hidden), canonicalAbs(cfg.HiddenExcept)
	return s, nil
}

// rootPins are the RootPins that opts name: the process-wide ones unless
// WithRootPins says otherwise (nil: no pinning).
func rootPins(opts []Option) *RootPins {
	var o sandboxOptions
	for _, opt := range opts {
		opt(&o)
	}
	if !o.pinsSet {
		return defaultPins
	}
	return o.pins
}

// withDefaults fills in what cfg leaves unset: the backend "auto", and the
// defaults of a nil Writable, DenyRead or EnvDeny (an empty non-nil slice
// stays empty: none). A backend other than "auto", "bwrap" or "none" is an
// error.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Backend == "" {
		cfg.Backend = "auto"
	}
	switch cfg.Backend {
	case "auto", "bwrap", "none":
	default:
		return cfg, fmt.Errorf("unknown sandbox backend %q (use \"auto\", \"bwrap\" or \"none\")", cfg.Backend)
	}
	if cfg.Writable == nil {
		cfg.Writable = DefaultWritable
	}
	if cfg.DenyRead == nil {
		cfg.DenyRead = DefaultDenyRead
	}
	if cfg.EnvDeny == nil {
		cfg.EnvDeny = DefaultEnvDeny
	}
	return cfg, nil
}

// workingDir is cwd cleaned, the process's working directory when cwd is
// "".
func workingDir(cwd string) string {
	if cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			cwd = wd
		}
	}
	return filepath.Clean(cwd)
}

// resolveRoots expands, resolves and admits the configured writable roots
// (see admitRoot); one that names nothing (an unnamed buffer's folder, an
// unset variable) or cannot be resolved is left out. An unknown URN is an
// error.
func (s *Sandbox) resolveRoots(writable []string, cwd, bufDir string, pins *RootPins) error {
	homes := homeDirs(s.home)
	var roots []string
	for _, w := range writable {
		p, ok, err := expandRoot(w, cwd, bufDir, s.home)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		c, err := canonical(p)
		if err != nil {
			continue // an unresolvable root can hold nothing writable
		}
		if s.admitRoot(w, p, c, homes, pins) {
			roots = append(roots, c)
		}
	}
	s.roots = dedupRoots(roots)
	return nil
}

// admitRoot says whether the root configured as w, expanded to p and
// resolved to c, may be writable: never "/", a home directory or an
// ancestor of one, nor a root whose identity differs from the one pins
// recorded. A refused root is added to s.refused with the reason; an
// admitted one that exists has its identity kept.
func (s *Sandbox) admitRoot(w, p, c string, homes []string, pins *RootPins) bool {
	from := configuredAs(w, p, c)
	if why := homeRefusal(c, homes); why != "" {
		s.refused = append(s.refused, fmt.Sprintf("%s (%s%s)", c, why, from))
		return false
	}
	id, exists := statID(c)
	if why := pins.check(p, c, id, exists); why != "" {
		s.refused = append(s.refused, fmt.Sprintf("%s (%s%s)", p, why, from))
		return false
	}
	if exists {
		s.ids[c] = id
	}
	return true
}

// configuredAs is the end of a refusal message naming how the root c was
// configured (w) and expanded (p), when that differs from c.
func configuredAs(w, p, c string) string {
	if w == c {
		return ""
	}
	from := "; configured as " + w
	if p != w && p != c {
		from += " = " + p
	}
	return from
}

// compileDenyRead compiles deny_read: its rules, and its exceptions
// (entries starting with `!`).
func compileDenyRead(globs []string, home string) ([]denyRule, []allowRule, error) {
	var deny []denyRule
	var allow []allowRule
	for _, g := range globs {
		if strings.HasPrefix(g, "!") {
			a, err := compileAllow(g)
			if err != nil {
				return nil, nil, err
			}
			allow = append(allow, a)
			continue
		}
		r, err := compileDeny(g, home)
		if err != nil {
			return nil, nil, err
		}
		deny = append(deny, r)
	}
	return deny, allow, nil
}

// compileProtected compiles DefaultProtected and then the configured
// protected paths.
func compileProtected(extra []string, home string) ([]denyRule, error) {
	var prot []denyRule
	for _, g := range append(append([]string(nil), DefaultProtected...), extra...) {
		r, err := compileDeny(g, home)
		if err != nil {
			return nil, fmt.Errorf("invalid sandbox.protected pattern %q", g)
		}
		prot = append(prot, r)
	}
	return prot, nil
}

// canonicalAbs is the absolute paths of paths, cleaned and canonical
// where they resolve; relative ones are left out.
func canonicalAbs(paths []string) []string {
	var out []string
	for _, h := range paths {
		if filepath.IsAbs(h) {
			out = append(out, CanonicalOr(filepath.Clean(h)))
		}
	}
	return out
}

// homeDirs are the canonical home directories: $HOME and the account's
// home from the password database, when they differ.
func homeDirs(home string) []string {
	var out []string
	add := func(h string) {
		if h == "" {
			return
		}
		c := CanonicalOr(filepath.Clean(h))
		for _, o := range out {
			if o == c {
				return
			}
		}
		out = append(out, c)
	}
	add(home)
	if u, err := user.Current(); err == nil {
		add(u.HomeDir)
	}
	return out
}

// homeRefusal says why the canonical root c can never be writable: it is
// "/", a home directory, or an ancestor of one. "" means it can be.
func homeRefusal(c string, homes []string) string {
	if c == "/" {
		return "the filesystem root is never writable"
	}
	for _, h := range homes {
		switch {
		case c == h:
			return "the home directory is never a writable root: name a project folder instead"
		case within(h, c):
			return "an ancestor of the home directory is never a writable root"
		}
	}
	return ""
}

// Config returns the configuration the sandbox was built from, defaults
// filled in.
func (s *Sandbox) Config() Config { return s.cfg }

// WithProtect returns the sandbox enforcing protected paths (Env.Protect):
// s itself when it already does, else a copy that does.
func (s *Sandbox) WithProtect() *Sandbox {
	if s.protect {
		return s
	}
	c := *s
	c.protect = true
	return &c
}

// CacheDir is the folder of tool caches of this sandbox's commands under
// bubblewrap (Config.CacheDir), "" when there is none or commands do not
// run under bubblewrap.
func (s *Sandbox) CacheDir() string {
	if s.cfg.CacheDir == "" || !s.Available() {
		return ""
	}
	return s.cfg.CacheDir
}

// Limits are the limits each command runs under (Config.Limits, else
// DefaultLimits).
func (s *Sandbox) Limits() Limits {
	if s.cfg.Limits == nil {
		return DefaultLimits()
	}
	return *s.cfg.Limits
}

// Enabled reports whether the policy is enforced at all.
func (s *Sandbox) Enabled() bool { return s.cfg.Enabled }

// Roots returns the canonical writable roots.
func (s *Sandbox) Roots() []string { return append([]string(nil), s.roots...) }

// Refused returns the configured writable roots that were dropped, each
// with the reason ("/", the home directory or an ancestor of it, or a root
// replaced since it was first resolved), for :Flemma sandbox:status and
// the refusals of write and edit.
func (s *Sandbox) Refused() []string { return append([]string(nil), s.refused...) }

// rootOf returns the root that holds the canonical path p, and its
// identity when it had one at resolution.
func (s *Sandbox) rootOf(p string) (string, fileID, bool) {
	for _, r := range s.roots {
		if within(p, r) {
			id, ok := s.ids[r]
			return r, id, ok
		}
	}
	return "", fileID{}, false
}

// WriteRoot is the writable root that holds the canonical path resolved,
// with the identity it had when the sandbox resolved it, for a write that
// must go through it; false when the sandbox is disabled or no root holds it.
func (s *Sandbox) WriteRoot(resolved string) (RootRef, bool) {
	if !s.cfg.Enabled {
		return RootRef{}, false
	}
	r, id, ok := s.rootOf(resolved)
	if !ok {
		return RootRef{}, false
	}
	return RootRef{path: r, id: id, ok: true}, true
}

// Protecting reports whether the sandbox refuses protected paths to
// policy-approved calls (WithProtect).
func (s *Sandbox) Protecting() bool { return s.protect }

// Resolve makes p absolute (see ResolvePath) against the buffer's directory,
// or Neovim's cwd for unnamed buffers.
func (s *Sandbox) Resolve(p string) string { return ResolvePath(p, s.base) }

// DenyError is a refusal by the sandbox policy. Rule says which rule
// refused, in words the model can act on.
type DenyError struct {
	Op   string // "read" or "write"
	Rule string
	Path string // the resolved path
}

func (e *DenyError) Error() string { return "Sandbox: " + e.Op + " denied – " + e.Rule }

// CheckRead resolves path (relative to the buffer's directory, `~`, `..`,
// symlinks) and refuses it when a deny_read glob matches the path as written
// or as resolved, or when it is a per-process file under /proc (environ,
// mem, fd, root, …). With the sandbox disabled nothing is refused.
func (s *Sandbox) CheckRead(path string) (string, error) {
	abs := s.Resolve(path)
	resolved, err := canonical(abs)
	if err != nil {
		return "", err
	}
	if !s.cfg.Enabled {
		return resolved, nil
	}
	if r := s.deniedBy(abs, resolved); r != "" {
		return "", &DenyError{Op: "read", Rule: fmt.Sprintf("path matches deny_read rule %q", r), Path: resolved}
	}
	if s.isHidden(abs) || s.isHidden(resolved) {
		return "", &DenyError{Op: "read", Rule: hiddenRule, Path: resolved}
	}
	if isProcessFile(abs) || isProcessFile(resolved) {
		return "", &DenyError{Op: "read", Rule: "per-process files under /proc are never readable", Path: resolved}
	}
	return resolved, nil
}

// CheckWrite resolves path like CheckRead and refuses it unless the resolved
// path lies inside a writable root. Paths under /proc, /sys and /dev (as
// written or resolved) and paths matching a deny_read glob are refused even
// inside a root. With the sandbox disabled nothing is refused.
func (s *Sandbox) CheckWrite(path string) (string, error) {
	abs := s.Resolve(path)
	resolved, err := canonical(abs)
	if err != nil {
		return "", err
	}
	if !s.cfg.Enabled {
		return resolved, nil
	}
	if isSystemPath(abs) || isSystemPath(resolved) {
		return "", &DenyError{Op: "write", Rule: "paths under /proc, /sys and /dev are never writable", Path: resolved}
	}
	if r := s.deniedBy(abs, resolved); r != "" {
		return "", &DenyError{Op: "write", Rule: fmt.Sprintf("path matches deny_read rule %q", r), Path: resolved}
	}
	if s.isHidden(abs) || s.isHidden(resolved) {
		return "", &DenyError{Op: "write", Rule: hiddenRule, Path: resolved}
	}
	if !s.writable(resolved) {
		return "", &DenyError{Op: "write", Rule: "path is outside writable directories", Path: resolved}
	}
	return resolved, nil
}

// IsPathWritable is CheckWrite as a boolean (ctx.sandbox.is_path_writable).
func (s *Sandbox) IsPathWritable(path string) bool {
	_, err := s.CheckWrite(path)
	return err == nil
}

func (s *Sandbox) writable(resolved string) bool {
	for _, r := range s.roots {
		if within(resolved, r) {
			return true
		}
	}
	return false
}

// within reports whether p is root or lies under it.
func within(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root) && p[len(root)] == '/'
}

// deniedBy returns the deny glob matching any of the paths, or "".
func (s *Sandbox) deniedBy(paths ...string) string {
	if len(s.deny) == 0 {
		return ""
	}
	for _, p := range paths {
		f := foldPath(p)
		if r := s.matchRules(s.deny, f, true); r != nil {
			return r.glob
		}
	}
	return ""
}

// matchRules returns the first rule matching the folded absolute path f,
// or nil. With exceptions, a base-name rule does not match a base name
// that a deny_read exception names.
func (s *Sandbox) matchRules(rules []denyRule, f string, exceptions bool) *denyRule {
	base := f[strings.LastIndexByte(f, '/')+1:]
	for i := range rules {
		r := &rules[i]
		ok := false
		switch r.kind {
		case denyDirName:
			ok = strings.Contains(f+"/", "/"+r.lit+"/")
		case denyBase:
			ok = MatchGlob(r.baseKind, r.baseLit, r.lit, base)
		case denySubpath:
			ok = strings.HasSuffix(f, "/"+r.lit)
		case denySubtree:
			ok = strings.HasSuffix(f, "/"+r.lit) || strings.Contains(f, "/"+r.lit+"/")
		default:
			if strings.HasPrefix(f, r.prefix) {
				ok, _ = doublestar.Match(r.pat, f)
			}
		}
		if ok && exceptions && r.kind == denyBase && s.excepted(base) {
			continue
		}
		if ok {
			return r
		}
	}
	return nil
}

// excepted reports whether a deny_read exception names the folded base
// name.
func (s *Sandbox) excepted(base string) bool {
	for i := range s.allow {
		a := &s.allow[i]
		if MatchGlob(a.kind, a.lit, a.pat, base) {
			return true
		}
	}
	return false
}

// DeniedEntry is the walkers' fast form of deniedBy for one directory entry
// (abs is its absolute path, name its base name): the entry itself matches
// a deny rule. The walkers never descend into a denied folder, so the
// rules need not look at the components above the entry.
func (s *Sandbox) DeniedEntry(abs, name string, isDir bool) bool {
	if !s.cfg.Enabled {
		return false
	}
	if len(s.hidden) > 0 && s.isHidden(abs) {
		return true
	}
	return len(s.deny) > 0 && s.entryRule(&s.denySet, abs, name, isDir, true) != nil
}

// hiddenRule is the refusal of a path of Config.Hidden.
const hiddenRule = "flemma's and the editor's state (journal, trust store, backups, logs, other conversations' outputs, shada, undo and swap files) is never read or written by tools"

// isHidden reports whether the absolute path p lies in Config.Hidden and
// not in Config.HiddenExcept, nor in a writable root inside the hidden
// folder (a project inside Neovim's data folder stays the project).
func (s *Sandbox) isHidden(p string) bool {
	for _, h := range s.hidden {
		if !within(p, h) {
			continue
		}
		for _, r := range s.reveal {
			if within(p, r) {
				return false
			}
		}
		for _, r := range s.roots {
			if r != h && within(r, h) && within(p, r) {
				return false
			}
		}
		return true
	}
	return false
}

// ruleSet is a list of rules arranged for entryRule: the rules that need
// only an entry's name, the path rules grouped by the literal start they
// share (one comparison rejects a whole group), and the others.
type ruleSet struct {
	rules    []denyRule
	dirNames map[string]int // **/NAME/**
	lits     map[string]int // **/NAME
	affixes  []int          // **/*SUFFIX, **/PREFIX*
	globs    []int          // other base-name globs
	groups   []ruleGroup
	other    []int
}

type ruleGroup struct {
	prefix string // common literal start of the members' prefixes
	rules  []int
}

func newRuleSet(rules []denyRule) ruleSet {
	rs := ruleSet{rules: rules, dirNames: map[string]int{}, lits: map[string]int{}}
	byKey := map[string]int{}
	for i := range rules {
		r := &rules[i]
		switch {
		case r.kind == denyDirName:
			if _, dup := rs.dirNames[r.lit]; !dup {
				rs.dirNames[r.lit] = i
			}
		case r.kind == denyBase && r.baseKind == GlobLit:
			if _, dup := rs.lits[r.baseLit]; !dup {
				rs.lits[r.baseLit] = i
			}
		case r.kind == denyBase && (r.baseKind == GlobSuffix || r.baseKind == GlobPrefix):
			rs.affixes = append(rs.affixes, i)
		case r.kind == denyBase:
			rs.globs = append(rs.globs, i)
		case r.kind == denyPath && r.prefix != "":
			// Group by the first three components ("/home/user/").
			key, n := r.prefix, 0
			for j := 0; j < len(r.prefix); j++ {
				if r.prefix[j] == '/' {
					if n++; n == 3 {
						key = r.prefix[:j+1]
						break
					}
				}
			}
			g, ok := byKey[key]
			if !ok {
				g = len(rs.groups)
				byKey[key] = g
				rs.groups = append(rs.groups, ruleGroup{prefix: r.prefix})
			}
			grp := &rs.groups[g]
			grp.rules = append(grp.rules, i)
			k := 0
			for k < len(grp.prefix) && k < len(r.prefix) && grp.prefix[k] == r.prefix[k] {
				k++
			}
			grp.prefix = grp.prefix[:k]
		default:
			rs.other = append(rs.other, i)
		}
	}
	return rs
}

// entryRule is matchRules for a directory entry whose ancestors were
// already found not to match: a folder-name rule matches only the entry's
// own name.
func (s *Sandbox) entryRule(rs *ruleSet, abs, name string, isDir, exceptions bool) *denyRule {
	fname := foldPath(name)
	base := func(r *denyRule) *denyRule {
		if exceptions && s.excepted(fname) {
			return nil
		}
		return r
	}
	if isDir {
		if i, ok := rs.dirNames[fname]; ok {
			return &rs.rules[i]
		}
	}
	if i, ok := rs.lits[fname]; ok {
		if r := base(&rs.rules[i]); r != nil {
			return r
		}
	}
	for _, i := range rs.affixes {
		r := &rs.rules[i]
		if r.baseKind == GlobSuffix && strings.HasSuffix(fname, r.baseLit) || r.baseKind == GlobPrefix && strings.HasPrefix(fname, r.baseLit) {
			if r := base(r); r != nil {
				return r
			}
		}
	}
	for _, i := range rs.globs {
		if r := &rs.rules[i]; MatchGlob(r.baseKind, r.baseLit, r.lit, fname) {
			if r := base(r); r != nil {
				return r
			}
		}
	}
	fabs := ""
	path := func(r *denyRule) bool {
		if fabs == "" {
			fabs = foldPath(abs)
		}
		switch r.kind {
		case denySubpath:
			return strings.HasSuffix(fabs, "/"+r.lit)
		case denySubtree:
			return strings.HasSuffix(fabs, "/"+r.lit)
		}
		if !strings.HasPrefix(fabs, r.prefix) {
			return false
		}
		ok, _ := doublestar.Match(r.pat, fabs)
		return ok
	}
	for g := range rs.groups {
		grp := &rs.groups[g]
		if !prefixFoldMaybe(abs, grp.prefix) {
			continue
		}
		for _, i := range grp.rules {
			if r := &rs.rules[i]; prefixFoldMaybe(abs, r.prefix) && path(r) {
				return r
			}
		}
	}
	for _, i := range rs.other {
		if r := &rs.rules[i]; path(r) {
			return r
		}
	}
	return nil
}

func isSystemPath(p string) bool {
	return within(p, "/proc") || within(p, "/sys") || within(p, "/dev")
}

// isProcessFile reports whether p is (under) /proc/<pid>, /proc/self or
// /proc/thread-self: environ, mem, cmdline, fd/, root/, cwd/ … expose the
// host's secrets or escape every other rule.
func isProcessFile(p string) bool {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	if first == "self" || first == "thread-self" {
		return true
	}
	if first == "" {
		return false
	}
	for _, c := range first {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func compileDeny(g, home string) (denyRule, error) {
	p := g
	if (p == "~" || strings.HasPrefix(p, "~/")) && home != "" {
		p = filepath.ToSlash(home) + p[1:]
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**") {
		p = "**/" + p
	}
	raw := p
	p = foldPath(p)
	if !doublestar.ValidatePattern(p) {
		return denyRule{}, fmt.Errorf("invalid sandbox.deny_read pattern %q", g)
	}
	const meta = "*?[{\\"
	r := denyRule{glob: g, pat: p, kind: denyPath, raw: raw}
	if mid, ok := strings.CutPrefix(p, "**/"); ok {
		sub, tree := strings.CutSuffix(mid, "/**")
		switch {
		case tree && !strings.ContainsAny(sub, meta) && !strings.Contains(sub, "/"):
			r.kind, r.lit = denyDirName, sub
		case tree && !strings.ContainsAny(sub, meta):
			r.kind, r.lit = denySubtree, sub
		case !strings.Contains(mid, "/"):
			r.kind, r.lit = denyBase, mid
			r.baseKind, r.baseLit = ClassifyGlob(mid)
		case !strings.ContainsAny(mid, meta):
			r.kind, r.lit = denySubpath, mid
		}
	}
	if r.kind == denyPath {
		if i := strings.IndexAny(p, meta); i >= 0 {
			r.prefix = p[:i]
		} else {
			r.prefix = p
		}
	}
	return r, nil
}

// prefixFoldMaybe reports whether foldPath(s) may start with the folded
// prefix, without folding s: false only when an ASCII byte of s differs
// (ignoring case) from the prefix before any non-ASCII byte.
func prefixFoldMaybe(s, prefix string) bool {
	for i := 0; i < len(prefix); i++ {
		if i >= len(s) {
			return false
		}
		c, p := s[i], prefix[i]
		if c >= 0x80 || p >= 0x80 {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p {
			return false
		}
	}
	return true
}

// compileAllow compiles a deny_read exception `!GLOB` or `!**/GLOB`.
func compileAllow(g string) (allowRule, error) {
	body := strings.TrimPrefix(strings.TrimPrefix(g, "!"), "**/")
	if body == "" || strings.Contains(body, "/") {
		return allowRule{}, fmt.Errorf("invalid sandbox.deny_read exception %q: it must name a base-name glob, like \"!**/.env.example\"", g)
	}
	pat := foldPath(body)
	if !doublestar.ValidatePattern(pat) {
		return allowRule{}, fmt.Errorf("invalid sandbox.deny_read exception %q", g)
	}
	a := allowRule{glob: g, pat: pat}
	a.kind, a.lit = ClassifyGlob(pat)
	return a, nil
}

// expandRoot expands one sandbox.writable entry; ok is false when the entry
// names nothing (unnamed buffer, unset variable).
func expandRoot(w, cwd, bufDir, home string) (string, bool, error) {
	switch {
	case w == URNCwd:
		return cwd, cwd != "", nil
	case w == URNBufferPath:
		return bufDir, bufDir != "", nil
	case strings.HasPrefix(w, "urn:"):
		return "", false, fmt.Errorf("unknown URN variable '%s' in sandbox.writable (known: %s, %s)", w, URNCwd, URNBufferPath)
	}
	p, ok := expandVars(w, home)
	if !ok || p == "" {
		return "", false, nil
	}
	return ResolvePath(p, cwd), true, nil
}

// expandVars expands $VAR, ${VAR} and ${VAR:-default} (an empty value
// counts as unset; `~` in a default is the home directory). ok is false when
// a variable without default is unset.
func expandVars(s, home string) (string, bool) {
	ok := true
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			body := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(body, ":-")
			if v := os.Getenv(name); v != "" {
				b.WriteString(v)
			} else if hasDef {
				if (def == "~" || strings.HasPrefix(def, "~/")) && home != "" {
					def = home + def[1:]
				}
				b.WriteString(def)
			} else {
				ok = false
			}
			i += end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			continue
		}
		if v := os.Getenv(s[i+1 : j]); v != "" {
			b.WriteString(v)
		} else {
			ok = false
		}
		i = j - 1
	}
	return b.String(), ok
}

func dedupRoots(roots []string) []string {
	sort.Strings(roots)
	var out []string
	for _, r := range roots {
		if len(out) > 0 && within(r, out[len(out)-1]) {
			continue
		}
		if r == "/" {
			out = out[:0]
		}
		out = append(out, r)
		if r == "/" {
			break
		}
	}
	return out
}

// canonical returns the absolute path p with every symlink resolved. The
// part of p that does not exist yet is kept as written (it is created
// later, inside the resolved directory).
func canonical(p string) (string, error) {
	p = filepath.Clean(p)
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p, nil
	}
	rd, err := canonical(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(rd, filepath.Base(p)), nil
}
