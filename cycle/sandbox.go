package cycle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// sandboxConfig is the setup's sandbox, with the buffer's frontmatter able
// only to turn it on (never off, never wider: the frontmatter package
// refuses anything else).
func (h *Engine) sandboxConfig(fm *frontmatter.Result) sandbox.Config {
	h.mu.Lock()
	cfg := h.cfg
	h.mu.Unlock()
	c, paths := cfg.Sandbox, cfg.Paths
	sc := sandbox.DefaultConfig()
	b := options.Buffer{}
	if fm != nil {
		b.FM = &fm.Opts
	}
	sc.Enabled = options.Resolve(cfg, options.Runtime{}, b).SandboxEnabled
	if c.Backend != "" {
		sc.Backend = c.Backend
	}
	// A list the user set replaces the default; nil keeps it.
	if c.Writable != nil {
		sc.Writable = c.Writable
	}
	if c.DenyRead != nil {
		sc.DenyRead = c.DenyRead
	}
	if c.EnvDeny != nil {
		sc.EnvDeny = c.EnvDeny
	}
	if c.Network != nil {
		sc.Network = *c.Network
	}
	if c.UnixSockets != nil {
		sc.UnixSockets = *c.UnixSockets
	}
	lim := sandbox.DefaultLimits()
	if l := c.Limits; l.Processes != nil {
		lim.Processes = int(*l.Processes)
	}
	if m, ok := sandbox.ParseMemoryLimit(c.Limits.Memory); ok {
		lim.Memory = m
	}
	if l := c.Limits; l.FileSize != nil {
		lim.FileSize = int64(*l.FileSize) << 20
	}
	if l := c.Limits; l.OpenFiles != nil {
		lim.OpenFiles = int(*l.OpenFiles)
	}
	if l := c.Limits; l.CPU != nil {
		lim.CPU = int(*l.CPU)
	}
	sc.Limits = &lim
	// A policy may not approve writing flemma's own state (the trust
	// store, the journal) or Neovim's configuration.
	for _, dir := range []string{paths.State, paths.Config} {
		if dir != "" {
			sc.Protected = append(sc.Protected, dir, dir+"/**")
		}
	}
	// flemma's and the editor's state: no tool reads it, no command sees
	// it (another conversation's journal records, outputs, swap files).
	if paths.State != "" {
		sc.Hidden = append(sc.Hidden, paths.State)
	}
	sc.Hidden = append(sc.Hidden, paths.Private...)
	return sc
}

// sandbox builds the buffer's sandbox for its cwd and file: its writable
// roots are checked against the buffer's pins (a root swapped for a link
// elsewhere is refused), and its own .chat file is protected.
func (sess *session) sandbox(fm *frontmatter.Result, cwd, bufferPath string) (*sandbox.Sandbox, error) {
	h := sess.h
	sc := h.sandboxConfig(fm)
	if bufferPath != "" {
		sc.Protected = append(sc.Protected, bufferPath)
	}
	// The conversation's own full outputs stay readable: its notices
	// name them. Commands keep tool caches in a folder of the project's.
	if state := h.stateDir(); state != "" {
		sc.HiddenExcept = append(sc.HiddenExcept, sandbox.OutputFolder(state, bufferPath))
		sc.CacheDir = sandbox.CacheFolder(state, cwd, bufferPath)
	}
	sess.mu.Lock()
	if sess.pins == nil {
		sess.pins = sandbox.NewRootPins()
	}
	pins := sess.pins
	sess.mu.Unlock()
	return sandbox.New(sc, cwd, bufferPath, sandbox.WithRootPins(pins))
}

// callEnv is the per-call configuration of the built-ins. protect is set
// when a policy, not the user, approved the call (tools.Env.Protect).
func (sess *session) callEnv(fm *frontmatter.Result, cwd, bufferPath string, protect bool) (*tools.Env, error) {
	h := sess.h
	sb, err := sess.sandbox(fm, cwd, bufferPath)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	cfg := h.cfg
	h.mu.Unlock()
	outputDir := h.outputDir
	if state := h.stateDir(); state != "" {
		if dir, err := sandbox.UseOutputFolder(state, bufferPath); err == nil {
			outputDir = dir
		} else {
			h.logf("%v; full outputs go to %s", err, outputDir)
		}
	}
	return &tools.Env{
		Sandbox:        sb,
		Truncate:       tools.Limits{MaxLines: cfg.Tools.Truncate.MaxLines, MaxBytes: cfg.Tools.Truncate.MaxBytes},
		Reads:          h.reads,
		Shell:          cfg.Tools.Bash.Shell,
		ExtraEnv:       cfg.Tools.Bash.Env,
		DefaultTimeout: secs(cfg.Tools.DefaultTimeout),
		OutputDir:      outputDir,
		BackupDir:      h.backupDir(),
		Protect:        protect,
		Fetch: tools.FetchLimits{AllowPrivate: cfg.Tools.Fetch.AllowPrivate, MaxBytes: cfg.Tools.Fetch.MaxBytes,
			Timeout: secs(cfg.Tools.Fetch.Timeout), MaxRedirects: cfg.Tools.Fetch.MaxRedirects},
		AfterWrite: h.afterWrite(),
	}, nil
}

// stateDir is flemma's state folder, "" before the plugin sent it.
func (h *Engine) stateDir() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Paths.State
}

