package nvimtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/neovim/go-client/nvim"
	"golang.org/x/sys/unix"
)

// TUI is Neovim running in its terminal UI under a pseudo-terminal, as a
// user runs it: keys go in through the terminal and what Neovim draws comes
// out of it. Its config is an init.lua in $XDG_CONFIG_HOME/nvim that puts
// the checkout on 'runtimepath' and calls setup() (what a user writes), so
// Neovim's own defaults (syntax, filetype plugins) are on. Nv is an RPC
// connection on its --listen socket, for setting a scene up between
// measurements; keys that are measured go through the terminal only.
type TUI struct {
	Nv   *nvim.Nvim
	Nvim string
	Dir  string

	pty  *os.File
	cmd  *exec.Cmd
	done chan struct{} // closed when the reader sees the terminal close

	mu     sync.Mutex
	out    []byte     // everything Neovim wrote to the terminal
	chunks []outChunk // where each read ended, and when
	wake   chan struct{}
}

type outChunk struct {
	end int // offset in out after this read
	at  time.Time
}

// TUIOptions configure a TUI.
type TUIOptions struct {
	Nvim       string
	Dir        string
	Setup      string // Lua table literal passed to require("flemma").setup
	Env        []string
	Cols, Rows int // terminal size; 120x40 when zero
}

