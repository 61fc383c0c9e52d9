//go:build linux

package builtin

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// requireSeccomp skips unless bubblewrap loads the socket filter here (on
// CI, on Linux amd64 or arm64, it must).
func requireSeccomp(t *testing.T) {
	t.Helper()
	requireBwrap(t)
	if !sandbox.SocketsFiltered() {
		if os.Getenv("CI") != "" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
			t.Fatalf("CI is set but the seccomp filter does not load: %s", sandbox.SocketFilterWhyNot())
		}
		t.Skipf("no seccomp filter here: %s", sandbox.SocketFilterWhyNot())
	}
}

// listenMoved listens on a unix socket bound at one path and then moved
// (rename) to another: /proc/net/unix keeps naming the path it was bound
// at, so nothing that discovers sockets finds it (issue 24 #2: an OpenSSH
// ControlMaster socket in ~/.cache was reached that way).
func listenMoved(t *testing.T, bindAt, moveTo string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(bindAt), filepath.Dir(moveTo)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("unix", bindAt)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close(); os.Remove(moveTo) })
	if err := os.Rename(bindAt, moveTo); err != nil {
		t.Fatal(err)
	}
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

// TestSeccompNoUnixSocket is issue 24 #2 as attacks: sockets of the user
// that no scan discovers — one renamed after bind into a folder the home
// scan skips (~/.cache), one hard-linked into the project under another
// name, one in a folder deeper than any scan goes, an abstract one with
// the network shared — are not reachable from a sandboxed command, because
// no AF_UNIX socket can be created there at all; socketpair, which
// programs use between their own processes, still works. Unsandboxed, each
// is connectable (the control).
func TestSeccompNoUnixSocket(t *testing.T) {
	requireSeccomp(t)
	home := scratchOutsideTmp(t)
	t.Setenv("HOME", home)
	f := newFixture(t)
	cache := filepath.Join(home, ".cache", "ssh", "cm-user@host:22")
	listenMoved(t, filepath.Join(home, "bind", "s"), cache)
	deep := filepath.Join(home, strings.Repeat("d/", 34), "a.s") // below the scans' depth, within sun_path
	listenMoved(t, filepath.Join(home, "bind2", "s"), deep)
	linked := filepath.Join(f.dir, "notes.txt.lnk")
	listenMoved(t, filepath.Join(home, "bind3", "s"), filepath.Join(home, "bind3", "moved"))
	if err := os.Link(filepath.Join(home, "bind3", "moved"), linked); err != nil {
		t.Fatal(err)
	}
	abstract := fmt.Sprintf("@flemma-seccomp-%d", os.Getpid())
	listenUnix(t, abstract)
	addrs := []string{cache, deep, linked, abstract}
	cmd := helperCommand(t, f.dir, "connect", "FLEMMA_TEST_ADDRS="+strings.Join(addrs, ","))

	res := f.run("bash", map[string]any{"command": cmd})
	for _, a := range addrs {
		if !strings.Contains(res.Content, "CONNECTED "+a) {
			t.Fatalf("unsandboxed control: %s not connectable:\n%s", a, res.Content)
		}
	}
	for _, network := range []bool{false, true} {
		f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Network: network})
		res := f.run("bash", map[string]any{"command": cmd + "; python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(\"PAIR\", b.recv(1))'"})
		for _, a := range addrs {
			if strings.Contains(res.Content, "CONNECTED "+a) {
				t.Errorf("network=%v: the sandboxed command connected to %s", network, a)
			}
			if !strings.Contains(res.Content, "refused "+a) {
				t.Errorf("network=%v: no attempt on %s:\n%s", network, a, res.Content)
			}
		}
		if !strings.Contains(res.Content, "PAIR b'x'") {
			t.Errorf("network=%v: socketpair does not work under the filter:\n%s", network, res.Content)
		}
		if !strings.Contains(f.env.Sandbox.Status(), "no unix socket can be created") {
			t.Errorf("status does not say sockets are filtered:\n%s", f.env.Sandbox.Status())
		}
	}

	// The argv that Lua tools get (ctx.sandbox.wrap_command) carries the
	// filter too, through the host binary's trampoline.
	argv, err := f.env.Sandbox.WrapCommand([]string{"/bin/sh", "-c", cmd})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	for _, a := range addrs {
		if strings.Contains(string(out), "CONNECTED "+a) || !strings.Contains(string(out), "refused "+a) {
			t.Errorf("wrap_command: %s reachable or not tried:\n%s", a, out)
		}
	}
}

