package cycle

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/internal/secrets"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/mcp"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

// Engine is the host's work for one editor: the per-buffer state, the
// cycle, the approval chain, the executor and the journal. rpc exposes its
// exported methods as msgpack-RPC handlers and connects it to Neovim.
type Engine struct {
	Version  string
	Log      *log.Logger
	Registry *tools.Registry

	ed        Editor
	lua       Lua
	providers func(name string, cfg provider.Config) (provider.Provider, error)
	resolvers func(approval.Setup) []approval.Resolver
	sleep     func(ctx context.Context, d time.Duration) error // retry waits (nil = a timer)
	jitter    func() float64                                   // retry jitter (nil = math/rand)
	exec      *tools.Executor
	mcp       *mcp.Manager // setup's mcp_servers and their tools in Registry
	fm        *frontmatter.Evaluator
	chain     *approval.Chain

	mu    sync.Mutex
	diffs map[[sha256.Size]byte][]MarkLine // diff previews by diffKey (bounded)
	cfg   options.Config
	// setupProblems are the wrong values of the last setup, each replaced
	// by its fallback (:checkhealth lists them).
	setupProblems []options.Problem
	rt            options.Runtime // :Flemma switch and :Flemma autopilot
	presets       *approval.Presets
	bufs          map[int]*bufState // everything the host keeps of each buffer
	// wiped are the buffers Forget dropped. Neovim never reuses a buffer
	// number, so work that ends after the wipe (a cancelled call, a
	// response) gets a detached state instead of bringing the buffer's
	// entry back.
	wiped         map[int]bool
	reads         *tools.ReadLog // what the model read, per buffer (stale-file protection)
	outputDir     string         // private folder for full outputs of truncated results
	outputCleanup func()         // removes it at shutdown
	swept         string         // the state folder whose outputs were swept
	luaWait       waiters
	editor        *editorState // the editor's tools (nil: no editor answers them)
	refresh       refresher

	jr        *journal.Journal // the crash-recovery journal, nil when unusable
	decisions chan struct{}    // closed when the latest step's decisions are in the audit log (recordDecisions)
	jpath     string           // where it is (or would be)
	jerr      error            // why it is unusable
	jwarned   bool             // the user was told a journal write failed
	jlast     string           // the last journal write that failed, and why (for :checkhealth)
	jreports  []string         // the damage the journal reported at its opening (for :checkhealth)
	closing   bool             // Shutdown was called
	noted     map[string]bool  // model notes given (noteModel): each once
	// luaSources is how many async Lua tool sources are still resolving
	// (SourcesPending): steps wait for zero (sourcesGate).
	luaSources int

	listModels  func(ctx context.Context, name string, cfg provider.Config) ([]string, error)
	loginCancel context.CancelFunc    // the sign-in waiting for GitHub (Login)
	discovered  map[string]*discovery // model lists asked for, per provider (Discover)

	usage usageTotal // every response of this session, all buffers

	idle *sync.Cond // on mu: broadcast when a buffer's work may have ended (WaitIdle)
}

