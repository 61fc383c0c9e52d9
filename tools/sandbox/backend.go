package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/tools/internal/procsup"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
)

// backendProbe is the result of detecting bubblewrap, once per process.
type backendProbe struct {
	path    string // absolute path of bwrap
	ok      bool   // a trivial command ran under it
	netIso  bool   // --unshare-net works too
	capDrop bool   // --cap-drop ALL is accepted
	bindFD  bool   // --bind-fd exists (bubblewrap 0.8.0 and later)
	// seccomp: bubblewrap loaded the socket filter (procsup.SeccompProgram)
	// and a command ran under it; noSeccomp says why not.
	seccomp   bool
	noSeccomp string
	version   string
	why       string // why it is not usable, or a short description when it is
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
	p := current()
	if p.ok {
		return "bwrap", true, p.why
	}
	return "none", false, p.why
}

// current is what the probe found (once per process), or a missing
// bubblewrap when a test says so (testhook.NoBwrap).
func current() backendProbe {
	probeOnce.Do(func() { probe = detectBwrap("bwrap") })
	if testhook.NoBwrap != "" {
		return backendProbe{why: testhook.NoBwrap}
	}
	if testhook.NoSeccomp != "" && probe.ok {
		p := probe
		p.seccomp, p.noSeccomp = false, testhook.NoSeccomp
		return p
	}
	return probe
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
	if out, err := exec.Command(path, "--help").CombinedOutput(); err == nil || len(out) > 0 {
		p.bindFD = strings.Contains(string(out), "--bind-fd")
	}
	run := func(extra ...string) (string, bool) {
		return probeRun(path, nil, extra...)
	}
	capDrop := []string{"--cap-drop", "ALL"}
	var msg string
	var ok bool
	for _, try := range []struct {
		args          []string
		netIso, drops bool
	}{
		{capDrop, true, true}, {nil, true, false},
		{append(capDrop, "--share-net"), false, true}, {[]string{"--share-net"}, false, false},
	} {
		var m string
		if m, ok = run(try.args...); ok {
			p.ok, p.netIso, p.capDrop = true, try.netIso, try.drops
			break
		}
		if msg == "" {
			msg = m
		}
	}
	if !ok {
		p.why = fmt.Sprintf("bubblewrap is installed (%s) but cannot create a sandbox here: %s", path, msg)
		return p
	}
	p.seccomp, p.noSeccomp = probeSeccomp(path, p.netIso, p.capDrop)
	p.why = "bubblewrap works"
	if p.version != "" {
		p.why = p.version + " works"
	}
	if !p.netIso {
		p.why += " (without network isolation: network namespaces are unavailable)"
	}
	return p
}

// probeRun runs `true` under bubblewrap with the namespaces of the
// sandbox, extra arguments and files (descriptors 3, 4, …): the reason of
// a failure, or ok.
func probeRun(path string, files []*os.File, extra ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append(append([]string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}, bwrapUnshare...), extra...)
	args = append(args, "--die-with-parent", "--new-session", "true")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	cmd.ExtraFiles = files
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return msg, false
	}
	return "", true
}

// probeSeccomp checks that bubblewrap loads the socket filter here: the
// architecture is one the filter knows, and the kernel takes it.
func probeSeccomp(path string, netIso, capDrop bool) (bool, string) {
	if !procsup.SeccompArchSupported(runtime.GOARCH) {
		return false, "no seccomp filter for the " + runtime.GOARCH + " architecture (only amd64 and arm64 have one)"
	}
	f, err := seccompFile()
	if err != nil {
		return false, err.Error()
	}
	defer f.Close()
	var extra []string
	if !netIso {
		extra = append(extra, "--share-net")
	}
	if capDrop {
		extra = append(extra, "--cap-drop", "ALL")
	}
	if msg, ok := probeRun(path, []*os.File{f}, append(extra, "--seccomp", "3")...); !ok {
		return false, "bubblewrap could not load the seccomp filter: " + msg
	}
	return true, ""
}

