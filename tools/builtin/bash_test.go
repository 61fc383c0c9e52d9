//go:build unix

package builtin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/internal/testhook"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

func TestBash(t *testing.T) {
	f := newFixture(t)
	f.env.Environ = append(f.env.Environ, "OPENAI_API_KEY=sk-test-0123456789", "SERVICE_TOKEN=tok-abcdef-secret", "LANG=plain")
	f.env.ExtraEnv = map[string]string{"FLEMMA_EXTRA": "extra-value"}
	tests := []struct {
		name  string
		input map[string]any
		ok    bool
		exact string
		has   []string
	}{
		{"echo", map[string]any{"command": "echo hello"}, true, "hello", nil},
		{"stderr merged in order", map[string]any{"command": "echo out; echo err >&2; echo out2"}, true, "out\nerr\nout2", nil},
		{"trailing whitespace trimmed", map[string]any{"command": "printf 'a\\n\\n  \\n'"}, true, "a", nil},
		{"no output", map[string]any{"command": "true"}, true, "(no output)", nil},
		{"exit code", map[string]any{"command": "echo failing; exit 3"}, false, "failing\n\nCommand exited with code 3", nil},
		{"exit code without output", map[string]any{"command": "exit 1"}, false, "(no output)\n\nCommand exited with code 1", nil},
		{"runs in the buffer's directory", map[string]any{"command": "pwd"}, true, f.dir, nil},
		{"stdin is empty", map[string]any{"command": "cat; echo eof"}, true, "eof", nil},
		{"env scrubbed", map[string]any{"command": `echo "key=$OPENAI_API_KEY token=$SERVICE_TOKEN plain=$LANG extra=$FLEMMA_EXTRA"`}, true, "key= token= plain=plain extra=extra-value", nil}, // LANG: an allowed name
		{"secrets redacted", map[string]any{"command": "echo sk-test-0123456789 and tok-abcdef-secret"}, true, "[redacted] and [redacted]", nil},
		{"control sequences stripped", map[string]any{"command": `printf '\033[31mred\033[0m \033]0;title\007ok\r\nbar 10%%\rbar 100%%\n'`}, true, "red ok\nbar 100%", nil},
		{"timeout", map[string]any{"command": "echo started; sleep 10", "timeout": 0.3}, false, "started\n\nCommand timed out after 0.3 seconds.", nil},
		{"timeout without output", map[string]any{"command": "sleep 10", "timeout": 0.2}, false, "Command timed out after 0.2 seconds.", nil},
		{"empty command", map[string]any{"command": "  "}, false, "No command provided", nil},
		{"missing command", map[string]any{}, false, "", []string{"Invalid input for tool 'bash'", "command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := f.run("bash", tt.input)
			want(t, tt.name, res, tt.ok, tt.has...)
			if tt.exact != "" && res.Content != tt.exact {
				t.Errorf("content = %q, want %q", res.Content, tt.exact)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestBashTimeoutCap(t *testing.T) {
	f := newFixture(t)
	f.env.MaxTimeout = 300 * time.Millisecond
	res := f.run("bash", map[string]any{"command": "sleep 5", "timeout": 1000})
	want(t, "capped", res, false, "Command timed out after 0.3 seconds.")
	f.env.DefaultTimeout = 200 * time.Millisecond
	f.env.MaxTimeout = 0
	want(t, "default", f.run("bash", map[string]any{"command": "sleep 5"}), false, "Command timed out after 0.2 seconds.")
}

// TestBashTimeoutOf: the input's timeout when positive, else the Env's
// default; capped by the Env's maximum (the defaults when the Env sets
// none).
func TestBashTimeoutOf(t *testing.T) {
	sec := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		def, max time.Duration
		in       *float64
		want     time.Duration
	}{
		{0, 0, nil, tools.DefaultToolTimeout},
		{0, 0, sec(1000), tools.DefaultMaxTimeout},
		{0, 0, sec(0.5), 500 * time.Millisecond},
		{0, 0, sec(0), tools.DefaultToolTimeout},
		{0, 0, sec(-3), tools.DefaultToolTimeout},
		{2 * time.Second, 0, nil, 2 * time.Second},
		{2 * time.Second, time.Second, nil, time.Second},
		{0, time.Second, sec(5), time.Second},
		{0, 10 * time.Second, sec(5), 5 * time.Second},
	} {
		env := &tools.Env{DefaultTimeout: tt.def, MaxTimeout: tt.max}
		if got := bashTimeout(env, tt.in); got != tt.want {
			t.Errorf("default %s max %s input %v: %s, want %s", tt.def, tt.max, tt.in, got, tt.want)
		}
	}
}

// TestBashStartError: a command that does not start fails with a reason
// the model can act on, or is an internal error when there is none.
func TestBashStartError(t *testing.T) {
	for _, tt := range []struct {
		err      error
		want     string
		internal bool
	}{
		{fmt.Errorf("exec: %w", exec.ErrNotFound), "Failed to start command: zsh not found", false},
		{sandbox.ErrShuttingDown, "Failed to start command: the host is shutting down", false},
		{&os.PathError{Op: "chdir", Path: "/x", Err: syscall.ENOENT}, "Failed to start command: no such file or directory", false},
		{&os.PathError{Op: "fork", Path: "/x", Err: syscall.EAGAIN}, "Failed to start command: " + syscall.EAGAIN.Error(), false},
		{errors.New("odd"), "odd", true},
	} {
		err := startError(tt.err, "zsh")
		var in *tools.Internal
		if err.Error() != tt.want || errors.As(err, &in) != tt.internal {
			t.Errorf("%v: %q (internal %v), want %q (internal %v)", tt.err, err, errors.As(err, &in), tt.want, tt.internal)
		}
	}
}

func TestBashTruncation(t *testing.T) {
	f := newFixture(t)
	res := f.run("bash", map[string]any{"command": "seq 1 3000"})
	want(t, "seq", res, true, "\n\n[Showing lines 1001-3000 of 3000. Full output: ")
	if !strings.HasPrefix(res.Content, "1001\n1002\n") {
		t.Errorf("tail truncation kept the wrong end: %q", res.Content[:20])
	}
	m := regexp.MustCompile(`Full output: (.+)\]$`).FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("no path in %q", res.Content[len(res.Content)-100:])
	}
	// The exact naming (safe characters only) is SaveFullOutput's, tested in package tools.
	if base := filepath.Base(m[1]); filepath.Dir(m[1]) != f.env.OutputDir || !strings.HasPrefix(base, "flemma_tool_") || !strings.HasSuffix(base, "_toolu_01.txt") {
		t.Errorf("full output path = %s", m[1])
	}
	full, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var seq strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	if string(full) != seq.String() {
		t.Errorf("full output file has %d bytes, want %d", len(full), seq.Len())
	}
	if fi, _ := os.Stat(m[1]); fi.Mode().Perm() != 0o600 {
		t.Errorf("full output file mode %v, want 0600", fi.Mode().Perm())
	}

	// A failing command is truncated the same way, the exit code last.
	res = f.run("bash", map[string]any{"command": "seq 1 3000; exit 2"})
	want(t, "failing seq", res, false, "[Showing lines 1001-3000 of 3000. Full output: ", "]\n\nCommand exited with code 2")
}

// TestBashHugeOutput is issue 26 #6: for an output far beyond what is
// kept in memory, the notice counts its lines and bytes exactly (it said
// "of 453441 lines" for about 5.67 million), the file it names holds all
// of it (it held 16 MiB of 200 MB, the rest "omitted"), and beyond the
// documented cap it holds the first part and the notice says so.
func TestBashHugeOutput(t *testing.T) {
	f := newFixture(t)
	res := f.run("bash", map[string]any{"command": "seq 1 5670000", "timeout": 120})
	want(t, "5.67 M lines", res, true, "5669999\n5670000\n\n[Showing lines ", "-5670000 of 5670000 (")
	m := regexp.MustCompile(`Full output: (.+)\]$`).FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("no full output named: %q", res.Content[len(res.Content)-200:])
	}
	fi, err := os.Stat(m[1])
	if err != nil {
		t.Fatal(err)
	}
	// seq 1 5670000 writes 5670000 lines: 9 of 1 digit, 90 of 2, … .
	var size int64
	for d, lo := int64(1), int64(1); lo <= 5670000; d, lo = d+1, lo*10 {
		size += (min(lo*10-1, 5670000) - lo + 1) * (d + 1)
	}
	if fi.Size() != size {
		t.Errorf("full output: %d bytes, want %d (all of it)", fi.Size(), size)
	}
	if strings.Contains(res.Content, "omitted") {
		t.Errorf("the result still speaks of an omitted middle:\n%s", res.Content[len(res.Content)-300:])
	}

	// Beyond the cap: the first FullOutputCap bytes, and the notice says so.
	old := sandbox.FullOutputCap
	sandbox.FullOutputCap = 4 << 20
	defer func() { sandbox.FullOutputCap = old }()
	res = f.run("bash", map[string]any{"command": "head -c 30000000 /dev/zero | tr '\\0' 'y' | fold -w 99; echo END"})
	// 30000000 = 99·303030 + 30: 303030 full lines, then 30 y and END.
	want(t, "capped", res, true, "yyyEND\n\n[Showing lines ", "-303031 of 303031 (", "Full output (its first 4.0MB of 28.9MB: the rest is cut): ")
	m = regexp.MustCompile(`: (/[^ ]+)\]$`).FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("no full output named: %q", res.Content[len(res.Content)-200:])
	}
	if fi, err := os.Stat(m[1]); err != nil || fi.Size() != 4<<20 {
		t.Errorf("capped full output: %v, %v", fi, err)
	}
}

func TestBashShellAndStartErrors(t *testing.T) {
	f := newFixture(t)
	f.env.Shell = "sh"
	want(t, "sh", f.run("bash", map[string]any{"command": "echo $0"}), true, "sh")
	f.env.Shell = "definitely-not-a-shell-xyz"
	want(t, "missing shell", f.run("bash", map[string]any{"command": "echo"}), false, "Failed to start command: definitely-not-a-shell-xyz not found")
}

// TestBashBackgroundChild: a background child would keep the output pipe
// open; the call still returns when the shell exits (the child is killed
// then: see TestBashExitKillsDetached). The child sleeps 120 s: a call
// that waited for it would end after that, whatever the machine's load; one
// that did not ends long before.
func TestBashBackgroundChild(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	res := f.run("bash", map[string]any{"command": "sleep 120 & echo done"})
	want(t, "background", res, true, "done")
	if d := time.Since(start); d >= 120*time.Second {
		t.Errorf("waited %s for a background child", d)
	}
}

// TestBashCancelKillsGroup cancels `sleep 100 & sleep 100`: both sleeps,
// the whole process group, must be gone.
func TestBashCancelKillsGroup(t *testing.T) {
	f := newFixture(t)
	pidFile := filepath.Join(f.dir, "pgid")
	marker := fmt.Sprintf("%d", 100000+time.Now().UnixNano()%100000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() {
		done <- f.runCtx(ctx, "bash", map[string]any{"command": "echo $$ > " + pidFile + "; sleep " + marker + " & sleep " + marker})
	}()
	var pgid int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
	}
	if pgid == 0 {
		t.Fatal("the command did not start")
	}
	// Both sleeps run (the background one is what a group kill is for).
	sleeps := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); string(b) == "sleep\x00"+marker+"\x00" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); sleeps() < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := sleeps(); n != 2 {
		t.Fatalf("%d of the 2 sleeps run", n)
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("process group %d not running before cancel: %v", pgid, err)
	}
	cancel()
	res := <-done
	want(t, "cancel", res, false, "User aborted tool execution.")
	if sandbox.GroupAlive(pgid) {
		t.Errorf("process group %d still has running processes after cancel", pgid)
	}
	// Orphaned, killed sleeps are zombies until PID 1 reaps them; then the
	// group is gone.
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
	}
	if !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 -%d after cancel = %v, want ESRCH (group still alive)", pgid, err)
	}
}

