package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// backendProbe is the result of detecting bubblewrap, once per process.
type backendProbe struct {
	path    string // absolute path of bwrap
	ok      bool   // a trivial command ran under it
	netIso  bool   // --unshare-net works too
	version string
	why     string // why it is not usable, or a short description when it is
}

var (
	probeOnce sync.Once
	probe     backendProbe
)

// DetectBackend finds the command sandbox of this machine, once per process
// (the result is cached): "bwrap" when bubblewrap is installed and a trivial
// command actually runs under it with the namespaces the sandbox uses, else
// "none". why explains the outcome in words fit for :checkhealth.
func DetectBackend() (name string, ok bool, why string) {
	probeOnce.Do(func() { probe = detectBwrap("bwrap") })
	if probe.ok {
		return "bwrap", true, probe.why
	}
	return "none", false, probe.why
}

func detectBwrap(exe string) backendProbe {
	if runtime.GOOS != "linux" {
		return backendProbe{why: "bubblewrap needs Linux (user namespaces); there is no command sandbox for " + runtime.GOOS}
	}
	path, err := exec.LookPath(exe)
	if err != nil {
		return backendProbe{why: "bubblewrap (bwrap) not found on PATH; install it (e.g. apt install bubblewrap)"}
	}
	p := backendProbe{path: path}
	if out, err := exec.Command(path, "--version").Output(); err == nil {
		p.version = strings.TrimSpace(string(out))
	}
	run := func(net string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		args := append(bwrapBase(), net, "--die-with-parent", "--new-session", "true")
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return msg, false
		}
		return "", true
	}
	if _, ok := run("--unshare-net"); ok {
		p.ok, p.netIso = true, true
	} else if msg, ok := run("--share-net"); ok {
		p.ok = true
	} else {
		p.why = fmt.Sprintf("bubblewrap is installed (%s) but cannot create a sandbox here: %s", path, msg)
		return p
	}
	p.why = "bubblewrap works"
	if p.version != "" {
		p.why = p.version + " works"
	}
	if !p.netIso {
		p.why += " (without network isolation: network namespaces are unavailable)"
	}
	return p
}

// bwrapBase are the namespace flags of every sandboxed command, after the
// filesystem setup and before the network flag.
func bwrapBase() []string {
	return append([]string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}, bwrapUnshare...)
}

// bwrapUnshare are the namespaces every sandboxed command gets (reference
// §10.6; the network namespace follows sandbox.network).
var bwrapUnshare = []string{"--unshare-user", "--unshare-pid", "--unshare-uts", "--unshare-ipc"}

// Backend names the backend commands run under: "bwrap" or "none" (also
// when the sandbox is disabled).
func (s *Sandbox) Backend() string {
	if !s.cfg.Enabled || s.cfg.Backend == "none" {
		return "none"
	}
	if s.cfg.Backend == "bwrap" {
		return "bwrap"
	}
	name, _, _ := DetectBackend()
	return name
}

// Available reports whether commands really run confined: the sandbox is
// enabled and bubblewrap works. The sandbox approval resolver auto-approves
// only then.
func (s *Sandbox) Available() bool {
	if s.Backend() != "bwrap" {
		return false
	}
	_, ok, _ := DetectBackend()
	return ok
}

// WrapCommand returns argv wrapped for the sandbox: under bubblewrap with a
// read-only root, the writable roots bound read-write, the home directory's
// denied folders (~/.ssh, ~/.gnupg) hidden, new user/pid/uts/ipc (and, with
// network off, net) namespaces, --die-with-parent and --new-session. With
// the sandbox disabled, the none backend, or auto with no working backend,
// argv is returned unchanged. An explicit "bwrap" that does not work, or
// network off without network namespaces, is an error.
func (s *Sandbox) WrapCommand(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	if s.Backend() != "bwrap" {
		return argv, nil
	}
	DetectBackend()
	if !probe.ok {
		if s.cfg.Backend == "bwrap" {
			return nil, fmt.Errorf("sandbox.backend is \"bwrap\" but it is not usable: %s", probe.why)
		}
		return argv, nil
	}
	if !s.cfg.Network && !probe.netIso {
		return nil, fmt.Errorf("sandbox.network is off but network namespaces are unavailable here")
	}
	return s.bwrapArgv(probe.path, argv), nil
}

func (s *Sandbox) bwrapArgv(bwrap string, argv []string) []string {
	out := []string{bwrap, "--ro-bind", "/", "/"}
	for _, r := range s.roots {
		if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			out = append(out, "--bind", r, r)
		}
	}
	out = append(out, "--dev", "/dev", "--proc", "/proc")
	// Hide what deny_read names by folder (e.g. **/.ssh/**) in the home
	// directory: under bubblewrap a command could otherwise read it.
	if s.home != "" {
		for _, d := range s.deny {
			if d.kind != denyDirName {
				continue
			}
			dir := filepath.Join(s.home, d.lit)
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				if fi, err := os.Stat(r); err == nil && fi.IsDir() {
					out = append(out, "--tmpfs", r)
				}
			}
		}
	}
	out = append(out, bwrapUnshare...)
	if s.cfg.Network {
		out = append(out, "--share-net")
	} else {
		out = append(out, "--unshare-net")
	}
	out = append(out, "--die-with-parent", "--new-session")
	return append(out, argv...)
}

// Status describes the sandbox for :Flemma sandbox:status and
// :checkhealth: whether it is enforced, by which backend, and its rules.
func (s *Sandbox) Status() string {
	var b strings.Builder
	if !s.cfg.Enabled {
		b.WriteString("sandbox: disabled (no path rules; commands run unsandboxed)\n")
	} else {
		b.WriteString("sandbox: enabled\n")
	}
	_, ok, why := DetectBackend()
	switch {
	case !s.cfg.Enabled:
		fmt.Fprintf(&b, "backend: none (bubblewrap: %s)\n", why)
	case s.cfg.Backend == "none":
		b.WriteString("backend: none (sandbox.backend = \"none\"): commands run unsandboxed; write/edit/read rules still apply\n")
	case ok:
		fmt.Fprintf(&b, "backend: bwrap (%s)\n", why)
	case s.cfg.Backend == "bwrap":
		fmt.Fprintf(&b, "backend: bwrap required but not usable: %s; commands will fail\n", why)
	default:
		fmt.Fprintf(&b, "backend: none (%s): commands run unsandboxed and bash is never auto-approved by the sandbox; write/edit/read rules still apply\n", why)
	}
	fmt.Fprintf(&b, "writable: %s\n", strings.Join(s.roots, ", "))
	fmt.Fprintf(&b, "deny_read: %s\n", strings.Join(s.cfg.DenyRead, ", "))
	fmt.Fprintf(&b, "env_deny: %s\n", strings.Join(s.cfg.EnvDeny, ", "))
	if s.cfg.Network {
		b.WriteString("network: allowed")
	} else {
		b.WriteString("network: blocked")
	}
	return b.String()
}