// seccompFile is a pipe's read end holding the socket filter, for
// bubblewrap's --seccomp.
func seccompFile() (*os.File, error) {
	prog, err := procsup.SeccompProgram(runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(prog)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// bwrapUnshare are the namespaces every sandboxed command gets: all of
// them (user, ipc, pid, net, uts, cgroup when possible). The network
// namespace is shared again only with sandbox.network = true
// (--share-net): a new one also cuts the host's abstract unix sockets.
var bwrapUnshare = []string{"--unshare-all", "--unshare-user"}

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
// read-only root, no capabilities, new namespaces of every kind (the
// network one shared again only with sandbox.network), --die-with-parent
// and --new-session, and:
//
//   - $XDG_RUNTIME_DIR and /run/user hidden (Neovim's, the agents', the
//     buses' and the display's sockets), as is every other socket found in
//     /run, /tmp, the home directory and the writable roots, and the ones
//     the host's environment names ($NVIM, $SSH_AUTH_SOCK, …);
//   - the writable roots bound read-write, each re-checked just before:
//     a root that is no longer the directory the sandbox resolved (it was
//     replaced, e.g. by a symlink) makes the wrap fail;
//   - with Env.Protect, every existing protected path inside the roots
//     re-bound read-only;
//   - a temporary folder (/tmp, $TMPDIR) that is not a writable root
//     replaced by a private, empty tmpfs: other programs' files and sockets
//     there are not seen, and commands still have a scratch folder;
//   - what deny_read names hidden: folders by an empty tmpfs, files by
//     /dev/null, found by a bounded scan of the roots, the home directory
//     and /tmp (see Status for what was scanned and whether it was cut).
//
// With the sandbox disabled, the none backend, or auto with no working
// backend, argv is returned unchanged. An explicit "bwrap" that does not
// work, or network off without network namespaces, is an error.
func (s *Sandbox) WrapCommand(argv []string) ([]string, error) {
	out, files, err := s.wrap(argv, false, "")
	for _, f := range files {
		f.Close()
	}
	return out, err
}

// WrapCommandFiles is WrapCommand for a command this process starts
// itself: when bubblewrap has --bind-fd, each writable root is opened
// without following any symlink, checked, and bound by that descriptor, so
// a root swapped after the check cannot redirect the bind. The caller sets
// cmd.ExtraFiles = files (they are descriptors 3, 4, … of the child, in
// this order) and closes them once the command has started.
func (s *Sandbox) WrapCommandFiles(argv []string) (wrapped []string, files []*os.File, err error) {
	return s.wrap(argv, true, "")
}

// WrapCommandAt is WrapCommandFiles for a command that must run in dir:
// under bubblewrap the command starts there or fails, saying why
// (bubblewrap's --chdir; without it, a folder the command cannot see makes
// bubblewrap start it in the home directory instead).
func (s *Sandbox) WrapCommandAt(argv []string, dir string) (wrapped []string, files []*os.File, err error) {
	return s.wrap(argv, true, dir)
}

func (s *Sandbox) wrap(argv []string, byFD bool, dir string) ([]string, []*os.File, error) {
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("empty command")
	}
	if s.Backend() != "bwrap" {
		return argv, nil, nil
	}
	DetectBackend()
	if !current().ok {
		if s.cfg.Backend == "bwrap" {
			return nil, nil, fmt.Errorf("sandbox.backend is \"bwrap\" but it is not usable: %s", current().why)
		}
		return argv, nil, nil
	}
	if !s.cfg.Network && !current().netIso {
		return nil, nil, fmt.Errorf("sandbox.network is off but network namespaces are unavailable here")
	}
	if !current().capDrop && os.Geteuid() == 0 {
		return nil, nil, fmt.Errorf("bubblewrap here cannot drop capabilities (--cap-drop), and flemma runs as root: a sandboxed command could undo the sandbox")
	}
	var files []*os.File
	fds := map[string]int{}
	fail := func(err error) ([]string, []*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, err
	}
	for _, r := range s.roots {
		f, err := s.openRoot(r)
		if err != nil {
			return fail(err)
		}
		if f == nil {
			continue
		}
		if byFD && current().bindFD {
			files = append(files, f)
			fds[r] = 2 + len(files)
		} else {
			f.Close()
		}
	}
	// The socket filter: by a descriptor this process hands on (its own
	// commands get their limits from the supervisor), or, for an argv
	// someone else starts, through the host binary's trampoline
	// (procsup.SandboxExecArg), which sets the limits and makes the
	// descriptor itself.
	seccompFD := -1
	if byFD && s.socketFilter() {
		f, err := seccompFile()
		if err != nil {
			return fail(fmt.Errorf("cannot prepare the seccomp filter: %v", err))
		}
		files = append(files, f)
		seccompFD = 2 + len(files)
	}
	out := s.bwrapArgs(current().path, argv, fds, s.planMasks(), seccompFD, dir)
	if !byFD && (s.socketFilter() || s.Limits().Any()) {
		exe, err := os.Executable()
		if err != nil {
			return fail(fmt.Errorf("cannot find the host binary for the seccomp filter and the limits: %v", err))
		}
		out = append(procsup.TrampolineArgs(exe, s.Limits(), s.socketFilter()), out...)
	}
	return out, files, nil
}

// openRoot opens the writable root r (canonical) without following any
// symlink and checks that it is still the directory the sandbox resolved.
// A root that does not exist is (nil, nil): it is not bound.
func (s *Sandbox) openRoot(r string) (*os.File, error) {
	f, id, err := openDirID(r)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, ErrPathChanged) || errors.Is(err, syscall.ENOTDIR):
		return nil, fmt.Errorf("the writable root %s was replaced (a part of its path is now a symlink or not a folder): refusing to run the command", r)
	default:
		return nil, fmt.Errorf("cannot open the writable root %s: %v", r, err)
	}
	if want, ok := s.ids[r]; ok && want != id {
		f.Close()
		return nil, fmt.Errorf("the writable root %s was replaced since the sandbox was set up (%s, was %s): refusing to run the command", r, id, want)
	}
	return f, nil
}

