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
	def, max := env.Timeouts()
	timeout := def
	if in.Timeout != nil && *in.Timeout > 0 {
		timeout = time.Duration(*in.Timeout * float64(time.Second))
	}
	timeout = min(timeout, max)

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

	// Under bubblewrap the writable roots are the only place the command
	// can change: snapshot them to list what it created, changed, deleted.
	var track, skip []string
	var before rootSnapshot
	var pre preimages
	backups := backupsOf(env)
	if sb.Backend() == "bwrap" {
		dirs := []string{sandbox.CanonicalOr(env.WorkDir(call))}
		if call.Buffer != "" {
			dirs = append(dirs, sandbox.CanonicalOr(filepath.Dir(call.Buffer)))
		}
		track = trackedRoots(sb.Roots(), dirs...)
		skip = []string{sandbox.CanonicalOr(env.OutputDirOrDefault())}
		if env.BackupDir != "" {
			skip = append(skip, sandbox.CanonicalOr(filepath.Dir(env.BackupDir))) // the state folder: backups, journal
		}
		if env.BackupDir == "" {
			if d, err := DefaultBackupDir(); err == nil {
				skip = append(skip, sandbox.CanonicalOr(d))
			}
		}
		before = snapshotRoots(track, skip, sb.DeniedEntry)
		// The previous content of what the command may change, for
		// :Flemma tool:undo (see preserveFiles).
		pre = preserveFiles(backups, before)
	}
	var changes []tools.Change
	tracked := func() string {
		if track == nil {
			return ""
		}
		after := snapshotRoots(track, skip, nil)
		c := compareSnapshots(before, after)
		changes = c.undoable(before, after, pre, backups)
		out := ""
		if t := c.text(env.WorkDir(call)); t != "" {
			out = "\n\n" + t
		}
		// Approved by a policy: what it did to protected paths and
		// executable bits is put right now (see guardProtected).
		if sb.Protecting() {
			g := guardProtected(sb, c, before, after, changes, backups, call.ID)
			kept := changes[:0]
			for _, ch := range changes {
				if !g.drop[ch.Path] {
					kept = append(kept, ch)
				}
			}
			changes = kept
			if t := g.text(env.WorkDir(call)); t != "" {
				out += "\n\n" + t
			}
		}
		return out
	}

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
		reason := sandbox.FSReason(err)
		switch {
		case errors.Is(err, exec.ErrNotFound):
			reason = argv[0] + " not found"
		case errors.Is(err, sandbox.ErrShuttingDown):
			reason = err.Error()
		}
		if reason == "" {
			return tools.Output{}, &tools.Internal{Err: err}
		}
		return tools.Output{}, tools.Failf("Failed to start command: %s", reason)
	}

	// Everything the command writes is counted and saved (up to a cap)
	// as it comes: the full output a notice names, exact counts.
	out := capture{spool: tools.NewSpool(env.OutputDirOrDefault(), env)}
	defer out.spool.Discard()
	copied := make(chan struct{})
	go func() {
		io.Copy(&out, pr)
		close(copied)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut, canceled := false, false
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
	if canceled {
		return tools.Output{}, ctx.Err()
	}

	text := out.present(env, call)
	if timedOut {
		msg := "Command timed out after " + formatSeconds(timeout) + " seconds."
		if text != "" {
			msg = text + "\n\n" + msg
		}
		return tools.Output{Changes: changes}, errors.New(msg + tracked())
	}
	if text == "" {
		text = "(no output)"
	}
	<-proc.Done()
	code, signal, err := proc.Exit()
	switch {
	case err != nil:
		return tools.Output{}, &tools.Internal{Err: err}
	case proc.LimitHit() != "":
		err := fmt.Errorf("%s\n\n%s%s", text, limitMessage(proc.LimitHit(), lim), tracked())
		return tools.Output{Changes: changes}, err
	case signal != "":
		err := fmt.Errorf("%s\n\nCommand was terminated by a signal (%s)%s", text, signal, tracked())
		return tools.Output{Changes: changes}, err
	case code != 0:
		err := fmt.Errorf("%s\n\nCommand exited with code %d%s", text, code, tracked())
		return tools.Output{Changes: changes}, err
	}
	text += tracked()
	return tools.Output{Text: text, Changes: changes}, nil
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
