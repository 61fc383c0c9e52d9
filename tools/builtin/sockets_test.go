//go:build linux

package builtin

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestHelperProcess is not a test: sandboxed commands run the test binary
// with FLEMMA_TEST_HELPER set to act as a small client.
//
//   - connect: dial each unix socket of FLEMMA_TEST_ADDRS (comma-separated;
//     "@name" is abstract) and print CONNECTED or refused for each.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("FLEMMA_TEST_HELPER") {
	case "":
		return
	case "connect":
		for _, a := range strings.Split(os.Getenv("FLEMMA_TEST_ADDRS"), ",") {
			c, err := net.Dial("unix", a)
			if err == nil {
				c.Close()
				fmt.Printf("CONNECTED %s\n", a)
			} else {
				fmt.Printf("refused %s: %v\n", a, err)
			}
		}
	}
	os.Exit(0)
}

// helperCommand is the shell command that runs the test binary as helper.
func helperCommand(t *testing.T, dir, mode string, env ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary lives in the machine's temporary folder, which a
	// sandboxed command does not see (it gets a private one): run a copy
	// from dir, a writable root.
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(cp, data, 0o700); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("FLEMMA_TEST_HELPER=%s %s %s -test.run='^TestHelperProcess$'", mode, strings.Join(env, " "), cp)
}

