package cycle

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/internal/secrets"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/mcp"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
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
	bufs          map[int]*session // everything the host keeps of each buffer
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
	proposer    tools.Proposer        // the file-changing tools' proposals and undo (Deps.Proposer)
	loginCancel context.CancelFunc    // the sign-in waiting for GitHub (Login)
	discovered  map[string]*discovery // model lists asked for, per provider (Discover)

	usage usageTotal // every response of this session, all buffers
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
	// Proposer computes what a pending write or edit would leave in its
	// file (the diff review) and undoes a change (:Flemma undo): the
	// built-ins' (tools/builtin.Proposer), which the engine never imports.
	// nil: no call is previewed as a diff and nothing can be undone.
	Proposer tools.Proposer
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
		bufs:      map[int]*session{},
		wiped:     map[int]bool{},
	}
	h.proposer = d.Proposer
	if h.proposer == nil {
		h.proposer = noProposer{}
	}
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

// config is the configuration of the latest setup.
func (h *Engine) config() options.Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// addUsage counts a response in the session's total, all buffers.
func (h *Engine) addUsage(u *provider.Usage, cost float64, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.add(u, cost, known)
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

func (h *Engine) onVersionInfo() (VersionReply, error) {
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

// Shutdown stops the engine's work before the host exits (Neovim closed
// the channel, or a signal): every running call and response is cancelled;
// rpc.Host.Shutdown then kills every command tree of the process. Calls
// stopped this way stay unfinished in the journal — they were interrupted,
// and the next press in the buffer says so instead of taking the killed
// command's output for its result.
func (h *Engine) Shutdown() {
	h.mu.Lock()
	h.closing = true
	jr, decisions := h.jr, h.decisions
	h.mu.Unlock()
	for _, st := range h.sessions() {
		st.mu.Lock()
		st.stop()
		st.mu.Unlock()
	}
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
	st := h.bufs[bufnr]
	delete(h.bufs, bufnr)
	h.wiped[bufnr] = true
	h.mu.Unlock()
	dropped := false
	if st != nil {
		st.mu.Lock()
		dropped = st.waiting != waitNone
		st.stop()
		st.forgotten = true
		st.cond.Broadcast()
		st.mu.Unlock()
	}
	h.reads.Forget(bufnr)
	if dropped {
		h.notify(fmt.Sprintf("The step of buffer %d that waited for the tool definitions to load was dropped: the buffer was closed.", bufnr), levelWarn)
	}
}
