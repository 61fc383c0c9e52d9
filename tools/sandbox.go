package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// SandboxConfig is the `sandbox` section of setup (SPEC §12). A nil slice
// means the default; an empty non-nil slice means none.
type SandboxConfig struct {
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
	// writes. A glob without `/` matches a base name anywhere.
	DenyRead []string
	// EnvDeny are the environment variable globs removed from commands and
	// whose values are redacted from output.
	EnvDeny []string
	// Network allows network access under bubblewrap.
	Network bool
}

// Sandbox URNs (reference §10.2).
const (
	URNCwd        = "urn:flemma:cwd"
	URNBufferPath = "urn:flemma:buffer:path"
)

// DefaultWritable and DefaultDenyRead are the defaults of SPEC §12.
var (
	DefaultWritable = []string{URNCwd, URNBufferPath, "${TMPDIR:-/tmp}"}
	DefaultDenyRead = []string{"**/.ssh/**", "**/.gnupg/**", "**/id_rsa*", "**/*.pem", "**/*.key"}
)

// DefaultSandboxConfig is the sandbox of SPEC §12: enabled, automatic
// backend, network allowed.
func DefaultSandboxConfig() SandboxConfig {
	return SandboxConfig{Enabled: true, Backend: "auto", Network: true}
}

// Sandbox is a resolved sandbox policy for one buffer: its writable roots
// are absolute and canonical, its globs compiled. It is immutable and safe
// for concurrent use.
type Sandbox struct {
	cfg   SandboxConfig
	base  string   // where relative paths resolve: the buffer's directory, else cwd
	roots []string // canonical writable roots, sorted, none under another
	deny  []denyRule
	home  string
}

type denyKind int

const (
	denyPath    denyKind = iota // match the whole path
	denyDirName                 // **/NAME/**: a path component equals NAME
	denyBase                    // **/GLOB: the base name matches GLOB
)

type denyRule struct {
	glob     string // as configured, for messages
	pat      string // folded, absolute doublestar pattern
	kind     denyKind
	lit      string // denyDirName: the name; denyBase: the base-name glob
	baseKind globKind
	baseLit  string // denyBase: fast form of lit
}

// NewSandbox resolves cfg for a buffer: URNs and environment references in
// the writable roots are expanded, every root is made absolute with its
// symlinks resolved, and the deny globs are compiled. cwd is Neovim's
// working directory, bufferPath the .chat file ("" when unnamed).
func NewSandbox(cfg SandboxConfig, cwd, bufferPath string) (*Sandbox, error) {
	if cfg.Backend == "" {
		cfg.Backend = "auto"
	}
	switch cfg.Backend {
	case "auto", "bwrap", "none":
	default:
		return nil, fmt.Errorf("unknown sandbox backend %q (use \"auto\", \"bwrap\" or \"none\")", cfg.Backend)
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
	if cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			cwd = wd
		}
	}
	cwd = filepath.Clean(cwd)
	home, _ := os.UserHomeDir()
	s := &Sandbox{cfg: cfg, base: cwd, home: home}
	bufDir := ""
	if bufferPath != "" {
		bufDir = filepath.Dir(ResolvePath(bufferPath, cwd))
		if r, err := filepath.EvalSymlinks(bufDir); err == nil {
			bufDir = r
		}
		s.base = bufDir
	}
	var roots []string
	for _, w := range cfg.Writable {
		p, ok, err := expandRoot(w, cwd, bufDir, home)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		c, err := canonical(p)
		if err != nil {
			continue // an unresolvable root can hold nothing writable
		}
		roots = append(roots, c)
	}
	s.roots = dedupRoots(roots)
	for _, g := range cfg.DenyRead {
		r, err := compileDeny(g, home)
		if err != nil {
			return nil, err
		}
		s.deny = append(s.deny, r)
	}
	return s, nil
}

// Config returns the configuration the sandbox was built from, defaults
// filled in.
func (s *Sandbox) Config() SandboxConfig { return s.cfg }

// Enabled reports whether the policy is enforced at all.
func (s *Sandbox) Enabled() bool { return s.cfg.Enabled }

// Roots returns the canonical writable roots.
func (s *Sandbox) Roots() []string { return append([]string(nil), s.roots...) }

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
		for _, r := range s.deny {
			if ok, _ := doublestar.Match(r.pat, f); ok {
				return r.glob
			}
		}
	}
	return ""
}

// deniedEntry is the walkers' fast form of deniedBy for one directory entry.
func (s *Sandbox) deniedEntry(abs, name string, isDir bool) bool {
	if !s.cfg.Enabled || len(s.deny) == 0 {
		return false
	}
	fname := ""
	for i := range s.deny {
		r := &s.deny[i]
		if fname == "" {
			fname = foldPath(name)
		}
		switch r.kind {
		case denyDirName:
			if isDir && fname == r.lit {
				return true
			}
		case denyBase:
			if matchGlob(r.baseKind, r.baseLit, r.lit, fname) {
				return true
			}
		default:
			if ok, _ := doublestar.Match(r.pat, foldPath(abs)); ok {
				return true
			}
		}
	}
	return false
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
	if strings.HasPrefix(p, "~/") && home != "" {
		p = filepath.ToSlash(home) + p[1:]
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**") {
		p = "**/" + p
	}
	p = foldPath(p)
	if !doublestar.ValidatePattern(p) {
		return denyRule{}, fmt.Errorf("invalid sandbox.deny_read pattern %q", g)
	}
	r := denyRule{glob: g, pat: p, kind: denyPath}
	if mid, ok := strings.CutPrefix(p, "**/"); ok {
		if name, ok := strings.CutSuffix(mid, "/**"); ok && !strings.ContainsAny(name, "/*?[{\\") {
			r.kind, r.lit = denyDirName, name
		} else if !strings.Contains(mid, "/") {
			r.kind, r.lit = denyBase, mid
			r.baseKind, r.baseLit = classifyGlob(mid)
		}
	}
	return r, nil
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
