// Command flemma-demo shows what flemma does, offline and without an API key:
// it opens testdata/demo.chat in a real headless Neovim with the plugin and
// the built host, with the replay provider answering from
// testdata/replay/demo.sse, presses the keys a user would, and prints the
// buffer after each step: the model calls ls, read and bash; ls and read run
// under the default policy, bash waits until the user approves it by
// editing its fence; the results go back and the model answers.
//
//	go run ./cmd/flemma-demo -nvim /usr/bin/nvim -host bin/flemma-host
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

func main() {
	nvimBin := flag.String("nvim", "", "Neovim binary (default: the newest one provisioned)")
	flag.Parse()
	if err := run(*nvimBin); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(nvimBin string) error {
	if nvimBin == "" {
		found, missing := nvimtest.Neovims()
		if len(found) == 0 {
			return fmt.Errorf("no Neovim found (%s): run scripts/provision-nvim.sh", strings.Join(missing, ", "))
		}
		nvimBin = found[len(found)-1]
	}
	// The plugin finds the host where `make build` puts it, as it does for
	// a user: no host.cmd in the setup below.
	hostBin := filepath.Join(nvimtest.RepoRoot(), "bin", "flemma-host")
	if _, err := os.Stat(hostBin); err != nil {
		return fmt.Errorf("host binary %s: %v (run make build)", hostBin, err)
	}
	chat, err := os.ReadFile(filepath.Join(nvimtest.RepoRoot(), "testdata", "demo.chat"))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "flemma-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// A small project for the model to look at (logs stay outside it).
	project := filepath.Join(dir, "hello-demo")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return err
	}
	for name, content := range map[string]string{
		"README.md": "# hello-demo\n\nA tiny project that flemma's demo explores.\n",
		"main.go":   "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(project, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	script := filepath.Join(nvimtest.RepoRoot(), "testdata", "replay", "demo.sse")
	// The replay provider answers from a recorded script through the same
	// streaming code as Anthropic; bash is kept for the user to approve.
	setup := fmt.Sprintf(`{ provider = "replay", providers = { replay = { file = %q } }, tools = { auto_approve_sandboxed = false } }`, script)
	s, err := nvimtest.Start(nvimtest.Options{Nvim: nvimBin, Dir: dir, Setup: setup})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Printf("flemma demo — Neovim %s, host %s, provider: replay (%s)\n", nvimtest.Version(nvimBin), hostBin, filepath.Base(script))
	if _, err := s.Open("hello-demo/demo.chat", string(chat)); err != nil {
		return err
	}
	show := func(title string) error {
		text, err := s.Text()
		if err != nil {
			return err
		}
		fmt.Printf("\n=== %s ===\n%s\n", title, text)
		return nil
	}
	if err := show("demo.chat as opened"); err != nil {
		return err
	}
	wait := func(what string, cond func(string) bool) error {
		if _, err := s.Wait(20*time.Second, cond); err != nil {
			text, _ := s.Text()
			return fmt.Errorf("%s: %v\nbuffer:\n%s\nmessages: %s\nhost log:\n%s", what, err, text, s.Messages(), s.HostLog())
		}
		return nil
	}

	// 1. Send. The response streams in with three tool calls; autopilot
	// categorizes them: ls and read are approved by $default, bash waits.
	if err := s.Press("<C-]>"); err != nil {
		return err
	}
	if err := wait("the model's tool calls", func(t string) bool { return strings.Contains(t, "status=pending") }); err != nil {
		return err
	}
	if err := show("after <C-]>: the response streamed in; ls and read are approved, bash waits for you"); err != nil {
		return err
	}

	// 2. The user approves bash by editing its fence, and presses again:
	// the three tools run, and autopilot sends their results on.
	if err := s.Press(":%s/status=pending/status=approved/<CR>"); err != nil {
		return err
	}
	if err := s.Press("<C-]>"); err != nil {
		return err
	}
	if err := wait("the final answer", func(t string) bool {
		return strings.Contains(t, "What would you like to do next?") && strings.HasSuffix(t, "@You:\n")
	}); err != nil {
		return err
	}
	if err := show("after approving bash and <C-]>: the tools ran, their results went back, the model answered"); err != nil {
		return err
	}
	fmt.Printf("\n(messages)\n%s\n", strings.TrimSpace(s.Messages()))
	return nil
}
