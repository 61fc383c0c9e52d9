package builtin

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// TestCommandNoLeakedDescriptors: a command gets stdin, stdout and stderr
// and nothing else — not the descriptors the host inherited, not the
// roots' descriptors that bubblewrap binds (one from outside the sandbox
// would let the command escape it) — under bubblewrap or not, supervised
// or not.
func TestCommandNoLeakedDescriptors(t *testing.T) {
	// A descriptor the host inherited without close-on-exec (as from a
	// careless parent): syscall.Dup makes one.
	fd, err := syscall.Dup(1)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// As if inherited: the host marks what it inherited once, before its
	// first command.
	testhook.ForgetInherited()
	for _, supervised := range []bool{true, false} {
		t.Run(fmt.Sprintf("supervised=%v", supervised), func(t *testing.T) {
			backends(t, func(t *testing.T, f *fixture) {
				if f.env.Sandbox.Backend() == "bwrap" {
					// Two roots: two descriptors for bubblewrap.
					other := sandbox.CanonicalOr(t.TempDir())
					f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath, other}, Network: true})
					if sandbox.BindsByFD() {
						argv, files, err := f.env.Sandbox.WrapCommandFiles([]string{"true"})
						for _, fl := range files {
							fl.Close()
						}
						if err != nil || strings.Count(strings.Join(argv, " "), "--bind-fd") != 2 {
							t.Errorf("roots not bound by descriptor: %v %v", argv, err)
						}
					}
				}
				if !supervised {
					testhook.NoSupervisor = true
					defer func() { testhook.NoSupervisor = false }()
				}
				// ls opens /proc/self/fd itself: 3 is that listing.
				res := f.run("bash", map[string]any{"command": "exec ls -1 /proc/self/fd"})
				want(t, "fds", res, true)
				if res.Content != "0\n1\n2\n3" {
					t.Errorf("descriptors of the command:\n%s\nwant 0, 1, 2 (and 3, ls's own)", res.Content)
				}
			})
		})
	}
}
