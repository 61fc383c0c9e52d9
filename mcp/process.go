package mcp

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is a stdio server: the SDK's CommandTransport over a command the
// host starts in its own process group (killed as a whole), with the
// parent-death signal on Linux so that it dies with the host even when the
// host is killed.
type process struct {
	cmd    *exec.Cmd
	ct     *sdk.CommandTransport
	stderr *tail
}

func newProcess(command string, args, env []string) *process {
	cmd := exec.Command(command, args...)
	cmd.Env = env
	st := &tail{}
	cmd.Stderr = st
	cmd.SysProcAttr = procAttr()
	return &process{cmd: cmd, ct: &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, stderr: st}
}

// Connect starts the process. The thread that forks stays alive (the
// parent-death signal follows the thread, not the process): it is locked
// only for the start and then returns to the runtime's pool.
func (p *process) Connect(ctx context.Context) (sdk.Connection, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return p.ct.Connect(ctx)
}

// kill ends the server's whole process group.
func (p *process) kill() {
	if p.cmd.Process != nil {
		killGroup(p.cmd.Process.Pid)
	}
}

// exitReason says how the process ended, with the last line it wrote to
// stderr.
func (p *process) exitReason() string {
	r := "the server process exited"
	if l := p.stderr.last(); l != "" {
		r += "; stderr: " + l
	}
	return r
}

// tail keeps the end of what the server writes to stderr (for the reason
// of a failure).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	t.mu.Unlock()
	return len(b), nil
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}
