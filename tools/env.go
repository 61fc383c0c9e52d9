package tools

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Env is the per-call configuration of the built-in tools. The host builds
// it from the current setup (which can change at runtime) and the buffer's
// options, and passes it in Call.Env; a nil Env, or any zero field, means the
// defaults of SPEC §12. Env is read-only once a call has started.
type Env struct {
	// Sandbox is the policy and backend for this buffer. Nil means
	// sandbox.New(sandbox.DefaultConfig(), call.Cwd, call.Buffer).
	Sandbox *sandbox.Sandbox
	// Truncate holds tools.truncate (2000 lines, 51200 bytes by default).
	Truncate Limits
	// Reads remembers what the model read, per conversation, for the
	// stale-file protection of write and edit. Nil means a process-wide
	// log.
	Reads *ReadLog
	// RequireRead makes edit refuse a file the model never read in this
	// conversation, and write refuse to replace one (seed 001's stricter
	// rule). Off: only a file that changed since it was read is refused.
	// Not a user option (the host leaves it off); for embedders.
	RequireRead bool
	// BackupDir is where write and edit keep the previous content of every
	// file they change, for Undo (see backup.go). The host passes
	// stdpath("state")/flemma/backups; "" means DefaultBackupDir().
	BackupDir string
	// BackupMaxBytes bounds the backups' total size (DefaultBackupMaxBytes,
	// 256 MiB; a single file over a quarter of it is not backed up, and
	// its change is refused). Negative turns backups off: changes are
	// made without a backup and cannot be undone.
	BackupMaxBytes int64
	// BackupMaxAge drops backups untouched for longer
	// (DefaultBackupMaxAge, 30 days).
	BackupMaxAge time.Duration
	// Shell is tools.bash.shell ("bash").
	Shell string
	// ExtraEnv is tools.bash.env: variables added to the (scrubbed)
	// environment of commands. They are set explicitly by the user, so they
	// are not scrubbed, but their values are still redacted from output when
	// their names match env_deny.
	ExtraEnv map[string]string
	// Environ is the base environment of commands; nil means os.Environ().
	Environ []string
	// DefaultTimeout is tools.default_timeout (30 s): bash's timeout when the
	// model gives none.
	DefaultTimeout time.Duration
	// MaxTimeout caps the timeout a model may ask bash for (zero:
	// DefaultMaxTimeout, 300 s). Not a user option; for embedders.
	MaxTimeout time.Duration
	// Exclude are the names grep and find never search (nil:
	// DefaultExclude). Not a user option; for embedders.
	Exclude []string
	// Cwd, when set, is the directory tools work in. Empty (the host's
	// case): the buffer's directory, else Neovim's cwd.
	Cwd string
	// OutputDir is where the full output of a truncated result is saved:
	// the host's private folder from NewOutputDir. Default: os.TempDir()
	// ($TMPDIR or /tmp).
	OutputDir string
	// Protect says the call was approved by a policy (a resolver, a
	// preset, the sandbox), not by the user: write and edit then refuse
	// protected paths (Sandbox.Protected) with words that tell the model to
	// ask the user, and bash under bubblewrap sees every existing protected
	// path inside the writable roots read-only. The host sets it at
	// approval time.
	Protect bool
	// Fetch is tools.fetch: the bounds of the fetch built-in.
	Fetch FetchLimits
	// AfterWrite, when set, is asked after write or edit changed a file
	// (path resolved): what it returns is added to the result. The host
	// sets it to the editor's diagnostics of the new text
	// (tools/editor.AfterEdit); it waits, bounded, for a language server.
	AfterWrite func(ctx context.Context, call Call, path string) string

	redactOnce sync.Once
	redactor   *strings.Replacer
}