func TestBashSpec(t *testing.T) {
	s := Bash().Spec()
	if !slices.Contains(s.Capabilities, "can_auto_approve_if_sandboxed") || len(s.Requires) != 0 {
		t.Errorf("bash capabilities %v requires %v", s.Capabilities, s.Requires)
	}
	// reference §12 #46: optional numbers are ["number","null"] and required.
	for tool, fields := range map[string][]string{"bash": {"timeout"}, "read": {"offset", "limit"}, "grep": {"limit"}, "find": {"limit"}, "ls": {"limit", "max_depth"}} {
		var spec tools.Spec
		for _, b := range All() {
			if b.Spec().Name == tool {
				spec = b.Spec()
			}
		}
		props := spec.InputSchema["properties"].(map[string]any)
		for _, fld := range fields {
			typ := props[fld].(map[string]any)["type"]
			if fmt.Sprint(typ) != "[number null]" {
				t.Errorf("%s.%s type = %v", tool, fld, typ)
			}
			if !slices.Contains(spec.InputSchema["required"].([]any), any(fld)) {
				t.Errorf("%s.%s not required", tool, fld)
			}
		}
		if _, ok := props["label"]; !ok {
			t.Errorf("%s has no label", tool)
		}
	}
}

// requireBwrap stops a test that needs bubblewrap when it cannot run here:
// a failure when the environment variable CI is set on Linux (the CI
// machine must have it), else a skip that says why.
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, ok, why := sandbox.DetectBackend(); !ok {
		if os.Getenv("CI") != "" && runtime.GOOS == "linux" {
			t.Fatalf("CI is set but bubblewrap is not usable: %s", why)
		}
		t.Skipf("bubblewrap is not usable here (user namespaces unavailable?): %s", why)
	}
}

