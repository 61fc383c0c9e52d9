package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// BashInput is the input of bash (reference §7.1).
type BashInput struct {
	Command string   `json:"command" desc:"The shell command to run"`
	Label   string   `json:"label" desc:"A short human-readable label for this operation"`
	Timeout *float64 `json:"timeout" desc:"Timeout in seconds (default and maximum: the configured limit, 300 unless the user changed it)"`
}

// Bash is the bash built-in: `<shell> -c <command>` in the chat file's
// directory, stdout and stderr merged, the environment scrubbed of secrets,
// under bubblewrap when the sandbox is enabled and works. The output is
// tail-truncated and the full output saved to a file named in the notice.
func Bash() tools.Tool {
	return tools.Typed(tools.Spec{
		Name: "bash",
		Description: "Run a shell command (bash -c) in the chat file's directory; stdout and stderr are merged. " +
			"Output is truncated to the last 2000 lines or 50KB, whichever comes first; the full output is then saved " +
			"to a temporary file named in the notice. A non-zero exit code makes the call fail, with the code shown. " +
			"Commands that wait for input get none (stdin is /dev/null).",
		Capabilities: []string{tools.CapSandboxed, tools.CapSideEffects},
		Truncates:    true,
		Tags:         []string{"shell", "command", "exec"}, // exec: in $commands (approval.TagExec)
		Async:        true,
		Enabled:      true,
		// bash enforces its own timeout (the input's, else the Env's
		// default, capped by Env.MaxTimeout: the host sets both to the
		// call's tools.timeouts class) so that it can report it in the
		// reference's words; the executor's deadline is only a backstop.
		Timeout:   24 * time.Hour,
		SelfTimed: true,
	}, runBash)
}

// testHookAfterWrap is called between wrapping the command for the sandbox
// and starting it (tests of a root swapped in between).
var testHookAfterWrap func()

// killGrace is how long a command's processes may take to exit after
// SIGTERM (on timeout or cancellation) before they get SIGKILL.
var killGrace = time.Second

// Output capture bounds: the first captureHead bytes and the last
// captureTail bytes are kept; what lies between is counted and dropped.
const (
	captureHead = 8 << 20
	captureTail = 8 << 20
)

func runBash(ctx context.Context, call tools.Call, in BashInput) (tools.Output, error) {
	if strings.TrimSpace(in.Command) == "" {
		return tools.Output{}, tools.Failf("No command provided")
	}
	env := call.Env
	timeout := bashTimeout(env, in.Timeout)

	sb, err := env.SandboxFor(call)
	if err != nil {
		return tools.Output{}, tools.Failf("Sandbox error: %v", err)
	}
	// The writable roots are bound by descriptor when bubblewrap can: a
	// root replaced after the check (by a command running meanwhile)
	// cannot redirect the bind.
	// It starts in the folder it works in, or not at all (never in $HOME
	// instead).
	argv, files, err := sb.WrapCommandAt([]string{env.ShellOrDefault(), "-c", in.Command}, env.WorkDir(call))
	if err != nil {
		return tools.Output{}, tools.Failf("Sandbox error: %v", err)
	}
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
		files = nil
	}
	defer closeFiles()
	if testHookAfterWrap != nil {
		testHookAfterWrap()
	}

	tr := startTracking(sb, env, call)
	defer tr.done()

	pr, pw, err := os.Pipe()
	if err != nil {
		return tools.Output{}, &tools.Internal{Err: err}
	}
	lim := sb.Limits()
	proc, err := sandbox.StartTreeLimited(argv, env.WorkDir(call), env.CommandEnv(), pw, files, lim) // stderr interleaved with stdout
	pw.Close()
	closeFiles()
	if err != nil {
		pr.Close()
		return tools.Output{}, startError(err, argv[0])
	}

	// Everything the command writes is counted and saved (up to a cap)
	// as it comes: the full output a notice names, exact counts.
	out := capture{spool: tools.NewSpool(env.OutputDirOrDefault(), env)}
	defer out.spool.Discard()
	timedOut, canceled := awaitCommand(ctx, proc, pr, &out, timeout)
	if canceled {
		return tools.Output{}, ctx.Err()
	}
	return bashResult(proc, out.present(env, call), timedOut, timeout, lim, tr)
}

