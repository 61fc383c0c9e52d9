// Command flemma-demo shows what flemma does, offline: it opens
// testdata/demo.chat in a real headless Neovim with the plugin and the built
// host, presses the keys a user would, and prints the buffer after each step.
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
	hostBin := flag.String("host", filepath.Join(nvimtest.RepoRoot(), "bin", "flemma-host"), "flemma-host binary")
	flag.Parse()
	if err := run(*nvimBin, *hostBin); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(nvimBin, hostBin string) error {
	if nvimBin == "" {
		found, missing := nvimtest.Neovims()
		if len(found) == 0 {
			return fmt.Errorf("no Neovim found (%s): run scripts/provision-nvim.sh", strings.Join(missing, ", "))
		}
		nvimBin = found[len(found)-1]
	}
	hostBin, err := filepath.Abs(hostBin)
	if err != nil {
		return err
	}
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

	s, err := nvimtest.Start(nvimtest.Options{Nvim: nvimBin, Host: hostBin, Dir: dir})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Printf("flemma demo — Neovim %s, host %s\n", nvimtest.Version(nvimBin), hostBin)
	if _, err := s.Open("demo.chat", string(chat)); err != nil {
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

	if err := s.Press("<C-]>"); err != nil {
		return err
	}
	if _, err := s.Wait(10*time.Second, func(t string) bool { return strings.Contains(t, "status=pending") }); err != nil {
		return fmt.Errorf("no pending placeholder after <C-]>: %v\nmessages: %s\nhost log: %s", err, s.Messages(), s.HostLog())
	}
	if err := show("after <C-]>: the calculator call awaits approval (calculator is not in $default)"); err != nil {
		return err
	}

	if err := s.Press(":%s/status=pending/status=approved/<CR>"); err != nil {
		return err
	}
	if err := show("the user edits the fence: status=pending → status=approved"); err != nil {
		return err
	}

	if err := s.Press("<C-]>"); err != nil {
		return err
	}
	final, err := s.Wait(10*time.Second, func(t string) bool { return !strings.Contains(t, "flemma:tool") })
	if err != nil {
		return fmt.Errorf("the tool did not finish: %v\n%s", err, final)
	}
	if err := show("after <C-]>: the result replaced the placeholder"); err != nil {
		return err
	}
	fmt.Printf("\n(messages)\n%s\n", strings.TrimSpace(s.Messages()))
	return nil
}