// openPTY opens a pseudo-terminal pair: the master (ours) and the path of
// its slave (the child's terminal).
func openPTY(cols, rows int) (*os.File, string, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("ptsname: %w", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("set window size: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), fmt.Sprintf("/dev/pts/%d", n), nil
}

// StartTUI launches Neovim in a terminal of its own and connects to it.
func StartTUI(o TUIOptions) (*TUI, error) {
	if o.Cols == 0 {
		o.Cols, o.Rows = 120, 40
	}
	setup := o.Setup
	if setup == "" {
		setup = "{}"
	}
	cfgDir := filepath.Join(o.Dir, "config", "nvim")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return nil, err
	}
	init := fmt.Sprintf("vim.opt.runtimepath:prepend(%q)\nrequire(\"flemma\").setup(%s)\n", RepoRoot(), setup)
	if err := os.WriteFile(filepath.Join(cfgDir, "init.lua"), []byte(init), 0o644); err != nil {
		return nil, err
	}
	master, slave, err := openPTY(o.Cols, o.Rows)
	if err != nil {
		return nil, err
	}
	tty, err := os.OpenFile(slave, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("open %s: %w", slave, err)
	}
	defer tty.Close()
	sock := filepath.Join(o.Dir, "nvim.sock")
	// -n: no swap file (its writes on 'updatetime' would be noise in a
	// measurement); -i NONE: no shada.
	cmd := exec.Command(o.Nvim, "--listen", sock, "-n", "-i", "NONE")
	cmd.Dir = o.Dir
	cmd.Env = append(childEnv(o.Dir), "TERM=xterm-256color", "COLORTERM=")
	cmd.Env = append(cmd.Env, o.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, fmt.Errorf("start %s: %w", o.Nvim, err)
	}
	t := &TUI{Nvim: o.Nvim, Dir: o.Dir, pty: master, cmd: cmd, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go t.read()
	// The socket appears once Neovim's server runs.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Close()
			return nil, fmt.Errorf("%s did not open %s; terminal:\n%s", o.Nvim, sock, t.Screen())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The socket file exists from bind(), before listen(): retry.
	var v *nvim.Nvim
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err = nvim.Dial(sock, nvim.DialContext(ctx), nvim.DialServe(true), nvim.DialLogf(func(string, ...any) {}))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Close()
			return nil, fmt.Errorf("connect to %s: %w", sock, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Nv = v
	// Start-up is done when the UI has drawn and messages are not pending.
	var mode map[string]any
	for {
		if err := v.Call("nvim_get_mode", &mode); err == nil && mode["blocking"] == false {
			break
		}
		if time.Now().After(deadline) {
			t.Close()
			return nil, fmt.Errorf("%s is blocked at start-up: %v; terminal:\n%s", o.Nvim, mode, t.Screen())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return t, nil
}

// childEnv is the environment of a Neovim under test: the caller's without
// VIMRUNTIME/VIM and provider credentials, with every XDG folder under dir.
func childEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VIMRUNTIME=") && !strings.HasPrefix(kv, "VIM=") && !strings.HasPrefix(kv, "TERM=") &&
			!strings.HasPrefix(kv, "NVIM") && !strings.HasPrefix(kv, "TMUX") &&
			!strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "VERTEX_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"NVIM_LOG_FILE="+filepath.Join(dir, "nvim.log"),
	)
}

func (t *TUI) read() {
	defer close(t.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := t.pty.Read(buf)
		if n > 0 {
			now := time.Now()
			t.mu.Lock()
			t.out = append(t.out, buf[:n]...)
			t.chunks = append(t.chunks, outChunk{end: len(t.out), at: now})
			t.mu.Unlock()
			select {
			case t.wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// Close quits Neovim (and with it the host) and closes the terminal. It
// never waits long: a connection or a reader still blocked after Neovim is
// gone is left behind.
func (t *TUI) Close() {
	if t.cmd.Process != nil {
		_ = t.cmd.Process.Kill()
		_ = t.cmd.Wait()
	}
	if t.Nv != nil {
		done := make(chan struct{})
		go func() {
			_ = t.Nv.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
	t.pty.Close()
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
	}
}

// Screen is the last 4 KB Neovim wrote, for error messages.
func (t *TUI) Screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.out
	if len(s) > 4096 {
		s = s[len(s)-4096:]
	}
	return fmt.Sprintf("%q", s)
}

// mark is where the output is now.
func (t *TUI) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.out)
}

// lastAt is when the last output arrived.
func (t *TUI) lastAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.chunks) == 0 {
		return time.Time{}
	}
	return t.chunks[len(t.chunks)-1].at
}

// waitOutput blocks until new output arrives or the deadline passes.
func (t *TUI) waitOutput(until time.Time) {
	d := time.Until(until)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.wake:
	case <-timer.C:
	case <-t.done:
	}
}

// Quiet waits until Neovim has written nothing for gap, at most max.
// It reports whether the terminal did go quiet.
func (t *TUI) Quiet(gap, max time.Duration) bool {
	end := time.Now().Add(max)
	for {
		last := t.lastAt()
		if time.Since(last) >= gap {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		t.waitOutput(last.Add(gap))
	}
}

// Settle waits until Neovim has done what it was asked and drawn it: the
// terminal quiet for gap, then an RPC round trip (answered only between two
// main-loop iterations, so after the redraw of what came before) with no
// output during it and for gap after. At most max; it reports whether the
// terminal settled.
func (t *TUI) Settle(gap, max time.Duration) bool {
	end := time.Now().Add(max)
	for time.Now().Before(end) {
		if !t.Quiet(gap, time.Until(end)) {
			return false
		}
		from := t.mark()
		var x int
		if err := t.Nv.Eval("0", &x); err != nil {
			return false
		}
		if !t.Quiet(gap, time.Until(end)) {
			return false
		}
		if t.mark() == from {
			return true
		}
	}
	return false
}

// ErrNotShown is returned by Type when the screen did not show what was
// expected in time.
var ErrNotShown = errors.New("not shown on the terminal")

// Type writes keys to the terminal as a user's keyboard would and measures
// how long until the screen shows them: the time from the write to the last
// byte of the output that contains want, where that output ends at the
// first pause of settle (what follows the pause is another redraw).
func (t *TUI) Type(keys, want string, settle, timeout time.Duration) (time.Duration, error) {
	from := t.mark()
	t0 := time.Now()
	if _, err := t.pty.Write([]byte(keys)); err != nil {
		return 0, err
	}
	deadline := t0.Add(timeout)
	w := []byte(want)
	found := -1 // index of the chunk that completed want
	for found < 0 {
		t.mu.Lock()
		if i := bytes.Index(t.out[from:], w); i >= 0 {
			end := from + i + len(w)
			for k := len(t.chunks) - 1; k >= 0 && t.chunks[k].end >= end; k-- {
				found = k
			}
		}
		t.mu.Unlock()
		if found >= 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%q after %q: %w; terminal since:\n%s\nbefore:\n%s", want, keys, ErrNotShown, t.since(from), t.Screen())
		}
		t.waitOutput(deadline)
	}
	// The rest of that redraw: every chunk until a pause of settle.
	for {
		t.mu.Lock()
		last := found
		for last+1 < len(t.chunks) && t.chunks[last+1].at.Sub(t.chunks[last].at) < settle {
			last++
		}
		lastAt := t.chunks[last].at
		more := last+1 < len(t.chunks)
		t.mu.Unlock()
		if more || time.Since(lastAt) >= settle {
			return lastAt.Sub(t0), nil
		}
		t.waitOutput(lastAt.Add(settle))
	}
}

// Press writes keys to the terminal without measuring anything.
func (t *TUI) Press(keys string) error {
	_, err := t.pty.Write([]byte(keys))
	return err
}

// WaitFor waits until the terminal output after from (a Mark) contains want.
func (t *TUI) WaitFor(from int, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		t.mu.Lock()
		ok := bytes.Contains(t.out[from:], []byte(want))
		t.mu.Unlock()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%q: %w; terminal since:\n%s", want, ErrNotShown, t.since(from))
		}
		t.waitOutput(deadline)
	}
}

// Mark is where the terminal output is now (for WaitFor).
func (t *TUI) Mark() int { return t.mark() }

func (t *TUI) since(from int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.out[from:]
	if len(s) > 2048 {
		s = s[len(s)-2048:]
	}
	return fmt.Sprintf("%q", s)
}

// Lua runs a chunk over RPC and decodes its result into result (may be nil).
func (t *TUI) Lua(result any, code string, args ...any) error {
	return t.Nv.ExecLua(code, result, args...)
}