// bwrapArgv is the wrapped command with the roots bound by path.
func (s *Sandbox) bwrapArgv(bwrap string, argv []string) []string {
	return s.bwrapArgs(bwrap, argv, nil, s.planMasks(), -1, "")
}

// bwrapArgs builds the bubblewrap command line. The order matters: a
// mount hides what an earlier one put at or under its path.
func (s *Sandbox) bwrapArgs(bwrap string, argv []string, fds map[string]int, plan *maskPlan, seccompFD int, dir string) []string {
	out := []string{bwrap, "--ro-bind", "/", "/"}
	// The private temporary folders first, then what is bound back inside
	// them (the home, the working folder), then the other early masks
	// ($XDG_RUNTIME_DIR, /run/user), which may lie inside what was bound
	// back.
	// A tmpfs holds its files in memory: a private temporary folder holds
	// at most the command's memory limit, a mask (empty, only there to
	// hide) at most maskSize.
	for _, d := range plan.private {
		if m := s.Limits().Memory; m > 0 {
			out = append(out, "--size", strconv.FormatInt(m, 10))
		}
		out = append(out, "--tmpfs", d)
	}
	// "-try": a folder of the shared temporary folder may vanish between
	// the plan and the mount (another program's checkout removed): there
	// is nothing left to bind then, and the command must still start.
	for _, d := range plan.rebind {
		out = append(out, "--ro-bind-try", d, d)
	}
	for _, d := range plan.early {
		if !slices.Contains(plan.private, d) {
			out = append(out, "--size", maskSize, "--tmpfs", d)
		}
	}
	for _, r := range s.roots {
		if fd, ok := fds[r]; ok {
			out = append(out, "--bind-fd", strconv.Itoa(fd), r)
		} else if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			out = append(out, "--bind", r, r)
		}
	}
	out = append(out, "--dev", "/dev", "--proc", "/proc")
	// Read-only protected paths before the masks: a later bind of a
	// protected folder would show again what a mask hid inside it.
	if s.protect {
		for _, p := range plan.ro {
			out = append(out, "--ro-bind-try", p, p)
		}
	}
	for _, d := range plan.tmpfs {
		out = append(out, "--size", maskSize, "--tmpfs", d)
	}
	for _, f := range plan.null {
		out = append(out, "--ro-bind", "/dev/null", f)
	}
	for _, d := range plan.reveal {
		out = append(out, "--ro-bind-try", d, d)
	}
	// The commands' tool caches, writable (inside the state folder, which
	// is hidden).
	if c := s.cfg.CacheDir; c != "" && os.MkdirAll(c, 0o700) == nil {
		now := time.Now()
		os.Chtimes(c, now, now) // used: the sweep goes by this
		out = append(out, "--bind-try", c, c)
	}
	out = append(out, bwrapUnshare...)
	if s.cfg.Network {
		out = append(out, "--share-net")
	}
	if current().capDrop || current().path == "" {
		out = append(out, "--cap-drop", "ALL")
	}
	if seccompFD >= 0 {
		out = append(out, "--seccomp", strconv.Itoa(seccompFD))
	}
	if dir != "" {
		out = append(out, "--chdir", dir)
	}
	out = append(out, "--die-with-parent", "--new-session")
	return append(out, argv...)
}