// bufState is everything the host keeps of one buffer, in one place (Forget
// drops it in one place). The buffer text is the state of the conversation;
// this is what the text does not say: the host's copy of it, what was
// evaluated and decided on it, and the work running on it. Its fields are
// read and written with Engine.mu held.
type bufState struct {
	mirror      *mirror                     // the host's copy of the text, as of a changedtick
	fm          *frontmatter.Result         // the latest evaluated frontmatter
	outcomes    map[string]approval.Outcome // tool id -> the decision that categorized it
	trust       *bufTrust                   // what in the buffer counts as the user's
	pins        *sandbox.RootPins           // identity of the buffer's writable roots
	notes       map[string]string           // tool id -> why it waits (a diagnostic on its header)
	attachDiags bool                        // the last send published diagnostics of its attachments
	// attachAsk are the files outside the project the last send asked
	// about; attachAllowed those the user allowed (:Flemma attach:allow).
	attachAsk     []askFile
	attachAllowed map[string]bool
	kept          map[string]tools.Result // finished results whose block changed while they ran
	ran           map[string]ranCall      // tool id -> how its last run in this session ended
	reviewed      map[string]bool         // tool id -> approved from a diff view (true: modified by the user)

	// The work on the buffer.
	running     map[string]context.CancelFunc // tool id -> cancel
	started     map[string]time.Time          // tool id -> when it left the queue
	streaming   context.CancelFunc            // the response being received, if any
	streamEnds  bool                          // the response is all in and being written: a press waits for it
	turns       int                           // consecutive autopilot sends
	disarmed    bool                          // <C-c> stopped autopilot until the next press
	lastUsage   *provider.Usage
	usage       usageTotal      // the buffer's responses in this session
	lastFlushes int             // buffer updates of the last response
	linesRead   int             // lines received from Neovim by snapshots, in all
	lastResult  time.Time       // when the last tool result was written
	cycling     bool            // a cycle step is being planned and written
	queued      bool            // a press came during the step: run it when the step ends
	writeMu     *sync.Mutex     // one result write at a time
	background  int             // goroutines working on the buffer (a response, jobs, a queued step)
	ended       map[string]bool // running calls that ended and are writing their result
	jobsPending int             // job batches that have not yet decided whether autopilot goes on

	// Compaction (compact.go): the changedtick of the text a send was
	// held at to offer it, and the level (1: over the threshold, 2: over
	// the window) the user sent anyway at; attachCompact: the files
	// :Flemma attach:allow allows were asked about by a compaction.
	compactOffered, compactDeclined int
	attachCompact                   bool
	// waiting is the step the buffer takes once the tool sources are
	// ready (sourcesGate); waitAuto: it is autopilot's.
	waiting  waitKind
	waitAuto bool
}

// keepCalls is how many of a buffer's latest calls the host keeps facts
// about for :Flemma tool:list (the decision that categorized each, how its
// run ended): a conversation of 10,000 calls keeps as much as one of
// keepCalls (BenchmarkMemoryPerCall).
const keepCalls = 256

// pruneCalls drops the per-call facts of calls that are no longer in the
// buffer (uses are its calls, in order) or older than its last keepCalls,
// and the notes of calls no longer in it. Call with Engine.mu held.
func (st *bufState) pruneCalls(uses []*buffer.ToolUse) {
	recent := make(map[string]bool, min(len(uses), keepCalls))
	for _, u := range uses[max(0, len(uses)-keepCalls):] {
		recent[u.ID] = true
	}
	for id := range st.outcomes {
		if !recent[id] {
			delete(st.outcomes, id)
		}
	}
	for id := range st.ran {
		if !recent[id] && st.running[id] == nil {
			delete(st.ran, id)
		}
	}
	if len(st.notes) == 0 {
		return
	}
	in := make(map[string]bool, len(uses))
	for _, u := range uses {
		in[u.ID] = true
	}
	for id := range st.notes {
		if !in[id] {
			delete(st.notes, id)
		}
	}
}

// ranCall is how a call's run ended, for :Flemma tool:list.
type ranCall struct {
	duration time.Duration
	isError  bool
	kind     string // the executor's error kind, when isError
}

func (r ranCall) String() string {
	d := r.duration.Round(time.Millisecond)
	if d >= time.Second {
		d = r.duration.Round(100 * time.Millisecond)
	}
	if r.isError {
		return fmt.Sprintf("%s after %s", r.kind, d)
	}
	return fmt.Sprintf("ran in %s", d)
}

// state returns the buffer's state, creating it. Call with h.mu held.
func (h *Engine) state(bufnr int) *bufState {
	st := h.bufs[bufnr]
	if st == nil {
		st = &bufState{running: map[string]context.CancelFunc{}, started: map[string]time.Time{}}
		if !h.wiped[bufnr] {
			h.bufs[bufnr] = st
		}
	}
	return st
}