// bwrapFixture is a fixture whose sandbox runs commands under bubblewrap;
// see requireBwrap for when bubblewrap does not work here.
func bwrapFixture(t *testing.T, network bool) *fixture {
	t.Helper()
	requireBwrap(t)
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Network: network})
	if !f.env.Sandbox.Available() || f.env.Sandbox.Backend() != "bwrap" {
		t.Fatalf("bwrap detected but the sandbox does not use it: %s", f.env.Sandbox.Status())
	}
	return f
}

func TestBwrapConfinesWrites(t *testing.T) {
	f := bwrapFixture(t, true)
	want(t, "inside", f.run("bash", map[string]any{"command": "echo inside > in.txt && cat in.txt"}), true, "inside")
	if f.read("in.txt") != "inside\n" {
		t.Errorf("write inside the root did not reach the file")
	}
	target := filepath.Join(f.outside, "out.txt")
	res := f.run("bash", map[string]any{"command": "echo pwned > " + target})
	// Outside the roots the file system is read-only, and the machine's
	// temporary folder is a private, empty one: the write fails either way.
	want(t, "outside", res, false, "Command exited with code")
	if !strings.Contains(res.Content, "Read-only file system") && !strings.Contains(res.Content, "No such file or directory") {
		t.Errorf("outside: unexpected failure:\n%s", res.Content)
	}
	if exists(target) {
		t.Errorf("a sandboxed command wrote outside the writable roots")
	}
	want(t, "root fs read-only", f.run("bash", map[string]any{"command": "touch /usr/flemma-test"}), false, "Read-only file system")
}

