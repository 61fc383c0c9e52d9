// Package nvimtest drives a real headless Neovim with the flemma plugin and
// a built host, for the end-to-end tests and for `make demo`: start it with
// isolated XDG directories, open .chat files, press keys, read buffers.
package nvimtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/neovim/go-client/nvim"
)

// RepoRoot is the root of the flemma checkout (the plugin directory).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BuildHost compiles cmd/flemma-host to bin/flemma-host in the checkout,
// where `make build` puts it and where the plugin finds it without any
// configuration, and returns its path. The binary is replaced atomically,
// so a Neovim running the previous one is not disturbed.
func BuildHost() (string, error) {
	bin := filepath.Join(RepoRoot(), "bin", "flemma-host")
	// Built already by the caller of this process (make bench-check builds
	// it once for its several runs of the e2e binary): not linked again.
	if os.Getenv("FLEMMA_HOST_BUILT") == "1" {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/flemma-host")
	cmd.Dir = RepoRoot()
	// Static, as `make build` and the release build it: the host the
	// tests and benchmarks run is the one users run (no libc, no cgo
	// threads: ~1.3 MB less resident, docs/benchmarks.md).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build flemma-host: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}

// BuildBenchHost compiles cmd/flemma-host with the build tag flemmabench
// into dir and returns its path: a host with the methods only benchmarks
// use (cycle/benchrun.go: flemma.bench_run), which the host users run does
// not have. Point the plugin at it with host = { cmd = path }.
func BuildBenchHost(dir string) (string, error) {
	bin := filepath.Join(dir, "flemma-host-bench")
	cmd := exec.Command("go", "build", "-tags", "flemmabench", "-o", bin, "./cmd/flemma-host")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags flemmabench flemma-host: %v\n%s", err, out)
	}
	return bin, nil
}

// Neovims returns the Neovim binaries to test against: $FLEMMA_NVIM
// (colon-separated) if set, else Debian's /usr/bin/nvim (0.7.2) and the
// 0.10.4 copy that scripts/provision-nvim.sh unpacks under .cache/. missing
// names the expected ones that are absent.
func Neovims() (found, missing []string) {
	var want []string
	if env := os.Getenv("FLEMMA_NVIM"); env != "" {
		want = strings.Split(env, ":")
	} else {
		want = []string{"/usr/bin/nvim", filepath.Join(RepoRoot(), ".cache", "nvim-0.10.4", "bin", "nvim")}
	}
	for _, p := range want {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			found = append(found, p)
		} else {
			missing = append(missing, p)
		}
	}
	return found, missing
}

// Version returns "0.7.2"-style version of a Neovim binary.
func Version(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimPrefix(strings.TrimSpace(first), "NVIM v")
}

// Options configure a Session. The plugin is set up exactly with Setup, as
// a user's config would do it: it finds the host at bin/flemma-host (see
// BuildHost) and logs where it logs by default.
type Options struct {
	Nvim  string // Neovim binary
	Dir   string // scratch directory: XDG dirs, logs and files go here
	Setup string // Lua table literal passed to require("flemma").setup
	Env   []string
}

// Session is one running Neovim with the plugin loaded.
type Session struct {
	Nv      *nvim.Nvim
	Nvim    string // the Neovim binary
	Dir     string
	LogFile string
	cancel  context.CancelFunc
}