// bashTimeout is the command's time: the input's when it gives one, else
// the Env's default; never more than the Env's maximum.
func bashTimeout(env *tools.Env, in *float64) time.Duration {
	def, max := env.Timeouts()
	timeout := def
	if in != nil && *in > 0 {
		timeout = time.Duration(*in * float64(time.Second))
	}
	return min(timeout, max)
}

// startError is the error of a command that did not start: a failure the
// model reads when the reason is one it can act on, else an internal
// error.
func startError(err error, shell string) error {
	reason := sandbox.FSReason(err)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		reason = shell + " not found"
	case errors.Is(err, sandbox.ErrShuttingDown):
		reason = err.Error()
	}
	if reason == "" {
		return &tools.Internal{Err: err}
	}
	return tools.Failf("Failed to start command: %s", reason)
}

// awaitCommand copies the command's output into out until the command's
// tree is gone, its time is up (timedOut: the tree is stopped) or ctx is
// done (canceled: the tree is stopped), then closes pr.
func awaitCommand(ctx context.Context, proc *sandbox.Tree, pr *os.File, out *capture, timeout time.Duration) (timedOut, canceled bool) {
	copied := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(copied)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-proc.Done():
	case <-timer.C:
		timedOut = true
		proc.Stop(killGrace)
	case <-ctx.Done():
		canceled = true
		proc.Stop(killGrace)
	}
	// Once the tree is gone nothing holds the pipe; should a process have
	// escaped, read what it wrote so far, then stop reading.
	select {
	case <-copied:
	case <-time.After(250 * time.Millisecond):
		pr.Close()
		<-copied
	}
	pr.Close()
	return timedOut, canceled
}

// bashResult is the result of a command that ran: its output (text, ""
// for none), then why it failed if it did — the timeout, a limit, a
// signal, its exit code — then what it changed in the writable roots.
func bashResult(proc *sandbox.Tree, text string, timedOut bool, timeout time.Duration, lim sandbox.Limits, tr *bashTracker) (tools.Output, error) {
	if timedOut {
		msg := "Command timed out after " + formatSeconds(timeout) + " seconds."
		if text != "" {
			msg = text + "\n\n" + msg
		}
		tail, changes := tr.report()
		return tools.Output{Changes: changes}, errors.New(msg + tail)
	}
	if text == "" {
		text = "(no output)"
	}
	<-proc.Done()
	code, signal, err := proc.Exit()
	if err != nil {
		return tools.Output{}, &tools.Internal{Err: err}
	}
	var why string
	switch {
	case proc.LimitHit() != "":
		why = limitMessage(proc.LimitHit(), lim)
	case signal != "":
		why = fmt.Sprintf("Command was terminated by a signal (%s)", signal)
	case code != 0:
		why = fmt.Sprintf("Command exited with code %d", code)
	}
	tail, changes := tr.report()
	if why != "" {
		return tools.Output{Changes: changes}, fmt.Errorf("%s\n\n%s%s", text, why, tail)
	}
	return tools.Output{Text: text + tail, Changes: changes}, nil
}

// bashTracker lists what a command did in the writable roots. Under
// bubblewrap those are the only place the command can change, so they
// are snapshot before it runs and compared after; otherwise it tracks
// nothing.
type bashTracker struct {
	sb          *sandbox.Sandbox
	env         *tools.Env
	call        tools.Call
	track, skip []string
	before      rootSnapshot
	pre         preimages
	backups     backupConfig
	release     func() // the hold on the links' baseline (holdBaseline)
}

// done ends the tracker's hold on the links' baseline, once its guard has
// run (report).
func (t *bashTracker) done() {
	if t.release != nil {
		t.release()
	}
}

// startTracking snapshots the writable roots (those the command's folder
// and the chat's are in), but not the folders of the saved outputs, the
// backups and the journal, and keeps the previous content of what the
// command may change, for :Flemma tool:undo (see preserveFiles).
func startTracking(sb *sandbox.Sandbox, env *tools.Env, call tools.Call) *bashTracker {
	t := &bashTracker{sb: sb, env: env, call: call, backups: backupsOf(env)}
	if sb.Backend() != "bwrap" {
		return t
	}
	t.track = trackedFor(sb, env, call)
	t.skip = []string{sandbox.CanonicalOr(env.OutputDirOrDefault())}
	if env.BackupDir != "" {
		t.skip = append(t.skip, sandbox.CanonicalOr(filepath.Dir(env.BackupDir))) // the state folder: backups, journal
	}
	if env.BackupDir == "" {
		if d, err := DefaultBackupDir(); err == nil {
			t.skip = append(t.skip, sandbox.CanonicalOr(d))
		}
	}
	t.before = snapshotRoots(t.track, t.skip, sb.DeniedEntry)
	if sb.Protecting() {
		t.before.readLinks()
		t.before.links, t.release = holdBaseline(t.track, t.before.links)
	}
	t.pre = preserveFiles(t.backups, t.before)
	return t
}