// Deps are what an engine is built from: cmd/flemma-host wires them (the
// tests wire their own). Every field is required but Sleep and Jitter.
type Deps struct {
	// Registry holds the tools: the built-ins, and the Lua tools the
	// plugin registers later.
	Registry *tools.Registry
	// Providers returns the client of a provider by name, configured for
	// one send (provider.New).
	Providers func(name string, cfg provider.Config) (provider.Provider, error)
	// Resolvers returns the built-in approval resolvers for a setup
	// (approval.Builtins). Every setup() replaces the chain's
	// urn:flemma:approval: resolvers with them; resolvers registered from
	// Lua stay.
	Resolvers func(approval.Setup) []approval.Resolver
	// Sleep and Jitter replace the timer and the randomness of the waits
	// between retries of a send (provider.Retry); nil = the real ones.
	// Tests record the waits instead of sleeping.
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64
	// MCP runs setup's mcp_servers and registers their tools in Registry
	// (mcp.New(Registry, …)); nil makes one with real transports.
	MCP *mcp.Manager
	// ListModels asks a provider's server for its models (Discover);
	// nil = provider.ListModels.
	ListModels func(ctx context.Context, name string, cfg provider.Config) ([]string, error)
}

// NewEngine returns an engine with default configuration; Connect gives it
// its editor. It panics when a dependency is missing (a wiring mistake).
func NewEngine(version string, logger *log.Logger, d Deps) *Engine {
	if d.Registry == nil || d.Providers == nil || d.Resolvers == nil {
		panic("cycle.NewEngine: Deps needs a Registry, Providers and Resolvers")
	}
	reg := d.Registry
	h := &Engine{
		Version:   version,
		Log:       logger,
		Registry:  reg,
		providers: d.Providers,
		resolvers: d.Resolvers,
		sleep:     d.Sleep,
		jitter:    d.Jitter,
		fm:        frontmatter.NewEvaluator(frontmatter.Limits{}),
		bufs:      map[int]*bufState{},
		wiped:     map[int]bool{},
	}
	h.idle = sync.NewCond(&h.mu)
	h.listModels = d.ListModels
	if h.listModels == nil {
		h.listModels = provider.ListModels
	}
	h.mcp = d.MCP
	if h.mcp == nil {
		h.mcp = mcp.New(reg, h.logf)
	}
	h.exec = &tools.Executor{Registry: reg, Logf: h.logf}
	h.reads = tools.NewReadLog()
	if dir, cleanup, err := sandbox.NewOutputDir(); err == nil {
		h.outputDir, h.outputCleanup = dir, cleanup
	} else {
		h.logf("no private output folder (%v); full outputs go to the temp dir", err)
	}
	h.chain = approval.NewChain(h.logf)
	if err := h.configure(options.DefaultConfig()); err != nil {
		h.logf("default configuration: %v", err)
	}
	return h
}

// background runs fn in a goroutine counted as the buffer's work (Busy).
func (h *Engine) background(bufnr int, fn func()) {
	h.mu.Lock()
	st := h.state(bufnr)
	st.background++
	h.mu.Unlock()
	go func() {
		defer func() {
			h.mu.Lock()
			st.background--
			h.idle.Broadcast()
			h.mu.Unlock()
		}()
		fn()
	}()
}

// Busy reports whether anything works on a buffer: a step, a response,
// running tools, or the step autopilot or a queued press is about to take.
func (h *Engine) Busy(bufnr int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.bufs[bufnr]
	return st != nil && (st.cycling || st.streaming != nil || len(st.running) > 0 || st.background > 0 || st.waiting != waitNone)
}

// WaitIdle blocks until nothing works on a buffer (Busy is false): the
// step in progress, the response, the running calls and every step
// autopilot chains after them have ended. It is how a caller without an
// editor waiting on the user (headless runs) knows the cycle stopped.
func (h *Engine) WaitIdle(bufnr int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		st := h.bufs[bufnr]
		if st == nil || !(st.cycling || st.streaming != nil || len(st.running) > 0 || st.background > 0 || st.waiting != waitNone) {
			return
		}
		h.idle.Wait()
	}
}