// maskSize bounds an empty tmpfs that hides a folder (bytes): a command
// may write there, but not fill the machine's memory.
const maskSize = "1048576"

// NetworkNamespaces reports whether bubblewrap can give a command its own
// network namespace here (sandbox.network off needs it).
func NetworkNamespaces() bool { return current().netIso }

// BindsByFD reports whether this bubblewrap binds by descriptor.
func BindsByFD() bool {
	DetectBackend()
	return current().bindFD
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
	if len(s.refused) > 0 {
		fmt.Fprintf(&b, "refused writable: %s\n", strings.Join(s.refused, "; "))
	}
	fmt.Fprintf(&b, "deny_read: %s\n", strings.Join(s.cfg.DenyRead, ", "))
	fmt.Fprintf(&b, "environment: only %d allowed names (PATH, HOME, USER, SHELL, LANG, LC_*, TERM, TMPDIR, tool chains' homes and caches, …: :help flemma-sandbox), values shaped like credentials dropped, plus tools.bash.env (for MCP servers: their env)\n", len(DefaultEnvAllow))
	fmt.Fprintf(&b, "env_deny: %s (removed even when allowed, and their values redacted from output; variables naming a socket always removed)\n", strings.Join(s.cfg.EnvDeny, ", "))
	b.WriteString(limitsStatus(s.Limits()) + "\n")
	if len(s.cfg.Protected) > 0 {
		fmt.Fprintf(&b, "protected (besides git config and hooks, shell start-up files, .envrc, editor configurations): %s\n", strings.Join(s.cfg.Protected, ", "))
	}
	if s.cfg.Enabled && s.Backend() == "bwrap" && ok {
		if c := current(); s.socketFilter() {
			fmt.Fprintf(&b, "sockets: no unix socket can be created by a command (seccomp filter, %s: socket(AF_UNIX) refused, socketpair allowed, io_uring off), so none of yours is reachable, wherever it lies, abstract ones included\n", runtime.GOARCH)
		} else if s.cfg.UnixSockets {
			b.WriteString("sockets: commands may create unix sockets (sandbox.unix_sockets = true): only the sockets the scans below find are hidden\n")
		} else {
			fmt.Fprintf(&b, "sockets: NOT enforced by seccomp (%s): only the sockets the scans below find are hidden\n", c.noSeccomp)
		}
		p := s.planMasks()
		if p.seccomp {
			fmt.Fprintf(&b, "hidden from bash: %d folders, %d files; scanned for deny_read: %s (%d entries; at most %d in the roots, %d in the home directory, %d in each temporary folder, depth %d)\n",
				len(p.early)+len(p.tmpfs), len(p.null), strings.Join(p.scanned, ", "), p.entries,
				scanRootEntries, scanHomeEntries, scanTempEntries, scanMaxDepth)
		} else {
			fmt.Fprintf(&b, "hidden from bash: %d folders, %d files and sockets (%d sockets); scanned: %s, and the sockets /proc/net/unix lists (%d entries; at most %d in the roots, %d in the home directory, %d in each temporary folder, depth %d)\n",
				len(p.early)+len(p.tmpfs), len(p.null), p.sockets, strings.Join(p.scanned, ", "), p.entries,
				scanRootEntries, scanHomeEntries, scanTempEntries, scanMaxDepth)
		}
		if len(p.private) > 0 {
			fmt.Fprintf(&b, "private temporary folders (empty for bash, not the machine's): %s\n", strings.Join(p.private, ", "))
		}
		for _, n := range p.notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	switch {
	case s.cfg.Network && s.socketFilter() && s.Available():
		b.WriteString("network: allowed (commands share this machine's network namespace; its abstract unix sockets stay out of reach: no unix socket can be created)")
	case s.cfg.Network:
		b.WriteString("network: allowed (commands share this machine's network namespace, and with it its abstract unix sockets")
		if abs := abstractSockets(5); len(abs) > 0 {
			b.WriteString(": " + strings.Join(abs, ", "))
		}
		b.WriteString(")")
	default:
		b.WriteString("network: blocked")
	}
	return b.String()
}

// abstractSockets lists up to n listening abstract unix sockets of this
// network namespace.
func abstractSockets(n int) []string {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path; flag 00010000 = listening.
		if len(f) < 8 || !strings.HasPrefix(f[7], "@") || f[3] != "00010000" || seen[f[7]] {
			continue
		}
		seen[f[7]] = true
		if out = append(out, f[7]); len(out) == n {
			break
		}
	}
	return out
}