// Start launches Neovim, puts the repo on 'runtimepath', sources the plugin
// and calls setup().
func Start(o Options) (*Session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	// An inherited VIMRUNTIME (e.g. from a :terminal) would make 0.10.4 load
	// another version's runtime.
	var env []string
	for _, kv := range os.Environ() {
		// Provider credentials are left out too: tests and the demo must
		// never reach a real provider; Options.Env adds what a test needs.
		if !strings.HasPrefix(kv, "VIMRUNTIME=") && !strings.HasPrefix(kv, "VIM=") &&
			!strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "VERTEX_") &&
			!strings.HasPrefix(kv, "GEMINI_") && !strings.HasPrefix(kv, "GOOGLE_API_KEY=") && !strings.HasPrefix(kv, "GITHUB_COPILOT") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"XDG_CONFIG_HOME="+filepath.Join(o.Dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(o.Dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(o.Dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(o.Dir, "cache"),
		"NVIM_LOG_FILE="+filepath.Join(o.Dir, "nvim.log"),
	)
	env = append(env, o.Env...)
	v, err := nvim.NewChildProcess(
		nvim.ChildProcessCommand(o.Nvim),
		nvim.ChildProcessArgs("-u", "NONE", "-i", "NONE", "-n", "--embed", "--headless"),
		nvim.ChildProcessEnv(env),
		nvim.ChildProcessDir(o.Dir),
		nvim.ChildProcessContext(ctx),
		nvim.ChildProcessServe(true),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", o.Nvim, err)
	}
	s := &Session{Nv: v, Nvim: o.Nvim, Dir: o.Dir, cancel: cancel}
	setup := o.Setup
	if setup == "" {
		setup = "{}"
	}
	lua := fmt.Sprintf(`
		vim.opt.runtimepath:prepend(%q)
		vim.o.swapfile = false
		vim.o.columns = 100
		vim.o.lines = 40
		vim.cmd("runtime! plugin/flemma.lua")
		require("flemma").setup(%s)
		return require("flemma.host").log_file(require("flemma").config())
	`, RepoRoot(), setup)
	if err := v.ExecLua(lua, &s.LogFile); err != nil {
		s.Close()
		return nil, fmt.Errorf("load plugin: %w", err)
	}
	return s, nil
}

// Close stops Neovim (and with it the host).
func (s *Session) Close() {
	if s.Nv != nil {
		_ = s.Nv.Close()
	}
	s.cancel()
}

// Lua runs a chunk and decodes its return value into result (may be nil).
func (s *Session) Lua(result any, code string, args ...any) error {
	return s.Nv.ExecLua(code, result, args...)
}

// Open writes content to name under Dir and edits it; returns the buffer.
func (s *Session) Open(name, content string) (int, error) {
	path := filepath.Join(s.Dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return 0, err
	}
	if err := s.Lua(nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, path); err != nil {
		return 0, fmt.Errorf("edit %s: %w", path, err)
	}
	var buf int
	err := s.Lua(&buf, "return vim.api.nvim_get_current_buf()")
	return buf, err
}

// Press feeds keys (with <Key> notation) as if typed and runs them to
// completion, mappings included, and then waits until the host has
// answered what they asked (the plugin's requests do not block Neovim;
// see lua/flemma/host.lua). A host that does not answer within 30 s is an
// error.
func (s *Session) Press(keys string) error {
	k, err := s.Nv.ReplaceTermcodes(keys, true, true, true)
	if err != nil {
		return err
	}
	if err := s.Nv.FeedKeys(k, "mx", false); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := s.Lua(&n, `return package.loaded["flemma.host"] and require("flemma.host")._pending() or 0`); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("press %s: the host did not answer within 30 s", keys)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// WaitIdle waits until nothing is left to change the current buffer: the
// host answered every request and has no work in progress for it (no step,
// response, running call, nor a step autopilot is about to take). Tests
// that check that something does not happen wait for this, not for time.
func (s *Session) WaitIdle() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Pending int  `msgpack:"pending"`
			Busy    bool `msgpack:"busy"`
		}
		err := s.Lua(&st, `
			local host = require("flemma.host")
			local pending = host._pending()
			local res = host.request(require("flemma.protocol").status, vim.api.nvim_get_current_buf())
			return { pending = pending, busy = res and res.busy or false }`)
		if err != nil {
			return err
		}
		if st.Pending == 0 && !st.Busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the buffer is still busy after 30 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Text returns the current buffer's text, lines joined by "\n".
func (s *Session) Text() (string, error) {
	var lines []string
	err := s.Lua(&lines, "return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
	return strings.Join(lines, "\n"), err
}

// Wait polls until cond holds for the buffer text or the timeout passes; it
// returns the last text seen.
func (s *Session) Wait(timeout time.Duration, cond func(text string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		text, err := s.Text()
		if err != nil {
			return text, err
		}
		if cond(text) {
			return text, nil
		}
		if time.Now().After(deadline) {
			return text, errors.New("timed out waiting for the buffer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Messages returns :messages (notifications land there headless), once
// what Neovim has queued on its main loop ran: a message too wide for the
// message area is echoed there (lua/flemma/notify.lua).
func (s *Session) Messages() string {
	var out string
	_ = s.Lua(&out, `vim.wait(0); return vim.api.nvim_exec("messages", true)`)
	return out
}

// HostLog returns the host's log file.
func (s *Session) HostLog() string {
	b, _ := os.ReadFile(s.LogFile)
	return string(b)
}
