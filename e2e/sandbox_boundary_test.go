package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The sandbox boundaries of issue 24 (classes 1, 2, 3, 5, 6) and issue 26
// #6, through the cycle in a real Neovim with the default configuration.

// Class 3: another conversation's auto-approved bash grepped
// journal.db-wal and printed a tool result of this one. Conversation A
// runs a command (journaled, its output truncated and saved); conversation
// B's bash searches flemma's and Neovim's state for it, and B's read opens
// A's full output: nothing of A comes out. (The state lies under the
// temporary folder here, a writable root: the hard case.)
func TestSandboxHidesState(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		state := stateDir(t, s)
		mustOpen(t, s, "a/a.chat", bashCall(t, "a1", `for i in $(seq 3000); do echo "MARKER-$((6*7))-A $i"; done`))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "a1")
		m := regexp.MustCompile(`Full output: (\S+?)\]`).FindStringSubmatch(body)
		if m == nil || !strings.HasPrefix(m[1], state+"/outputs/") {
			t.Fatalf("A's full output is not in the state folder %s:\n...%s", state, body[max(0, len(body)-300):])
		}
		var nvimState string
		s.Lua(&nvimState, `local ok, d = pcall(vim.fn.stdpath, "state"); return ok and d or vim.fn.stdpath("data")`)
		cmd := fmt.Sprintf(`grep -ra "MARKER-4" %q %q 2>&1 | head -5; ls -la %q 2>&1; cat %q/journal.db-wal %q 2>&1 | grep -ac "MARKER-4"; true`,
			state, nvimState, state, state, m[1])
		mustOpen(t, s, "b/b.chat", bashCall(t, "b1", cmd))
		press(t, s, "<C-]>")
		body, _ = waitResult(t, s, "b1")
		if strings.Contains(body, "MARKER-42-A") || strings.Contains(body, "journal.db") {
			t.Errorf("conversation B's bash saw A's state:\n%s", body)
		}
		in, _ := json.Marshal(map[string]any{"path": m[1], "offset": nil, "limit": nil, "label": "x"})
		mustOpen(t, s, "b/r.chat", toolChat("read", "r1", string(in)))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "r1")
		if !isErr || strings.Contains(body, "MARKER-42-A") || !strings.Contains(body, "never read or written by tools") {
			t.Errorf("conversation B read A's full output (error %v):\n%s", isErr, body)
		}
	})
}

// Issue 26 #6: the notice counts the whole output, and the file it names
// outlives the host (it used to be in a folder removed when the host
// ended), readable only by the user.
func TestFullOutputOutlivesHost(t *testing.T) {
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "out/o.chat", bashCall(t, "o1", "seq 1 5000"))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "o1")
		m := regexp.MustCompile(`\[Showing lines 3001-5000 of 5000\. Full output: (\S+?)\]`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no exact notice:\n...%s", body[max(0, len(body)-300):])
		}
		old := hostPID(t, s)
		press(t, s, ":Flemma host:restart<CR>")
		if _, err := s.Wait(15*time.Second, func(string) bool { return hostPID(t, s) != old }); err != nil {
			t.Fatalf("the host did not restart")
		}
		fi, err := os.Stat(m[1])
		if err != nil {
			t.Fatalf("the full output is gone after the host restarted: %v", err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("full output mode %v, want 0600", fi.Mode().Perm())
		}
		if di, _ := os.Stat(filepath.Dir(m[1])); di.Mode().Perm() != 0o700 {
			t.Errorf("output folder mode %v, want 0700", di.Mode().Perm())
		}
		if b, _ := os.ReadFile(m[1]); strings.Count(string(b), "\n") != 5000 {
			t.Errorf("the full output has %d lines", strings.Count(string(b), "\n"))
		}
	})
}

// Class 2: an ssh ControlMaster socket renamed after bind into ~/.cache
// (which no scan enters and /proc/net/unix does not name) was reached by a
// sandboxed command. No unix socket can be created there now.
func TestSandboxNoUnixSocket(t *testing.T) {
	needBwrap(t)
	home := fakeHome(t)
	bind := filepath.Join(home, "b.sock")
	cm := filepath.Join(home, ".cache", "ssh", "cm-user@host")
	os.MkdirAll(filepath.Dir(cm), 0o700)
	ln, err := net.Listen("unix", bind)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	defer ln.Close()
	if err := os.Rename(bind, cm); err != nil {
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
	if c, err := net.Dial("unix", cm); err != nil {
		t.Fatalf("control: the socket does not answer: %v", err)
	} else {
		c.Close()
	}
	eachNvimEnv(t, "", []string{"HOME=" + home}, func(t *testing.T, s *nvimtest.Session) {
		cmd := fmt.Sprintf(`python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('%s'); print('REACHED')" 2>&1 | tail -1; true`, cm)
		mustOpen(t, s, "sock/s.chat", bashCall(t, "s1", cmd))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "s1")
		if strings.Contains(body, "REACHED") || !strings.Contains(body, "Error") {
			t.Errorf("the sandboxed command reached the renamed socket:\n%s", body)
		}
	})
}

// :Flemma sandbox:status says what holds: the socket filter, the
// allow-list environment, the limits.
func TestSandboxStatusBoundaries(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		buf := mustOpen(t, s, "st/s.chat", "@You:\nhi\n")
		out := hostText(t, s, "flemma.sandbox_status", buf)
		for _, want := range []string{"sockets: ", "environment: only ", "limits of each command: processes 1024, memory ", "file size 4 GiB, open files 8192, cpu 600 s per process"} {
			if !strings.Contains(out, want) {
				t.Errorf("sandbox:status lacks %q:\n%s", want, out)
			}
		}
	})
}

// Class 1 through the cycle: an auto-approved bash writes .git/commondir
// (pointing git at a config with core.fsmonitor), creates a .npmrc and a
// .cargo/config.toml: none of it is left in the project, and the result
// says so; a write of .npmrc asks.
func TestProtectedByRuleThroughTheCycle(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "rule")
		for name, content := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n"} {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755)
		cmd := `mkdir -p evil && printf '[core]\n\tfsmonitor = touch pwned\n' > evil/config; echo ../evil > .git/commondir; ` +
			`echo 'node-options=--require ./x.js' > .npmrc; mkdir -p .cargo && echo '[build]' > .cargo/config.toml; echo done`
		mustOpen(t, s, "rule/b.chat", bashCall(t, "b1", cmd))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "b1")
		for _, p := range []string{".git/commondir", ".npmrc", ".cargo/config.toml"} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s is in the project after an auto-approved bash:\n%s", p, body)
			}
		}
		if !strings.Contains(body, "Protected paths:") {
			t.Errorf("the result does not say what was put right:\n%s", body)
		}
		in, _ := json.Marshal(map[string]any{"path": ".npmrc", "content": "node-options=--require ./x.js\n", "label": "x"})
		chat := "@You:\ngo\n\n@Assistant:\nOk.\n\n**Tool Use:** `write` (`w1`)\n\n```json\n" + string(in) + "\n```\n"
		buf := mustOpen(t, s, "rule/w.chat", chat)
		press(t, s, "<C-]>")
		waitStatus(t, s, "w1", "pending")
		if out := hostText(t, s, "flemma.tool_list", buf); !strings.Contains(out, "urn:flemma:approval:protected") {
			t.Errorf("tool:list does not say why w1 asks:\n%s", out)
		}
	})
}