// trackedFor are the roots a command's changes are tracked in (see
// trackedRoots): the writable roots, and its folder and the chat's.
func trackedFor(sb *sandbox.Sandbox, env *tools.Env, call tools.Call) []string {
	dirs := []string{sandbox.CanonicalOr(env.WorkDir(call))}
	if call.Buffer != "" {
		dirs = append(dirs, sandbox.CanonicalOr(filepath.Dir(call.Buffer)))
	}
	return trackedRoots(sb.Roots(), dirs...)
}

// report compares the roots with their snapshot: the text that lists what
// the command created, changed and deleted ("" when nothing is tracked,
// else starting with a blank line), and the changes tool:undo can take
// back. Approved by a policy, what the command did to protected paths and
// executable bits is put right now (see guardProtected), and said.
func (t *bashTracker) report() (string, []tools.Change) {
	if t.track == nil {
		return "", nil
	}
	after := snapshotRoots(t.track, t.skip, nil)
	c := compareSnapshots(t.before, after)
	changes := c.undoable(t.before, after, t.pre, t.backups)
	out := ""
	if text := c.text(t.env.WorkDir(t.call)); text != "" {
		out = "\n\n" + text
	}
	if t.sb.Protecting() {
		g := guardProtected(t.sb, c, t.before, after, changes, t.backups, t.call.ID)
		kept := changes[:0]
		for _, ch := range changes {
			if !g.drop[ch.Path] {
				kept = append(kept, ch)
			}
		}
		changes = kept
		if text := g.text(t.env.WorkDir(t.call)); text != "" {
			out += "\n\n" + text
		}
	}
	return out, changes
}

// limitMessage says which limit of sandbox.limits the command's tree went
// beyond, in words the model can act on.
func limitMessage(hit string, lim sandbox.Limits) string {
	switch hit {
	case "processes":
		return fmt.Sprintf("Command was killed: it ran more than %d processes at once (sandbox.limits.processes).", lim.Processes)
	case "memory":
		return fmt.Sprintf("Command was killed: its processes together used more than %s of memory (sandbox.limits.memory).", tools.FormatSize(lim.Memory))
	}
	return "Command was killed for going beyond sandbox.limits (" + hit + ")."
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// capture is the output of a command, bounded: the first captureHead bytes,
// then a sliding window of the last captureTail bytes; and all of it
// counted and saved by spool.
type capture struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte
	dropped int64
	spool   *tools.Spool
}

// present is the output as the result shows it: whole when it fits the
// limits; else its end, with a notice that counts the whole output
// exactly and names the saved full output (saying when the file holds
// only its start). "" for no output.
func (c *capture) present(env *tools.Env, call tools.Call) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	save := func(string) (string, error) { return c.spool.Keep(call) }
	if c.dropped == 0 && len(c.tail) <= captureTail {
		text := tools.Finish(strings.TrimRight(string(c.head)+string(c.tail), " \t\r\n"), env)
		if text == "" {
			return ""
		}
		return tools.TruncateWithOverflow(text, true, env.Limits(), save)
	}
	// Only the end is in memory: it is what the result shows.
	tail := c.tail
	if len(tail) > captureTail {
		tail = tail[len(tail)-captureTail:]
	}
	text := tools.Finish(strings.TrimRight(string(tail), " \t\r\n"), env)
	size, lines := c.spool.Totals()
	note := ""
	if capped, kept, total := c.spool.Capped(); capped {
		note = fmt.Sprintf("its first %s of %s: the rest is cut", tools.FormatSize(kept), tools.FormatSize(total))
	}
	full, err := save("")
	if err != nil {
		full = ""
	}
	return tools.TruncateTailOf(text, env.Limits(), lines, size, full, note)
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.spool.Write(p)
	if room := captureHead - len(c.head); room > 0 && len(c.tail) == 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		c.tail = append(c.tail, p...)
		if len(c.tail) > 2*captureTail {
			drop := len(c.tail) - captureTail
			c.dropped += int64(drop)
			c.tail = append(c.tail[:0], c.tail[drop:]...)
		}
	}
	return n, nil
}
