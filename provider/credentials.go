package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/internal/secrets"
)

// KeySource says where a provider's credential comes from. The value is
// never part of the configuration: it is read from the environment or
// printed by a command (an argv list, run without a shell).
type KeySource struct {
	// Env are environment variables, the first non-empty one wins.
	Env []string
	// Cmd is the argv of a command whose first output line is the
	// credential (pass, op, secret-tool, gcloud). Tried after Env.
	Cmd []string
	// CacheTTL is how long a command's credential is kept; 0 = 3600 s,
	// negative = run the command for every request.
	CacheTTL time.Duration
	// Timeout bounds one run of Cmd; 0 = 15 s.
	Timeout time.Duration
}

// None reports a source with nothing to read: the provider needs no
// credential (a local server) and no authentication header is sent.
func (s KeySource) None() bool { return len(s.Env) == 0 && len(s.Cmd) == 0 }

// Describe names the source for messages: "$OPENAI_API_KEY", "the command
// `pass` (api_key_cmd)". Never a value.
func (s KeySource) Describe() string {
	var parts []string
	if len(s.Env) > 0 {
		parts = append(parts, "$"+strings.Join(s.Env, " or $"))
	}
	if len(s.Cmd) > 0 {
		parts = append(parts, "the command `"+s.Cmd[0]+"` (api_key_cmd)")
	}
	if len(parts) == 0 {
		return "no credential (none configured)"
	}
	return strings.Join(parts, ", then ")
}

const (
	defaultKeyTTL     = 3600 * time.Second
	defaultKeyTimeout = 15 * time.Second
	maxKeyOutput      = 64 << 10
)

// gcloudToken is the command that prints a fresh Vertex AI access token.
var gcloudToken = []string{"gcloud", "auth", "print-access-token"}

// DefaultKeySource is the credential source of a built-in provider (its
// wire's Key).
func DefaultKeySource(name string) KeySource {
	w, ok := wireOf(name)
	if !ok || w.Name != name {
		return KeySource{}
	}
	k := w.Key
	k.Env, k.Cmd = slices.Clone(k.Env), slices.Clone(k.Cmd)
	return k
}

// Credential is a resolved credential and where it came from.
type Credential struct {
	Value  string
	Source string // "$NAME" or "the command `argv0`"
	fromEnv,
	fromCmd bool
}

// Keyring resolves credentials and caches the ones commands print. One
// keyring serves the whole host (DefaultKeyring); tests make their own.
type Keyring struct {
	// Now is the clock of the cache; nil = time.Now.
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cachedKey
	stale map[string]bool // environment values a server refused
}

type cachedKey struct {
	value   string
	expires time.Time
}

// DefaultKeyring is the host's keyring.
var DefaultKeyring = &Keyring{}

func (k *Keyring) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func cmdKey(argv []string) string { return strings.Join(argv, "\x00") }

// Get resolves the credential of src: the first non-empty environment
// variable (unless a server refused its value), else the command's output
// (from the cache while fresh). provider names the provider in errors.
func (k *Keyring) Get(ctx context.Context, provider string, src KeySource, getenv func(string) string) (Credential, error) {
	k.mu.Lock()
	for _, v := range src.Env {
		if s := strings.TrimSpace(getenv(v)); s != "" && !k.stale[v+"\x00"+s] {
			k.mu.Unlock()
			secrets.Default.Add(s)
			return Credential{Value: s, Source: "$" + v, fromEnv: true}, nil
		}
	}
	if len(src.Cmd) == 0 {
		k.mu.Unlock()
		if len(src.Env) == 0 {
			return Credential{}, nil
		}
		return Credential{}, &Error{Provider: provider, Message: "no credential: set " + strings.Join(src.Env, " or ") + " in the environment Neovim starts from"}
	}
	ck := cmdKey(src.Cmd)
	if c, ok := k.cache[ck]; ok && k.now().Before(c.expires) {
		k.mu.Unlock()
		return Credential{Value: c.value, Source: "the command `" + src.Cmd[0] + "`", fromCmd: true}, nil
	}
	k.mu.Unlock()
	value, err := runKeyCommand(ctx, src)
	secrets.Default.Add(value)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return Credential{}, context.Canceled
		}
		msg := err.Error()
		if len(src.Env) > 0 {
			msg = "no credential: set " + strings.Join(src.Env, " or ") + " in the environment Neovim starts from, or make the command work: " + msg
		}
		return Credential{}, &Error{Provider: provider, Message: msg}
	}
	ttl := src.CacheTTL
	if ttl == 0 {
		ttl = defaultKeyTTL
	}
	if ttl > 0 {
		k.mu.Lock()
		if k.cache == nil {
			k.cache = map[string]cachedKey{}
		}
		k.cache[ck] = cachedKey{value: value, expires: k.now().Add(ttl)}
		k.mu.Unlock()
	}
	return Credential{Value: value, Source: "the command `" + src.Cmd[0] + "`", fromCmd: true}, nil
}

