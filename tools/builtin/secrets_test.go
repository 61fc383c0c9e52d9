//go:build linux

package builtin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// secretHome builds a home directory holding the usual secrets, with a
// project inside it, and makes it $HOME. It returns home and the project.
func secretHome(t *testing.T) (string, string) {
	t.Helper()
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	proj := filepath.Join(home, "src", "proj")
	files := map[string]string{
		".aws/credentials":                    "SECRET-aws",
		".config/gh/hosts.yml":                "SECRET-gh",
		".docker/config.json":                 "SECRET-docker",
		".kube/config":                        "SECRET-kube",
		".netrc":                              "SECRET-netrc",
		".git-credentials":                    "SECRET-gitcred",
		".config/gcloud/credentials.db":       "SECRET-gcloud",
		".azure/accessTokens.json":            "SECRET-azure",
		".npmrc":                              "SECRET-npmrc",
		".pypirc":                             "SECRET-pypirc",
		".password-store/bank.gpg":            "SECRET-pass",
		".local/share/keyrings/login.key":     "SECRET-keyring",
		"keys/id_ed25519":                     "SECRET-ed25519",
		"keys/id_ecdsa":                       "SECRET-ecdsa",
		"certs/client.p12":                    "SECRET-p12",
		"certs/client.pfx":                    "SECRET-pfx",
		"src/proj/.env":                       "SECRET-env",
		"src/proj/.env.local":                 "SECRET-envlocal",
		"src/proj/deep/a/b/c/.env.production": "SECRET-envprod",
		"src/proj/tls/server.pem":             "SECRET-pem",
		"src/other/.env":                      "SECRET-other",
		"src/proj/.env.example":               "PUBLIC-example",
		"src/proj/README.md":                  "PUBLIC-readme",
	}
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink inside the project to a secret elsewhere.
	os.Symlink(filepath.Join(home, ".netrc"), filepath.Join(proj, "netrc-link"))
	return home, proj
}

// TestDefaultDenyRead: the broadened defaults refuse the usual secrets
// and keep example files readable.
func TestDefaultDenyRead(t *testing.T) {
	home, proj := secretHome(t)
	sb, err := sandbox.New(sandbox.DefaultConfig(), proj, "")
	if err != nil {
		t.Fatal(err)
	}
	denied := []string{
		"~/.aws/credentials", "~/.config/gh/hosts.yml", "~/.docker/config.json", "~/.kube/config", "~/.netrc",
		"~/.git-credentials", "~/.config/gcloud/credentials.db", "~/.azure/accessTokens.json", "~/.npmrc", "~/.pypirc",
		"~/.password-store/bank.gpg", "~/.local/share/keyrings/login.key", "~/keys/id_ed25519", "~/keys/id_ecdsa",
		"~/certs/client.p12", "~/certs/client.pfx", ".env", ".env.local", "deep/a/b/c/.env.production", "tls/server.pem",
		"netrc-link", "~/.ssh/id_rsa", "~/.gnupg/x", "secret.key", ".ENV", ".envrc", "~/.bash_history",
	}
	for _, p := range denied {
		if _, err := sb.CheckRead(p); err == nil {
			t.Errorf("CheckRead(%q) allowed", p)
		}
	}
	for _, p := range []string{".env.example", ".env.sample", ".env.template", "README.md", "src/env.go", ".environment/x"} {
		if _, err := sb.CheckRead(p); err != nil {
			t.Errorf("CheckRead(%q) = %v, want allowed", p, err)
		}
	}
	// Exceptions exempt base-name rules only: never a folder rule.
	if _, err := sb.CheckRead("~/.ssh/.env.example"); err == nil {
		t.Errorf("an exception opened ~/.ssh")
	}
	_ = home
}

// TestDenyReadExceptionsSyntax: `!glob` entries are base-name globs.
func TestDenyReadExceptionsSyntax(t *testing.T) {
	for _, bad := range []string{"!/etc/x", "!**/a/b", "!"} {
		if _, err := sandbox.New(sandbox.Config{Enabled: true, DenyRead: []string{"**/.env.*", bad}}, t.TempDir(), ""); err == nil {
			t.Errorf("exception %q accepted", bad)
		}
	}
}