// TestSeccompFallbackSays: where the filter cannot load, the status says
// sockets are not enforced by it, and the masks of the scans are used
// again (a socket in the project is still hidden).
func TestSeccompFallbackSays(t *testing.T) {
	requireBwrap(t)
	testhook.NoSeccomp = "test: no seccomp"
	defer func() { testhook.NoSeccomp = "" }()
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	st := f.env.Sandbox.Status()
	if !strings.Contains(st, "NOT enforced by seccomp (test: no seccomp)") {
		t.Errorf("status:\n%s", st)
	}
	sock := filepath.Join(f.dir, "sub", "app.sock")
	listenUnix(t, sock)
	res := f.run("bash", map[string]any{"command": helperCommand(t, f.dir, "connect", "FLEMMA_TEST_ADDRS="+sock)})
	if strings.Contains(res.Content, "CONNECTED") || !strings.Contains(res.Content, "refused") {
		t.Errorf("fallback: the socket in the project was reachable:\n%s", res.Content)
	}
}

// TestSocketNeverHidesTheProject is issue 26 #5: a unix socket in a
// project folder under /tmp (with the default writable roots, /tmp among
// them) made the mask of its folder hide the project, and bash ran in
// $HOME without it. With or without the socket filter, bash runs in the
// buffer's folder and sees the project; a folder it cannot enter makes it
// fail, saying so, never run elsewhere.
func TestSocketNeverHidesTheProject(t *testing.T) {
	requireBwrap(t)
	for _, filter := range []bool{true, false} {
		t.Run(fmt.Sprintf("seccomp=%v", filter), func(t *testing.T) {
			if !filter {
				testhook.NoSeccomp = "test: no seccomp"
				defer func() { testhook.NoSeccomp = "" }()
			} else {
				requireSeccomp(t)
			}
			f := newFixture(t)
			if !strings.HasPrefix(f.dir, "/tmp/") {
				t.Skipf("the temporary folder is %s, not /tmp", f.dir)
			}
			f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap"}) // the default roots: cwd, the buffer's folder, /tmp
			f.write("notes.txt", "project notes")
			listenUnix(t, filepath.Join(f.dir, "sub", "dev.sock"))
			res := f.run("bash", map[string]any{"command": "pwd; cat notes.txt"})
			want(t, "bash in the project", res, true, f.dir, "project notes")

			// A working folder the command cannot see (in /tmp, which is
			// private to it when not a writable root) is an error that
			// names it, not a run in $HOME.
			f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
			secret := f.outside
			f.env.Cwd = secret
			defer func() { f.env.Cwd = "" }()
			res = f.run("bash", map[string]any{"command": "pwd"})
			want(t, "hidden working folder", res, false, "chdir", secret)
		})
	}
}

// TestUnixSocketsOptIn: sandbox.unix_sockets = true lets a command run a
// unix-socket server of its own (a test suite's), and the user's sockets
// that the scans find stay hidden; the status says what holds then.
func TestUnixSocketsOptIn(t *testing.T) {
	requireSeccomp(t)
	f := newFixture(t)
	mine := filepath.Join(f.dir, "sub", "user.sock")
	listenUnix(t, mine)
	cmd := "python3 -c 'import socket, os; s = socket.socket(socket.AF_UNIX); s.bind(\"/tmp/own.sock\"); s.listen(); c = socket.socket(socket.AF_UNIX); c.connect(\"/tmp/own.sock\"); print(\"OWN SERVER OK\")'; " +
		helperCommand(t, f.dir, "connect", "FLEMMA_TEST_ADDRS="+mine)
	for _, allow := range []bool{false, true} {
		f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, UnixSockets: allow})
		res := f.run("bash", map[string]any{"command": cmd})
		if got := strings.Contains(res.Content, "OWN SERVER OK"); got != allow {
			t.Errorf("unix_sockets=%v: own server ran = %v:\n%s", allow, got, res.Content)
		}
		if strings.Contains(res.Content, "CONNECTED") {
			t.Errorf("unix_sockets=%v: the user's socket was reached:\n%s", allow, res.Content)
		}
		if st := f.env.Sandbox.Status(); allow != strings.Contains(st, "sandbox.unix_sockets = true") {
			t.Errorf("unix_sockets=%v: status:\n%s", allow, st)
		}
	}
}