// FetchLimits bound the fetch built-in (zero: its defaults).
type FetchLimits struct {
	MaxBytes     int           // bytes of the answer read (2 MiB)
	Timeout      time.Duration // the whole request (30 s)
	MaxRedirects int           // redirects followed, same host only (5)
	// AllowPrivate lets fetch reach loopback, private and link-local
	// addresses (a local documentation server); off by default.
	AllowPrivate bool
	// Resolver replaces DNS (tests); nil = the system's.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Limits are the truncation limits of tool output.
type Limits struct {
	MaxLines int // 2000
	MaxBytes int // 51200
}

// Defaults of SPEC §12 and reference §8.
const (
	DefaultMaxLines     = 2000
	DefaultMaxBytes     = 51200
	MaxLineBytes        = 500 // per-line cap of grep/find/ls output
	DefaultShell        = "bash"
	DefaultToolTimeout  = 30 * time.Second
	DefaultMaxTimeout   = 300 * time.Second
	minSecretLen        = 6
	redactedPlaceholder = "[redacted]"
)

// DefaultExclude are the names grep and find never descend into or report.
var DefaultExclude = []string{".git", "node_modules", "__pycache__", ".venv", "target", "dist", "build", "vendor"}

func (l Limits) withDefaults() Limits {
	if l.MaxLines <= 0 {
		l.MaxLines = DefaultMaxLines
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// defaultReads is the read log of calls without an Env: stale-file
// protection must work even when the host does not configure it.
var defaultReads = NewReadLog()

func (e *Env) Limits() Limits {
	if e == nil {
		return Limits{}.withDefaults()
	}
	return e.Truncate.withDefaults()
}

func (e *Env) ReadsOrDefault() *ReadLog {
	if e == nil || e.Reads == nil {
		return defaultReads
	}
	return e.Reads
}

func (e *Env) ShellOrDefault() string {
	if e == nil || e.Shell == "" {
		return DefaultShell
	}
	return e.Shell
}

func (e *Env) environ() []string {
	if e == nil || e.Environ == nil {
		return os.Environ()
	}
	return e.Environ
}

func (e *Env) ExcludeOrDefault() []string {
	if e == nil || e.Exclude == nil {
		return DefaultExclude
	}
	return e.Exclude
}

func (e *Env) Timeouts() (def, max time.Duration) {
	def, max = DefaultToolTimeout, DefaultMaxTimeout
	if e != nil && e.DefaultTimeout > 0 {
		def = e.DefaultTimeout
	}
	if e != nil && e.MaxTimeout > 0 {
		max = e.MaxTimeout
	}
	if def > max {
		def = max
	}
	return def, max
}

func (e *Env) OutputDirOrDefault() string {
	if e == nil || e.OutputDir == "" {
		return os.TempDir()
	}
	return e.OutputDir
}

// envDeny is the env_deny list in force (the sandbox's, else the
// default) plus the names of the base environment's variables whose value
// carries a credential in a URL (scheme://user:password@host), whatever
// their names.
func (e *Env) envDeny() []string {
	deny := sandbox.DefaultEnvDeny
	if e != nil && e.Sandbox != nil {
		deny = e.Sandbox.Config().EnvDeny
	}
	var extra []string
	for _, kv := range e.environ() {
		name, val, ok := strings.Cut(kv, "=")
		if ok && name != "" && credentialURL(val) && !strings.ContainsAny(name, "*?") {
			extra = append(extra, name)
		}
	}
	if extra == nil {
		return deny
	}
	return append(append([]string(nil), deny...), extra...)
}

// SandboxFor returns the SandboxFor of the call, building the default one when the
// host gave none. With Protect it is a copy that enforces protected paths.
func (e *Env) SandboxFor(call Call) (*sandbox.Sandbox, error) {
	var sb *sandbox.Sandbox
	if e != nil && e.Sandbox != nil {
		sb = e.Sandbox
	} else {
		var err error
		if sb, err = sandbox.New(sandbox.DefaultConfig(), call.Cwd, call.Buffer); err != nil {
			return nil, err
		}
	}
	if e != nil && e.Protect {
		sb = sb.WithProtect()
	}
	return sb, nil
}

// CommandEnv is the environment of a command, by allow-list (issue 24
// #5): of the base environment only the variables sandbox.DefaultEnvAllow
// names, without those env_deny matches, those naming a socket of the user
// (SocketEnv) and those whose value looks like a credential
// (sandbox.LooksLikeCredential); plus tools.bash.env (set by the user by
// name and value, so kept as it is).
func (e *Env) CommandEnv() []string {
	env := sandbox.AllowEnv(e.environ(), sandbox.DefaultEnvAllow, e.envDeny())
	// Under bubblewrap, Go's build cache is the sandbox's own (writable)
	// one: the user's, in the home folder, is read-only there and go test
	// fails on it.
	if e != nil && e.Sandbox != nil {
		if c := e.Sandbox.CacheDir(); c != "" {
			if _, set := e.ExtraEnv["GOCACHE"]; !set {
				env = sandbox.ScrubEnv(env, []string{"GOCACHE"})
				env = append(env, "GOCACHE="+filepath.Join(c, "go-build"))
			}
		}
	}
	if e != nil {
		for k, v := range e.ExtraEnv {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// credentialURL reports whether v holds a URL with a password in it
// (scheme://user:password@host, as in database connection strings).
func credentialURL(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		rest := v[i+3:]
		end := strings.IndexAny(rest, "/?# \t")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at > 0 {
			if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 && colon < at-1 {
				return true
			}
		}
		v = rest
	}
}

// secretEnv is every variable whose value must never reach the buffer.
func (e *Env) secretEnv() []string {
	env := e.environ()
	if e != nil && len(e.ExtraEnv) > 0 {
		env = append([]string(nil), env...)
		for k, v := range e.ExtraEnv {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// WorkDir is the directory a call works in: Env.Cwd when set, else the
// directory of the buffer's file (symlinks resolved), else Neovim's cwd,
// else the host's. Relative paths in tool input are resolved against it
// (reference §6.1: bash/grep/find/ls default to urn:flemma:buffer:path, and
// path.resolve joins onto the buffer's directory).
func (e *Env) WorkDir(call Call) string {
	if e != nil && e.Cwd != "" {
		return filepath.Clean(e.Cwd)
	}
	if call.Buffer != "" {
		dir := filepath.Dir(call.Buffer)
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && filepath.IsAbs(dir) {
			return dir
		}
	}
	if call.Cwd != "" {
		return filepath.Clean(call.Cwd)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}