// TestBwrapMasksDenyRead is issue 11 #8: under bubblewrap a command could
// read everything deny_read names except ~/.ssh and ~/.gnupg.
func TestBwrapMasksDenyRead(t *testing.T) {
	requireBwrap(t)
	_, proj := secretHome(t)
	f := newFixture(t)
	f.dir = proj
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	res := f.run("bash", map[string]any{"command": "cat ~/.aws/credentials ~/.config/gh/hosts.yml ~/.docker/config.json ~/.kube/config " +
		"~/.netrc ~/.git-credentials ~/.config/gcloud/credentials.db ~/.azure/accessTokens.json ~/.npmrc ~/.pypirc ~/.password-store/bank.gpg " +
		"~/.local/share/keyrings/login.key ~/keys/id_ed25519 ~/keys/id_ecdsa ~/certs/client.p12 ~/certs/client.pfx .env .env.local " +
		"deep/a/b/c/.env.production tls/server.pem ~/src/other/.env netrc-link; echo; cat .env.example README.md"})
	if strings.Contains(res.Content, "SECRET") {
		t.Errorf("a secret was readable under bubblewrap:\n%s", res.Content)
	}
	for _, pub := range []string{"PUBLIC-example", "PUBLIC-readme"} {
		if !strings.Contains(res.Content, pub) {
			t.Errorf("%s not readable:\n%s", pub, res.Content)
		}
	}
	// The project stays usable: files next to a masked one are writable.
	want(t, "write next to .env", f.run("bash", map[string]any{"command": "echo x > new.txt && cat new.txt"}), true, "x")
	if st := f.env.Sandbox.Status(); !strings.Contains(st, "scanned") {
		t.Errorf("Status() does not say what was scanned:\n%s", st)
	}
}

// TestEnvAllowList is issue 11 #8 and issue 24 #5: a command gets an
// allow-list environment. Every credential the deny list of issue 11
// caught, every one it missed (issue 24: DOCKER_AUTH_CONFIG, CI_JOB_JWT,
// KUBE_CONFIG_DATA, GIT_CONFIG_PARAMETERS, GIT_CONFIG_VALUE_0,
// SLACK_HOOK_URL, AUTHORIZATION, a repository URL with a token as user
// name) and anything nobody listed stays out; an allowed name whose value
// is shaped like a credential stays out too; the variables tools need
// pass.
func TestEnvAllowList(t *testing.T) {
	removed := []string{
		"DATABASE_URL=postgres://u:p@db/x", "SSH_AUTH_SOCK=/tmp/agent", "MY_SECRET=x", "CLIENT_SECRET_VALUE=x", "GITHUB_TOKEN=x",
		"TOKEN=x", "DB_PASSWORD=x", "PGPASSWORD=x", "MYSQL_PWD=x", "HTPASSWD=x", "GOOGLE_APPLICATION_CREDENTIALS=/k.json",
		"AWS_CREDENTIALS=x", "OPENAI_API_KEY=x", "STRIPE_APIKEY=x", "SENDGRID_KEY=x", "GH_PAT=x", "GITLAB_PAT=x",
		"NPM_CONFIG__AUTH=x", "npm_config__authToken=x", "NPM_TOKEN=x", "SENTRY_DSN=https://k@sentry.io/1", "REDIS_URL=redis://:pw@h:6379",
		"MONGODB_URI=mongodb+srv://u:p@c/x", "ANTHROPIC_BASE_URL=x", "AWS_REGION=x", "HF_TOKEN=x", "VAULT_TOKEN=x",
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/x", "BW_SESSION=x", "PRIVATE_KEY_PATH=x", "GPG_PASSPHRASE=x",
		"KRB5CCNAME=FILE:/tmp/krb5cc_1000", "SMTP_PASS=x", "APP_AUTH=x", "SOME_CONNECTION_STRING=x",
		"UPSTREAM=https://user:hunter2@example.com/repo.git",
		// Issue 24 #5: what the deny list missed.
		`DOCKER_AUTH_CONFIG={"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`,
		"CI_JOB_JWT=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
		"CI_JOB_JWT_V2=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
		"KUBE_CONFIG_DATA=YXBpVmVyc2lvbjogdjEKY2x1c3RlcnM6Ci0gY2x1c3Rlcjo=",
		"GIT_CONFIG_PARAMETERS='http.extraheader'='AUTHORIZATION: basic eDp5'", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=AUTHORIZATION: bearer abcdef0123456789",
		"SLACK_HOOK_URL=https://hooks.slack.com/services/T000/B000/XXXX", "AUTHORIZATION=Bearer abcdef0123456789abcdef",
		"REPO=https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r.git",
		// Nobody listed these; they are not needed.
		"PWD=/p", "OLDPWD=/o", "KEYTIMEOUT=1", "SSH_ASKPASS=/bin/a", "GIT_ASKPASS=/bin/a", "XDG_SESSION_TYPE=tty",
		"DESKTOP_SESSION=x", "KUBECONFIG_DIR=/k", "SOMETHING_NEW=value",
		// Allowed names with a credential's shape.
		"HTTPS_PROXY=http://user:secret@proxy:3128", "GOPROXY=https://glpat-abcdefghijklmnopqrst@goproxy.example.com",
		"PAGER=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "LANG=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZ25h",
		"EDITOR=c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMw==", "CC=sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
	}
	kept := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "GOPATH=/go", "GOROOT=/usr/lib/go",
		"GOFLAGS=-mod=mod", "CARGO_HOME=/c", "RUSTUP_HOME=/r", "VIRTUAL_ENV=/v", "JAVA_HOME=/j", "EDITOR=nvim", "VISUAL=nvim",
		"SHELL=/bin/bash", "USER=u", "LOGNAME=u", "TMPDIR=/tmp", "PAGER=less", "NODE_ENV=test",
		"PYTHONPATH=/p", "CC=gcc", "LD_LIBRARY_PATH=/l", "XDG_CONFIG_HOME=/x",
		"HTTP_PROXY=http://proxy:3128", "GOPROXY=https://proxy.golang.org,direct", "MANPATH=/m", "SSL_CERT_FILE=/etc/ssl/c.pem",
		"PATH=/nix/store/0123456789abcdefghijklmnopqrstuv-go-1.22/bin:/usr/bin", "TERM=xterm-256color", "CI=true",
		"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=a@example.com",
	}
	env := (&tools.Env{Environ: append(append([]string{}, removed...), kept...)}).CommandEnv()
	got := map[string]bool{}
	for _, kv := range env {
		got[kv] = true
	}
	for _, kv := range removed {
		if got[kv] {
			t.Errorf("%s reached the command", kv)
		}
	}
	for _, kv := range kept {
		if !got[kv] {
			t.Errorf("%s was removed", kv)
		}
	}
	// tools.bash.env is the user's, by name and value: it passes as set.
	extra := (&tools.Env{Environ: removed, ExtraEnv: map[string]string{"NPM_TOKEN": "npm_abcdefghijklmnopqrstuvwxyz0123456789", "NODE_OPTIONS": "--max-old-space-size=4096"}}).CommandEnv()
	if j := strings.Join(extra, "\n"); !strings.Contains(j, "NPM_TOKEN=npm_") || !strings.Contains(j, "NODE_OPTIONS=--max") {
		t.Errorf("tools.bash.env did not pass: %v", extra)
	}
	// And the removed values never reach the buffer.
	out := tools.Finish("cloning https://user:hunter2@example.com/repo.git and https://hooks.slack.com/x", &tools.Env{Environ: removed})
	if strings.Contains(out, "hunter2") || strings.Contains(out, "hooks.slack.com") {
		t.Errorf("Finish leaked: %s", out)
	}
	// End to end: with the host's environment full of them, a command
	// (under bubblewrap when it works) sees none.
	f := newFixture(t)
	if _, ok, _ := sandbox.DetectBackend(); ok {
		f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}})
	}
	f.env.Environ = append(append([]string{}, removed...), "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"))
	res := f.run("bash", map[string]any{"command": "env"})
	for _, kv := range removed {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PATH" || name == "HOME" || name == "PWD" { // bash sets PWD itself
			continue
		}
		if strings.Contains("\n"+res.Content, "\n"+name+"=") {
			t.Errorf("%s reached the command:\n%s", name, res.Content)
		}
	}
}