func TestBwrapHidesSSH(t *testing.T) {
	home := sandbox.CanonicalOr(t.TempDir())
	t.Setenv("HOME", home)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("PRIVATE KEY"), 0o600)
	f := bwrapFixture(t, true)
	res := f.run("bash", map[string]any{"command": "cat ~/.ssh/id_rsa"})
	want(t, "ssh hidden", res, false, "No such file")
	if strings.Contains(res.Content, "PRIVATE") {
		t.Errorf("the key was readable under bubblewrap")
	}
}

func TestBwrapNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	on := bwrapFixture(t, true)
	want(t, "network on", on.run("bash", map[string]any{"command": cmd}), true, "connected")
	off := bwrapFixture(t, false)
	if !sandbox.NetworkNamespaces() {
		t.Skip("network namespaces are unavailable here")
	}
	res := off.run("bash", map[string]any{"command": cmd})
	want(t, "network off", res, false, "Command exited with code")
	if strings.Contains(res.Content, "connected") {
		t.Errorf("connected with the network off")
	}
}

// TestBwrapCancel: cancelling a sandboxed command kills what runs inside
// the sandbox too (it lives in another session and pid namespace).
func TestBwrapCancel(t *testing.T) {
	f := bwrapFixture(t, true)
	marker := fmt.Sprintf("%d", 100000+time.Now().UnixNano()%100000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() {
		done <- f.runCtx(ctx, "bash", map[string]any{"command": "sleep " + marker + " & sleep " + marker})
	}()
	running := func() bool {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if string(b) == "sleep\x00"+marker+"\x00" {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(5 * time.Second); !running() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !running() {
		t.Fatal("the sandboxed sleep did not start")
	}
	cancel()
	want(t, "cancel", <-done, false, "User aborted tool execution.")
	for deadline := time.Now().Add(3 * time.Second); running() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if running() {
		t.Errorf("the sandboxed sleep survived the cancel")
	}
}

func TestBwrapRequiredButMissing(t *testing.T) {
	f := newFixture(t)
	f.setSandbox(sandbox.Config{Enabled: true, Backend: "bwrap", Writable: []string{sandbox.URNBufferPath}, Network: true})
	if _, ok, _ := sandbox.DetectBackend(); ok {
		// Simulate a machine without bubblewrap through a probe result.
		testhook.NoBwrap = "bubblewrap (bwrap) not found on PATH"
		defer func() { testhook.NoBwrap = "" }()
	}
	want(t, "required", f.run("bash", map[string]any{"command": "echo"}), false, "Sandbox error: sandbox.backend is \"bwrap\" but it is not usable: bubblewrap (bwrap) not found on PATH")
}