// socketFilter reports whether this sandbox's commands run under the
// socket filter: it loads here and sandbox.unix_sockets is off.
func (s *Sandbox) socketFilter() bool { return current().seccomp && !s.cfg.UnixSockets }

// SocketsFiltered reports whether sandboxed commands run under the socket
// filter (procsup.SeccompProgram): no AF_UNIX socket can be created, so no
// socket of the user is reachable, wherever it lies.
func SocketsFiltered() bool { return current().ok && current().seccomp }

// SocketFilterWhyNot says why commands do not run under the socket filter
// ("" when they do).
func SocketFilterWhyNot() string {
	c := current()
	if !c.ok {
		return c.why
	}
	return c.noSeccomp
}

// limitsStatus is the limits line of Status.
func limitsStatus(l Limits) string {
	none := func(v int64, f func(int64) string) string {
		if v <= 0 {
			return "none"
		}
		return f(v)
	}
	size := func(v int64) string { return humanBytes(v) }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	out := fmt.Sprintf("limits of each command: processes %s, memory %s (each process, and the tree together), file size %s, open files %s, cpu %s",
		none(int64(l.Processes), num), none(l.Memory, size), none(l.FileSize, size), none(int64(l.OpenFiles), num),
		none(int64(l.CPU), func(v int64) string { return num(v) + " s per process" }))
	switch {
	case runtime.GOOS != "linux":
		out += " — NOT enforced on " + runtime.GOOS + " (they need the command supervisor of Linux)"
	case os.Geteuid() == 0 && l.Processes > 0:
		out += "; flemma runs as root, whom RLIMIT_NPROC does not bind: the process count holds by the supervisor, which counts the tree every 100 ms and kills it beyond (cgroups are not used)"
	case l.Processes > 0 || l.Memory > 0:
		out += "; the tree's processes and memory are counted by the supervisor every 100 ms (cgroups are not used)"
	}
	return out
}

// humanBytes writes a size in binary units ("4 GiB", "11.8 GiB").
func humanBytes(v int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(v), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[u])
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}