// listenUnix listens on a unix socket and accepts (and closes) connections
// until the test ends.
func listenUnix(t *testing.T, addr string) {
	t.Helper()
	if !strings.HasPrefix(addr, "@") {
		if err := os.MkdirAll(filepath.Dir(addr), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// scratchOutsideTmp is a directory that is neither under /tmp nor under a
// writable root, for a stand-in of $XDG_RUNTIME_DIR that only the
// XDG_RUNTIME_DIR rule can hide. Falls back to a temporary directory.
func scratchOutsideTmp(t *testing.T) string {
	t.Helper()
	for _, base := range []string{"/var/tmp", "/dev/shm"} {
		if d, err := os.MkdirTemp(base, "flemma-xdg-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return sandbox.CanonicalOr(d)
		}
	}
	return sandbox.CanonicalOr(t.TempDir())
}

// TestBwrapHidesSockets is issue 11 #3: a unix socket of the user — in a
// writable root, in /tmp, in $XDG_RUNTIME_DIR, or abstract — must not be
// connectable from a sandboxed command (Neovim's $NVIM socket would run
// commands outside the sandbox).
func TestBwrapHidesSockets(t *testing.T) {
	requireBwrap(t)
	xdg := scratchOutsideTmp(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	inRoot := filepath.Join(f.dir, "sub", "app.sock")
	inTmp := filepath.Join(f.outside, "nvim.sock")
	inXDG := filepath.Join(xdg, "nvim.1234.0")
	abstract := fmt.Sprintf("@flemma-test-%d", os.Getpid())
	addrs := []string{inRoot, inTmp, inXDG, abstract}
	for _, a := range addrs {
		listenUnix(t, a)
	}
	cmd := helperCommand(t, f.dir, "connect", "FLEMMA_TEST_ADDRS="+strings.Join(addrs, ","))

	// Unsandboxed, every socket answers: the test would prove nothing
	// otherwise.
	plain := newFixture(t)
	res := plain.run("bash", map[string]any{"command": cmd})
	for _, a := range addrs {
		if !strings.Contains(res.Content, "CONNECTED "+a) {
			t.Fatalf("unsandboxed control: %s not connectable:\n%s", a, res.Content)
		}
	}

	res = f.run("bash", map[string]any{"command": cmd})
	for _, a := range addrs {
		if strings.Contains(res.Content, "CONNECTED "+a) {
			t.Errorf("sandboxed command connected to %s", a)
		}
		if !strings.Contains(res.Content, "refused "+a) {
			t.Errorf("no attempt on %s:\n%s", a, res.Content)
		}
	}
	// The root stays writable around the hidden socket.
	want(t, "write next to the socket", f.run("bash", map[string]any{"command": "echo ok > sub/file && cat sub/file"}), true, "ok")
}

// TestCommandEnvDropsSockets: the variables that name a socket of the user
// never reach a command, with or without bubblewrap, whatever env_deny says.
func TestCommandEnvDropsSockets(t *testing.T) {
	socketVars := []string{
		"NVIM=/run/user/1000/nvim.1.0", "NVIM_LISTEN_ADDRESS=/tmp/nvimX/0", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"SSH_AGENT_PID=42", "GPG_AGENT_INFO=/run/user/1000/gnupg/S.gpg-agent:0:1",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket",
		"DISPLAY=:0", "WAYLAND_DISPLAY=wayland-0", "XAUTHORITY=/home/u/.Xauthority", "DOCKER_HOST=unix:///run/docker.sock",
		"CONTAINER_HOST=unix:///run/podman/podman.sock", "TMUX=/tmp/tmux-1000/default,1,0", "TMUX_PANE=%1", "STY=1.pts-0.host",
		"KITTY_LISTEN_ON=unix:@mykitty", "WEZTERM_UNIX_SOCKET=/run/user/1000/wezterm/sock", "ALACRITTY_SOCKET=/run/user/1000/Alacritty.sock",
		"XDG_RUNTIME_DIR=/run/user/1000", "SWAYSOCK=/run/user/1000/sway-ipc.sock", "VSCODE_IPC_HOOK_CLI=/run/user/1000/vscode-ipc.sock",
		"ZELLIJ=0", "SESSION_MANAGER=local/host:@/tmp/.ICE-unix/1", "PULSE_SERVER=unix:/run/user/1000/pulse/native",
	}
	base := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}, socketVars...)
	for _, deny := range [][]string{nil, {}} {
		sb, err := sandbox.New(sandbox.Config{Enabled: true, Backend: "none", EnvDeny: deny}, t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		env := (&tools.Env{Sandbox: sb, Environ: base}).CommandEnv()
		got := strings.Join(env, "\n")
		for _, kv := range socketVars {
			name, _, _ := strings.Cut(kv, "=")
			if strings.Contains("\n"+got, "\n"+name+"=") {
				t.Errorf("env_deny=%v: %s reached the command", deny, name)
			}
		}
		if !strings.Contains(got, "LANG=C.UTF-8") {
			t.Errorf("env_deny=%v: an ordinary variable was dropped", deny)
		}
	}
	// The user may still set one explicitly (tools.bash.env).
	env := (&tools.Env{Environ: base, ExtraEnv: map[string]string{"DISPLAY": ":1"}}).CommandEnv()
	if !strings.Contains(strings.Join(env, "\n"), "DISPLAY=:1") {
		t.Errorf("tools.bash.env DISPLAY dropped")
	}

	// End to end, without and with bubblewrap.
	run := func(f *fixture) {
		t.Helper()
		f.env.Environ = append(f.env.Environ, socketVars...)
		res := f.run("bash", map[string]any{"command": "env"})
		want(t, "env", res, true, "PATH=")
		for _, kv := range socketVars {
			name, _, _ := strings.Cut(kv, "=")
			if strings.Contains("\n"+res.Content, "\n"+name+"=") {
				t.Errorf("backend %s: %s reached the command", f.env.Sandbox.Backend(), name)
			}
		}
	}
	run(newFixture(t))
	requireBwrap(t)
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	run(f)
}

// TestBwrapSocketFolderVanishes: another program's socket folder in /tmp
// (Neovim 0.7's /tmp/nvimXXXXXX/0) goes away between the moment the
// sandbox is planned and the moment bubblewrap mounts it. The command must
// still start: the machine's /tmp is replaced by a private one, so no mask
// points into it (a mask on a path that vanished failed the whole command
// with "Can't mkdir …: Read-only file system").
func TestBwrapSocketFolderVanishes(t *testing.T) {
	requireBwrap(t)
	t.Run("home outside /tmp", func(t *testing.T) { vanish(t) })
	t.Run("home inside /tmp", func(t *testing.T) {
		home := sandbox.CanonicalOr(t.TempDir())
		t.Setenv("HOME", home)
		if err := os.WriteFile(filepath.Join(home, "visible.txt"), []byte("here"), 0o600); err != nil {
			t.Fatal(err)
		}
		vanish(t)
	})
}

func vanish(t *testing.T) {
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Network: true})
	dir, err := os.MkdirTemp("/tmp", "nvimvanish")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "0")
	listenUnix(t, sock)
	argv, err := f.env.Sandbox.WrapCommand([]string{"/bin/sh", "-c", "echo started"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "started" {
		t.Fatalf("the command did not start after a socket folder vanished: %v\n%s\nargv: %q", err, out, argv)
	}
	// The home directory stays readable, wherever it is.
	if home, _ := os.UserHomeDir(); home != "" {
		if _, err := os.Stat(filepath.Join(home, "visible.txt")); err == nil {
			argv, _ := f.env.Sandbox.WrapCommand([]string{"/bin/cat", filepath.Join(home, "visible.txt")})
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil || string(out) != "here" {
				t.Errorf("the home directory inside /tmp is not readable: %v %s", err, out)
			}
		}
	}
}

// TestBwrapPrivateTmpKeepsMasks: with the home directory inside /tmp (so
// it is bound back on top of the private /tmp), what was hidden inside it
// — $XDG_RUNTIME_DIR here — stays hidden: the home is bound back before the
// other early masks, not after.
func TestBwrapPrivateTmpKeepsMasks(t *testing.T) {
	requireBwrap(t)
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	xdg := filepath.Join(home, "run")
	if err := os.MkdirAll(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	for path, text := range map[string]string{filepath.Join(home, "visible.txt"): "here", filepath.Join(xdg, "secret"): "SECRET"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Network: true})
	res := f.run("bash", map[string]any{"command": "cat ~/visible.txt; cat $XDG_RUNTIME_DIR/secret 2>/dev/null || cat " + filepath.Join(xdg, "secret") + " 2>&1; true"})
	if !strings.Contains(res.Content, "here") {
		t.Errorf("the home directory is not readable:\n%s", res.Content)
	}
	if strings.Contains(res.Content, "SECRET") {
		t.Errorf("$XDG_RUNTIME_DIR inside the home became visible again:\n%s", res.Content)
	}
}

// TestBwrapPrivateTmpKeepsTheWorkingFolder: a chat file's folder in /tmp
// that is not a writable root stays readable for bash (it runs there), only
// read-only, although the rest of /tmp is a private empty folder.
func TestBwrapPrivateTmpKeepsTheWorkingFolder(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	other := sandbox.CanonicalOr(t.TempDir())
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{other}, Network: true})
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := f.run("bash", map[string]any{"command": "pwd; cat notes.txt; touch new.txt 2>&1; true"})
	if !strings.Contains(res.Content, f.dir) || !strings.Contains(res.Content, "notes") {
		t.Errorf("the working folder is not there for bash:\n%s", res.Content)
	}
	if exists(filepath.Join(f.dir, "new.txt")) {
		t.Errorf("the working folder, not a writable root, was writable")
	}
}