// backupDir is where the files a tool changes are backed up (for
// :Flemma tool:undo): flemma's state folder, or the tools' default when the
// plugin has not sent it.
func (h *Engine) backupDir() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.Paths.State == "" {
		return ""
	}
	return h.cfg.Paths.State + "/backups"
}

// onSandboxStatus is :Flemma sandbox:status.
func (h *Engine) onSandboxStatus(bufnr int) (Reply, error) {
	sess := h.session(bufnr)
	fm, cwd, name := sess.bufferContext()
	sb, err := sess.sandbox(fm, cwd, name)
	if err != nil {
		return reply("none", "sandbox: "+err.Error(), levelError), nil
	}
	r := sess.pathRules(fm, cwd, name)
	r.build()
	reads := "reads by policy (read, grep, find, ls): everywhere deny_read allows"
	if !r.all {
		reads = "reads by policy (read, grep, find, ls): inside the " + r.desc + " (and flemma's full outputs); elsewhere they ask (sandbox.readable adds roots)"
	}
	return text(strings.TrimRight(sb.Status(), "\n") + "\n" + reads), nil
}

// bufferContext evaluates a buffer's frontmatter and returns it with Neovim's
// cwd and the buffer's file name.
func (sess *session) bufferContext() (*frontmatter.Result, string, string) {
	s, err := sess.snapshot()
	if err != nil {
		cwd, _ := os.Getwd()
		return nil, cwd, ""
	}
	return sess.evalFrontmatter(parse(s.Lines)), s.Cwd, s.Name
}

// onSandboxWritable backs ctx.sandbox.is_path_writable for Lua tools.
func (h *Engine) onSandboxWritable(bufnr int, path string) (WritableReply, error) {
	sess := h.session(bufnr)
	fm, cwd, name := sess.bufferContext()
	sb, err := sess.sandbox(fm, cwd, name)
	if err != nil {
		return WritableReply{}, fmt.Errorf("sandbox_writable: %w", err)
	}
	return WritableReply{Writable: sb.IsPathWritable(path)}, nil
}

// onSandboxWrap backs ctx.sandbox.wrap_command for Lua tools. Where no
// sandbox confines commands (disabled, backend "none", bubblewrap missing
// or unusable) it answers nil and why, never the bare command: a tool
// that asked for confinement must not run unconfined believing it is
// (issue 28 item 11; seed 004: "returns nil + error on failure").
func (h *Engine) onSandboxWrap(bufnr int, argv []string) (WrapReply, error) {
	sess := h.session(bufnr)
	fm, cwd, name := sess.bufferContext()
	sb, err := sess.sandbox(fm, cwd, name)
	if err != nil {
		return WrapReply{Error: err.Error()}, nil
	}
	if !sb.Available() {
		_, _, detected := sandbox.DetectBackend()
		why := "sandbox.enabled is false"
		switch {
		case sb.Enabled() && sb.Config().Backend == "none":
			why = `sandbox.backend is "none"`
		case sb.Enabled():
			why = "bubblewrap is not usable here: " + detected
		}
		return WrapReply{Error: "no sandbox confines commands: " + why + "; the command was not wrapped"}, nil
	}
	out, err := sb.WrapCommand(argv)
	if err != nil {
		return WrapReply{Error: err.Error()}, nil
	}
	return WrapReply{Argv: out}, nil
}

// onTruncate backs ctx.truncate.truncate_head / truncate_tail.
func (h *Engine) onTruncate(which, content string, opts TruncateOpts) (TruncateReply, error) {
	h.mu.Lock()
	l := tools.Limits{MaxLines: h.cfg.Tools.Truncate.MaxLines, MaxBytes: h.cfg.Tools.Truncate.MaxBytes}
	h.mu.Unlock()
	if opts.MaxLines != nil {
		l.MaxLines = *opts.MaxLines
	}
	if opts.MaxBytes != nil {
		l.MaxBytes = *opts.MaxBytes
	}
	var t tools.Truncated
	switch which {
	case "head":
		t = tools.TruncateHead(content, l)
	case "tail":
		t = tools.TruncateTail(content, l)
	default:
		return TruncateReply{}, fmt.Errorf("truncate: %q is neither head nor tail", which)
	}
	return TruncateReply{Content: t.Content, Truncated: t.Truncated, By: t.By,
		TotalLines: t.TotalLines, TotalBytes: t.TotalBytes, OutputLines: t.OutputLines, OutputBytes: t.OutputBytes}, nil
}

func (h *Engine) onFormatSize(n float64) (string, error) { return tools.FormatSize(int64(n)), nil }

// sweepOutputs applies the retention of full outputs (sandbox.SweepOutputs)
// once per state folder, in the background.
func (h *Engine) sweepOutputs(state string) {
	h.mu.Lock()
	same := h.swept == state
	h.swept = state
	h.mu.Unlock()
	if state == "" || same {
		return
	}
	go func() {
		if n := sandbox.SweepOutputs(state); n > 0 {
			h.logf("removed %d folders of old full outputs from %s", n, sandbox.OutputsDir(state))
		}
		if n := sandbox.SweepCaches(state); n > 0 {
			h.logf("removed %d folders of old tool caches from %s", n, filepath.Join(state, "cache"))
		}
	}()
}