// Logf writes to the host's log (rpc logs through it too).
func (h *Engine) Logf(format string, args ...any) { h.logf(format, args...) }

func (h *Engine) logf(format string, args ...any) {
	if h.Log != nil {
		h.Log.Print(secrets.Default.Redact(fmt.Sprintf(format, args...)))
	}
}

// Connect gives the engine its editor and the Lua it calls back; it must
// be called before any other method.
func (h *Engine) Connect(ed Editor, lua Lua) {
	h.ed, h.lua = ed, lua
	h.connectEditor(lua)
}

func (h *Engine) VersionInfo() (VersionReply, error) {
	return VersionReply{Version: h.Version}, nil
}

// Setup installs the plugin's configuration, which the plugin sends as JSON
// (lua/flemma/config.lua for_host), key by key: a wrong value is replaced
// by its fallback (the default, or the stricter choice) and every other
// key applies. The error lists what was replaced, for the user to see; the
// configuration is installed all the same.
func (h *Engine) Setup(configJSON string) error {
	cfg, probs, err := options.Decode(configJSON)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.setupProblems = probs
	h.mu.Unlock()
	cerr := h.configure(cfg)
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.String())
	}
	if cerr != nil {
		msgs = append(msgs, cerr.Error())
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// configure installs a configuration: the approval chain is rebuilt from it.
func (h *Engine) configure(cfg options.Config) error {
	user := map[string]approval.PresetDef{}
	for name, p := range cfg.Tools.Presets {
		user[name] = approval.PresetDef{Approve: p.Approve, Deny: p.Deny}
	}
	presets, errs := approval.NewPresets(user, h.Registry.Tagged)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	setup := approval.Setup{
		RequireApproval:      cfg.Tools.RequireApproval == nil || *cfg.Tools.RequireApproval,
		AutoApproveSandboxed: cfg.Tools.AutoApproveSandboxed == nil || *cfg.Tools.AutoApproveSandboxed,
		Presets:              presets,
	}
	if list, ok := cfg.AutoApproveList(); ok {
		setup.AutoApprove = list
	} else if path, ok := cfg.AutoApproveModule(); ok {
		setup.Modules = []approval.Resolver{&approval.FuncResolver{N: path, P: approval.ConfigPriority,
			Desc: "tools.auto_approve module " + path, Fn: h.luaResolve("module", path)}}
	} else if cfg.AutoApproveIsFunction() {
		setup.AutoApproveFunc = h.luaResolve("config", "tools.auto_approve")
	} else {
		msgs = append(msgs, "tools.auto_approve must be a list, a function or a module path")
	}

	// Every configured credential joins the one redaction set
	// (notifications, the log, tool output): header values of providers
	// and MCP servers here; keys when they are resolved (provider).
	for _, p := range cfg.Providers {
		for _, v := range p.Headers {
			secrets.Default.AddHeader(v)
		}
	}
	for _, m := range cfg.MCPServers {
		for _, v := range m.Headers {
			secrets.Default.AddHeader(v)
		}
	}
	// A stored GitHub sign-in (ours, or an existing Copilot install's)
	// joins the set as it is read.
	cp := cfg.Providers["copilot"]
	_, _, _ = copilotConfig(cfg.Paths.Data, options.Endpoint{GitHubURL: cp.GitHubURL, GitHubAPIURL: cp.GitHubAPIURL}).OAuthToken()

	// Servers start later, when a request needs the tool list.
	servers := map[string]mcp.ServerConfig{}
	for name, c := range cfg.MCPServers {
		servers[name] = mcp.ServerConfig(c)
	}
	if err := h.mcp.Configure(servers, cfg.Sandbox.EnvDeny); err != nil {
		msgs = append(msgs, err.Error())
	}

	h.mu.Lock()
	h.cfg = cfg
	h.presets = presets
	h.discovered = nil // a new setup may point a provider elsewhere: ask again
	h.mu.Unlock()
	h.openJournal(cfg.Paths.State)
	h.sweepOutputs(cfg.Paths.State)
	sandbox.DefaultFeatures.Configure(h.sandboxConfig(nil))

	// Built-in resolvers are replaced; resolvers registered from Lua stay.
	for _, r := range h.chain.All() {
		if strings.HasPrefix(r.Name(), "urn:flemma:approval:") {
			h.chain.Unregister(r.Name())
		}
	}
	for _, r := range h.resolvers(setup) {
		h.chain.Register(r)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func (h *Engine) Health() (HealthReply, error) {
	type line = HealthLine
	var lines []line
	names := h.Registry.Names()
	h.mu.Lock()
	probs := h.setupProblems
	h.mu.Unlock()
	for _, p := range probs {
		lines = append(lines, line{"warn", "setup " + p.String()})
	}
	lines = append(lines, line{"ok", fmt.Sprintf("%d tools registered: %s", len(names), strings.Join(names, ", "))})
	var hidden []string
	for _, t := range h.Registry.All() {
		if miss := h.Registry.Missing(t); len(miss) > 0 {
			hidden = append(hidden, fmt.Sprintf("%s (missing %s)", t.Spec().Name, strings.Join(miss, ", ")))
		}
	}
	if len(hidden) > 0 {
		lines = append(lines, line{"warn", "hidden tools: " + strings.Join(hidden, "; ")})
	}
	lines = append(lines, line{"info", fmt.Sprintf("approval resolvers: %s", h.resolverNames())})
	if name, ok, why := sandbox.DetectBackend(); ok {
		lines = append(lines, line{"ok", fmt.Sprintf("sandbox backend: %s (works)", name)})
	} else {
		lines = append(lines, line{"warn", fmt.Sprintf("no working sandbox backend (%s): bash is never auto-approved by the sandbox resolver", why)})
	}
	if state := h.stateDir(); state != "" {
		lines = append(lines, line{"ok", fmt.Sprintf("full outputs of truncated results are kept in %s (one folder per conversation, %d days after its last use, %s in all, the first %s of each output)",
			sandbox.OutputsDir(state), int(sandbox.OutputMaxAge.Hours()/24), tools.FormatSize(sandbox.OutputMaxBytes), tools.FormatSize(sandbox.FullOutputCap))})
	} else if h.outputDir != "" {
		lines = append(lines, line{"ok", "full outputs of truncated results go to " + h.outputDir})
	}
	lines = append(lines, h.journalHealth()...)
	// Each configured provider: where its credential comes from and
	// whether that source is there (never the value; no command is run).
	h.mu.Lock()
	cfg, rt := h.cfg, h.rt
	h.mu.Unlock()
	active := options.Resolve(cfg, rt, options.Buffer{}).Provider
	for _, name := range cfg.ProviderNames() {
		if name == "replay" {
			continue
		}
		e := options.Resolve(cfg, options.Runtime{Provider: name}, options.Buffer{})
		_, _, pc := h.request(e)
		what := name
		if pc.Wire != "" {
			what = fmt.Sprintf("%s (%s", name, pc.Wire)
			if pc.BaseURL != "" {
				what += " at " + pc.BaseURL
			}
			what += ")"
		}
		if ok, src := provider.CredentialStatus(name, pc); ok {
			lines = append(lines, line{"ok", fmt.Sprintf("%s credentials present (%s)", what, src)})
		} else if name == active {
			// The provider a press sends to: nothing can be sent.
			lines = append(lines, line{"warn", fmt.Sprintf("%s credentials not set (%s): the active provider cannot send", what, src)})
		} else {
			lines = append(lines, line{"info", fmt.Sprintf("%s credentials not set (%s)", what, src)})
		}
	}
	return HealthReply{Version: h.Version, Lines: lines}, nil
}

func (h *Engine) resolverNames() string {
	var parts []string
	for _, r := range h.chain.All() {
		parts = append(parts, fmt.Sprintf("%s (%d)", r.Name(), r.Priority()))
	}
	return strings.Join(parts, ", ")
}

func (h *Engine) Tools(bufnr int, filter string) (Reply, error) {
	// The same answers the cycle uses: the buffer's tools (setup narrowed
	// by its frontmatter) and the approval chain with the buffer's
	// frontmatter and sandbox, for a call the model makes in this session
	// with no input (rules on the input, such as bash(git *) or protected
	// paths, can still change the decision for a given call).
	h.ensureMCP()
	fm, _, _ := h.bufferContext(bufnr)
	eff := h.effective(bufnr, fm)
	ctx := frontmatter.WithBudget(context.Background(), h.fm.NewBudget())
	var b strings.Builder
	for _, t := range h.Registry.Search(filter) {
		s := t.Spec()
		status := "enabled"
		switch {
		case len(h.Registry.Missing(t)) > 0:
			status = "hidden: missing " + strings.Join(h.Registry.Missing(t), ", ")
		case !eff.HasTool(s.Name) && !s.Enabled:
			status = "disabled by default"
		case !eff.HasTool(s.Name):
			status = "not selected in this buffer (flemma.opt.tools)"
		}
		out := h.chain.Decide(ctx, h.approvalCall(bufnr, &buffer.ToolUse{Name: s.Name, Input: map[string]any{}}, fm))
		limit, from := toolTimeouts(eff).For(s)
		timeout := tools.FormatTimeout(limit) + " (" + from + ")"
		if _, isChain := t.(*chainTool); isChain && limit >= chainNoTimeout {
			timeout = "none of its own (each step has its tool's)"
		}
		fmt.Fprintf(&b, "%s  [%s]  %s  tags: %s  timeout: %s  approval: %s\n", s.Name, s.Source, status, strings.Join(s.Tags, ","), timeout, out)
		fmt.Fprintf(&b, "  %s\n", s.Description)
		for _, l := range schemaLines(s.InputSchema) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		if ct, ok := t.(*chainTool); ok {
			fmt.Fprintf(&b, "  chain steps (each also decided on its own): %s\n", ct.stepsLine())
		}
	}
	if b.Len() > 0 {
		b.WriteString("(approval: for a call the model makes in this session; calls found in the file always ask)\n")
		h.mu.Lock()
		presets := h.presets
		h.mu.Unlock()
		b.WriteString("presets (tools.auto_approve, flemma.opt.tools.auto_approve):\n")
		for _, name := range presets.Names() {
			def, _ := presets.Get(name)
			line := "  " + name + ": " + strings.Join(def.Approve, ", ")
			if len(def.Deny) > 0 {
				line += "; deny " + strings.Join(def.Deny, ", ")
			}
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return text(fmt.Sprintf("no tools match %q", filter)), nil
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

func (h *Engine) Status(bufnr int) (StatusReply, error) {
	s, err := h.snapshot(bufnr)
	var fm *frontmatter.Result
	if err == nil {
		fm = h.evalFrontmatter(bufnr, parse(s.Lines))
	}
	eff := h.effective(bufnr, fm)
	name, params, pcfg := h.request(eff)
	info := h.modelInfo(name, params.Model)
	auto := eff.Autopilot
	h.mu.Lock()
	st := h.state(bufnr)
	usage, turns := st.lastUsage, st.turns
	bufTotal, allTotal := st.usage, h.usage
	h.mu.Unlock()
	var tools []string
	for _, d := range h.toolDefs(eff) {
		tools = append(tools, d.Name)
	}
	cred, src := provider.CredentialStatus(name, pcfg)
	credText := "missing"
	if cred {
		credText = "from " + src
	}
	h.mu.Lock()
	cfg := h.cfg
	h.mu.Unlock()
	wire := cfg.Wire(name)
	maxTokens := fmt.Sprint(params.MaxTokens)
	switch {
	case params.MaxTokens > 0 && info.MaxOutputTokens > 0 && params.MaxTokens > info.MaxOutputTokens:
		maxTokens += fmt.Sprintf(" (%d is sent: the model's limit)", info.MaxOutputTokens)
	case params.MaxTokens > 0:
	case provider.MaxTokens(wire, params, info) == 0:
		maxTokens = "(not sent: the server's default)"
	default:
		maxTokens = fmt.Sprintf("%d (default)", provider.MaxTokens(wire, params, info))
	}
	// What is sent: an unset thinking is the providers' "high" (issue 27
	// item 8: it showed thinking="" while adaptive thinking was sent).
	thinkingText := strconv.Quote(params.Thinking)
	if strings.TrimSpace(params.Thinking) == "" {
		thinkingText = `"high" (the default)`
	}
	out := fmt.Sprintf("provider: %s  model: %s  credentials: %s\nparameters: max_tokens=%s thinking=%s cache_retention=%q\n%s\nautopilot: %v (turns %d)  tools.mode: %s\ntools in this buffer: %s\nresolvers: %s",
		name, modelLabel(cfg, name, params.Model), credText, maxTokens, thinkingText, params.CacheRetention, describeModel(wire, params, info), auto, turns, h.mode(), strings.Join(tools, ", "), h.resolverNames())
	if usage != nil {
		out += fmt.Sprintf("\nlast response: %d input · %d output tokens", usage.InputTokens, usage.OutputTokens)
		if usage.CacheReadTokens > 0 || usage.CacheWriteTokens > 0 {
			out += fmt.Sprintf(" · cache %d read, %d written", usage.CacheReadTokens, usage.CacheWriteTokens)
		}
	}
	if bufTotal.Requests > 0 {
		out += "\nthis buffer, this session: " + bufTotal.String()
	}
	if allTotal.Requests > bufTotal.Requests {
		out += "\nall buffers, this session: " + allTotal.String()
	}
	if err == nil {
		out += "\n" + h.estimate(bufnr, parse(s.Lines), eff).String()
	}
	h.mu.Lock()
	flushes, lastResult, read := st.lastFlushes, st.lastResult, st.linesRead
	h.mu.Unlock()
	r := StatusReply{Text: out, LastFlushes: flushes, LinesRead: read, Busy: h.Busy(bufnr)}
	if !lastResult.IsZero() {
		r.LastResultUnixNS = lastResult.UnixNano()
	}
	return r, nil
}

func (h *Engine) ToolList(bufnr int) (Reply, error) {
	s, err := h.snapshot(bufnr)
	if err != nil {
		return Reply{}, err
	}
	doc := parse(s.Lines)
	var b strings.Builder
	h.mu.Lock()
	running := map[string]bool{}
	var outcomes map[string]approval.Outcome
	var ran map[string]ranCall
	var started map[string]time.Time
	if st := h.bufs[bufnr]; st != nil {
		for id := range st.running {
			running[id] = true
		}
		outcomes, ran, started = st.outcomes, st.ran, st.started
	}
	for _, tu := range doc.ToolUses() {
		state := "no result"
		if r := doc.Result(tu.ID); r != nil {
			switch {
			case running[tu.ID] && r.Status != "":
				state = "running" // (a written result is a result, even a moment before the step ends)
			case r.Status != "":
				state = string(r.Status)
			case r.IsError:
				state = "error result"
			default:
				state = "result"
			}
		}
		if r, ok := ran[tu.ID]; ok && state != "running" {
			state += " (" + r.String() + ")"
		} else if t, ok := started[tu.ID]; ok && state == "running" {
			state += fmt.Sprintf(" (%s)", time.Since(t).Round(100*time.Millisecond))
		}
		prov := ""
		if rec := h.trustOf(bufnr).ledger.Get(tu.ID); rec.By == trust.ByUser || rec.By == trust.ByUserEdit {
			prov = "  — " + string(rec.Status) + " by you" // not what the policy said before
		} else if o, ok := outcomes[tu.ID]; ok {
			prov = "  — " + o.String()
		}
		fmt.Fprintf(&b, "line %d: %s (%s): %s%s\n", tu.HeaderLine, tu.Name, tu.ID, state, prov)
	}
	h.mu.Unlock()
	if b.Len() == 0 {
		return text("no tool calls in this buffer"), nil
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

// Shutdown stops the engine's work before the host exits (Neovim closed
// the channel, or a signal): every running call and response is cancelled;
// rpc.Host.Shutdown then kills every command tree of the process. Calls
// stopped this way stay unfinished in the journal — they were interrupted,
// and the next press in the buffer says so instead of taking the killed
// command's output for its result.
func (h *Engine) Shutdown() {
	h.mu.Lock()
	h.closing = true
	for _, st := range h.bufs {
		for _, cancel := range st.running {
			cancel()
		}
		if st.streaming != nil {
			st.streaming()
		}
	}
	jr, decisions := h.jr, h.decisions
	h.mu.Unlock()
	if decisions != nil {
		<-decisions // the decisions already made are in the audit log
	}
	h.mcp.Close()
	if h.outputCleanup != nil {
		h.outputCleanup()
	}
	// What is queued is committed; what comes later fails (and is only
	// logged): the calls stopped here stay unfinished — interrupted.
	if jr != nil {
		jr.Close()
	}
}

// closingNow reports whether Shutdown was called.
func (h *Engine) closingNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing
}

// Forget drops everything the host holds for a wiped buffer, cancelling its
// running tools and its response first.
func (h *Engine) Forget(bufnr int) {
	h.mu.Lock()
	dropped := false
	if st := h.bufs[bufnr]; st != nil {
		dropped = st.waiting != waitNone
		for _, cancel := range st.running {
			cancel()
		}
		if st.streaming != nil {
			st.streaming()
		}
	}
	delete(h.bufs, bufnr)
	h.wiped[bufnr] = true
	h.idle.Broadcast()
	h.mu.Unlock()
	h.reads.Forget(bufnr)
	if dropped {
		h.notify(fmt.Sprintf("The step of buffer %d that waited for the tool definitions to load was dropped: the buffer was closed.", bufnr), levelWarn)
	}
}

// schemaLines renders a tool's input schema for people (:Flemma tools):
// one line per parameter, the required ones first, with its type and the
// first line of its description (issue 27 item 8: it was one line of JSON).
func schemaLines(schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return []string{"parameters: none"}
	}
	required := map[string]bool{}
	var names []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && props[n] != nil && !required[n] {
				required[n] = true
				names = append(names, n)
			}
		}
	} else if rs, ok := schema["required"].([]string); ok {
		for _, n := range rs {
			if props[n] != nil && !required[n] {
				required[n] = true
				names = append(names, n)
			}
		}
	}
	var rest []string
	for n := range props {
		if !required[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	out := []string{"parameters:"}
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		typ := schemaType(p)
		if required[n] {
			typ += ", required"
		}
		desc, _ := p["description"].(string)
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			desc = desc[:i] + " …"
		}
		if r := []rune(desc); len(r) > 100 {
			desc = string(r[:99]) + "…"
		}
		out = append(out, strings.TrimRight(fmt.Sprintf("  %-*s  %s  %s", width, n, typ, desc), " "))
	}
	return out
}

// schemaType is a parameter's type in words: "string", "integer | null",
// "array of string", "one of a, b".
func schemaType(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
		var vs []string
		for _, v := range enum {
			vs = append(vs, fmt.Sprint(v))
		}
		return "one of " + strings.Join(vs, ", ")
	}
	var typ string
	switch t := p["type"].(type) {
	case string:
		typ = t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		typ = strings.Join(ts, " | ")
	default:
		typ = "any"
	}
	if typ == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			typ = "array of " + schemaType(items)
		}
	}
	return typ
}