// Held is the credential of src that needs no command run: the first
// non-empty environment variable, else a command's output still in the
// cache; "" when there is none. Model listings use it: they must never
// prompt (a pinentry on a completion key).
func (k *Keyring) Held(src KeySource, getenv func(string) string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, v := range src.Env {
		if s := strings.TrimSpace(getenv(v)); s != "" && !k.stale[v+"\x00"+s] {
			secrets.Default.Add(s)
			return s
		}
	}
	if len(src.Cmd) > 0 {
		if c, ok := k.cache[cmdKey(src.Cmd)]; ok && k.now().Before(c.expires) {
			return c.value
		}
	}
	return ""
}

// Refused is told that a server refused c (401): a command's cached value
// is dropped, an environment value is not used again while src has a
// command. It reports whether asking again may give another credential.
func (k *Keyring) Refused(src KeySource, c Credential, getenv func(string) string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case c.fromCmd:
		delete(k.cache, cmdKey(src.Cmd))
		return true
	case c.fromEnv && len(src.Cmd) > 0:
		if k.stale == nil {
			k.stale = map[string]bool{}
		}
		name := strings.TrimPrefix(c.Source, "$")
		k.stale[name+"\x00"+strings.TrimSpace(getenv(name))] = true
		return true
	}
	return false
}

// runKeyCommand runs src.Cmd and returns the first line of its output. Its
// error never contains the command's output: stderr may hold secrets.
func runKeyCommand(ctx context.Context, src KeySource) (string, error) {
	timeout := src.Timeout
	if timeout <= 0 {
		timeout = defaultKeyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := "`" + src.Cmd[0] + "`"
	cmd := exec.CommandContext(ctx, src.Cmd[0], src.Cmd[1:]...)
	var out limitedBuffer
	out.max = maxKeyOutput
	cmd.Stdout = &out
	cmd.Stderr = nil // discarded: it may contain the secret or a passphrase prompt
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("the credential command %s did not finish within %s (api_key_timeout)", name, timeout)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("the credential command %s was not found on $PATH (api_key_cmd)", name)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("the credential command %s failed (exit code %d); its output is not shown, run it in a shell to see why", name, ee.ExitCode())
		}
		return "", fmt.Errorf("the credential command %s could not run (api_key_cmd)", name)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("the credential command %s printed nothing on its first line", name)
	}
	return line, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// CredentialStatus says, without running any command or reading any
// value into a message, whether a provider's credential source is usable:
// an environment variable is set, or the command exists on $PATH, or none
// is needed. desc names the source.
func CredentialStatus(name string, cfg Config) (present bool, desc string) {
	if name == "replay" || cfg.Wire == "replay" {
		return true, "replay file (no credential needed)"
	}
	if name == "copilot" || cfg.Wire == "copilot" {
		// A GitHub sign-in, not a key.
		if _, from, err := cfg.Copilot.OAuthToken(); err == nil {
			return true, "the GitHub sign-in in " + from
		}
		return false, "not signed in to GitHub Copilot: run :Flemma login copilot"
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = osGetenv
	}
	src := cfg.keySource(name)
	if src.None() {
		return true, "none needed (no api_key_env or api_key_cmd configured)"
	}
	for _, v := range src.Env {
		if strings.TrimSpace(getenv(v)) != "" {
			return true, "$" + v
		}
	}
	if len(src.Cmd) > 0 {
		if _, err := exec.LookPath(src.Cmd[0]); err == nil {
			return true, "the command `" + src.Cmd[0] + "`"
		}
		return false, src.Describe() + "; `" + src.Cmd[0] + "` is not on $PATH"
	}
	return false, src.Describe()
}

// keySource is the configured source, else the provider's built-in one.
func (c Config) keySource(name string) KeySource {
	if c.Key != nil {
		return *c.Key
	}
	return DefaultKeySource(name)
}

// credHolder is the credential of one provider client: what it resolved
// last, so a 401 can name its source and ask for another.
type credHolder struct {
	mu   sync.Mutex
	used Credential
}

// credential resolves the client's credential ("" when none is needed).
func (c Config) credential(ctx context.Context, name string) (string, error) {
	keys := c.Keys
	if keys == nil {
		keys = DefaultKeyring
	}
	cred, err := keys.Get(ctx, name, c.keySource(name), c.Getenv)
	if err != nil {
		return "", err
	}
	if c.cred != nil {
		c.cred.mu.Lock()
		c.cred.used = cred
		c.cred.mu.Unlock()
	}
	return cred.Value, nil
}

// setKey puts the credential in the wire's header (def, with prefix), or
// in the configured KeyHeader as it is. No credential, no header.
func (c Config) setKey(h http.Header, key, def, prefix string) {
	if key == "" {
		return
	}
	switch {
	case c.KeyHeader == "" || strings.EqualFold(c.KeyHeader, def):
	case strings.EqualFold(c.KeyHeader, "Authorization"):
		h.Set("Authorization", "Bearer "+key)
		return
	default:
		h.Set(c.KeyHeader, key)
		return
	}
	h.Set(def, prefix+key)
}