// TestDefaultNetworkOff is issue 11 #8: network is opt-in.
func TestDefaultNetworkOff(t *testing.T) {
	if sandbox.DefaultConfig().Network {
		t.Errorf("DefaultConfig().Network = true")
	}
}

// TestHardenProcess is issue 11 #8: without bubblewrap a command could read
// the host's environment (API keys) from /proc/$PPID/environ. The test
// binary re-runs itself as the "host", optionally hardened, which starts a
// child that tries to read its parent's environ. Run as root, both run as
// nobody: root's capabilities read any process's environ anyway.
func TestHardenProcess(t *testing.T) {
	switch os.Getenv("FLEMMA_HARDEN_ROLE") {
	case "host":
		if os.Getenv("FLEMMA_HARDEN") == "1" {
			if err := sandbox.HardenProcess(); err != nil {
				os.Stdout.WriteString("harden failed: " + err.Error())
				os.Exit(3)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHardenProcess$")
		cmd.Env = []string{"FLEMMA_HARDEN_ROLE=child", "FLEMMA_PARENT=" + strconv.Itoa(os.Getpid())}
		out, _ := cmd.CombinedOutput()
		os.Stdout.Write(out)
		os.Exit(0)
	case "child":
		b, err := os.ReadFile("/proc/" + os.Getenv("FLEMMA_PARENT") + "/environ")
		switch {
		case err == nil:
			os.Stdout.WriteString("READ " + strings.ReplaceAll(string(b), "\x00", " "))
		case errors.Is(err, os.ErrPermission):
			os.Stdout.WriteString("DENIED")
		default:
			os.Stdout.WriteString("ERROR " + err.Error())
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// A copy of the test binary that nobody can run.
		dir, err := os.MkdirTemp("", "flemma-harden-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		data, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "tools.test")
		if err := os.WriteFile(exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	run := func(harden bool) string {
		cmd := exec.Command(exe, "-test.run=^TestHardenProcess$")
		cmd.Dir = "/"
		cmd.Env = []string{"FLEMMA_HARDEN_ROLE=host", "FLEMMA_TEST_SECRET=sk-parent-secret"}
		if harden {
			cmd.Env = append(cmd.Env, "FLEMMA_HARDEN=1")
		}
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("host: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(false); !strings.Contains(out, "sk-parent-secret") {
		t.Fatalf("control: an unhardened parent's environ was not readable: %s", out)
	}
	if out := run(true); strings.Contains(out, "sk-parent-secret") || !strings.Contains(out, "DENIED") {
		t.Errorf("a hardened parent's environ was readable: %s", out)
	}
}
