package cycle

// The protocol between the plugin and the host: every method the plugin
// calls and the shape of its answer. lua/flemma/protocol.lua declares the
// same names; rpc registers Methods as msgpack-RPC handlers.
//
// One error rule: a failure of the host (the buffer could not be read, a
// write kept failing, bad arguments) is an RPC error whose text starts with
// the operation ("cycle: read buffer 3: …"; rpc adds the prefix to every
// handler); everything the user should read about the outcome of an action
// (nothing to do, busy, refused, done) is in the reply's Message with its
// Level, and the Lua side shows it.

// Method names.

import "github.com/flemma-dev/flemma/internal/secrets"

const (
	MVersion            = "flemma.version"
	MPing               = "flemma.ping"
	MSetup              = "flemma.setup"
	MHealth             = "flemma.health"
	MAsync              = "flemma.async"
	MCycle              = "flemma.cycle"
	MSend               = "flemma.send"
	MCompact            = "flemma.compact"
	MEstimate           = "flemma.estimate"
	MExecuteAt          = "flemma.execute_at"
	MSetStatus          = "flemma.set_status"
	MSetResult          = "flemma.set_result"
	MCancel             = "flemma.cancel"
	MCancelAt           = "flemma.cancel_at"
	MResume             = "flemma.resume"
	MDiscard            = "flemma.discard"
	MUndo               = "flemma.undo"
	MAttachAllow        = "flemma.attach_allow"
	MAllowAlways        = "flemma.allow_always" // (bufnr, line): :Flemma tool:allow-always (always.go)
	MDiff               = "flemma.diff"
	MReview             = "flemma.review"
	MSetStatusID        = "flemma.set_status_id"
	MToolList           = "flemma.tool_list"
	MTools              = "flemma.tools"
	MMCP                = "flemma.mcp"
	MStatus             = "flemma.status"
	MJournalLog         = "flemma.journal_log"
	MSandboxStatus      = "flemma.sandbox_status"
	MSwitch             = "flemma.switch"
	MModels             = "flemma.models"
	MDiscover           = "flemma.discover"
	MLogin              = "flemma.login"
	MAutopilot          = "flemma.autopilot"
	MSandboxWritable    = "flemma.sandbox_writable"
	MSandboxWrap        = "flemma.sandbox_wrap"
	MTruncate           = "flemma.truncate"
	MFormatSize         = "flemma.format_size"
	MForget             = "flemma.forget"
	MRefresh            = "flemma.refresh"
	MDefineTools        = "flemma.define_tools"
	MDefineChains       = "flemma.define_chains"
	MApprovalRegister   = "flemma.approval_register"
	MApprovalUnregister = "flemma.approval_unregister"
	MApprovalList       = "flemma.approval_list"
	MToolDone           = "flemma.tool_done"
	MEditorDone         = "flemma.editor_done"
	MSourcesPending     = "flemma.sources_pending"
	MSetStatusAll       = "flemma.set_status_all"
)

// Method is one handler: Fn is a method of the engine, with the arguments
// the plugin sends (ints, strings, bools, and the structs below) and
// (reply, error) or error as results. Async methods are the user's actions:
// the plugin sends them through the flemma.async notification so that a
// key press never waits on the host.
type Method struct {
	Name  string
	Fn    any
	Async bool
}

// orderedMethods change what the requests after them see: the
// configuration, the tools and chains, the resolvers, the session's
// overrides, the count of tool sources still loading (two counts served
// out of order — a source that timed out while the host started — left
// the gate closed for good).
var orderedMethods = map[string]bool{
	MSetup: true, MDefineTools: true, MDefineChains: true, MApprovalRegister: true,
	MApprovalUnregister: true, MSwitch: true, MAutopilot: true, MSourcesPending: true,
}

// Ordered reports whether the method must be done before the host serves
// anything the plugin sent after it. Through flemma.async (which the
// plugin uses for every request, so that a hung host never holds Neovim),
// an ordered method runs before the host reads its next message; the
// others run beside each other, each in its goroutine. So a setup() or a
// tool registration followed by a press is served in that order.
func (m Method) Ordered() bool { return orderedMethods[m.Name] }

// Methods is the engine's whole protocol (flemma.async itself is rpc's).
// Each handler is the engine's on<Name> method, reached only through this
// table; the few the host's other callers need (headless runs, rpc) are
// the engine's exported methods.
func (h *Engine) Methods() []Method {
	return append([]Method{
		{MVersion, h.onVersionInfo, false},
		{MPing, func() (string, error) { return "pong", nil }, false},
		{MSetup, h.Setup, false},
		{MHealth, h.onHealth, false},
		{MCycle, h.Cycle, true},
		{MSend, h.onSend, true},
		{MCompact, h.onCompact, true},
		{MEstimate, h.onEstimate, true},
		{MExecuteAt, h.onExecuteAt, true},
		{MSetStatus, h.SetStatus, true},
		{MSetResult, h.onSetResult, true},
		{MCancel, h.Cancel, true},
		{MCancelAt, h.onCancelAt, true},
		{MResume, h.onResume, true},
		{MDiscard, h.onDiscard, true},
		{MUndo, h.onUndo, true},
		{MAttachAllow, h.onAttachAllow, true},
		{MAllowAlways, h.onAllowAlways, true},
		{MDiff, h.onDiffAt, true},
		{MReview, h.onReview, true},
		{MSetStatusID, h.onSetStatusID, true},
		{MToolList, h.onToolList, true},
		{MTools, h.onTools, true},
		{MMCP, h.onMCP, true},
		{MStatus, h.onStatus, true},
		{MJournalLog, h.onJournalLog, true},
		{MSandboxStatus, h.onSandboxStatus, true},
		{MSwitch, h.onSwitch, true},
		{MModels, h.onModels, false},
		{MDiscover, h.onDiscover, true},
		{MLogin, h.onLogin, true},
		{MAutopilot, h.Autopilot, true},
		{MSandboxWritable, h.onSandboxWritable, false},
		{MSandboxWrap, h.onSandboxWrap, false},
		{MTruncate, h.onTruncate, false},
		{MFormatSize, h.onFormatSize, false},
		{MForget, h.Forget, false},
		{MRefresh, h.onRefresh, false},
		{MDefineTools, h.onDefineTools, false},
		{MDefineChains, h.onDefineChains, false},
		{MApprovalRegister, h.onApprovalRegister, false},
		{MApprovalUnregister, h.onApprovalUnregister, false},
		{MApprovalList, h.onApprovalList, false},
		{MToolDone, h.onToolDone, false},
		{MEditorDone, h.onEditorDone, false},
		{MSourcesPending, h.onSourcesPending, false},
		{MSetStatusAll, h.onSetStatusAll, true},
	}, benchMethods(h)...)
}

// Reply answers a user's action (a key, a command). Phase names what
// happened (categorize, execute, send, pending, busy, none, …); Message,
// when set, is shown with Level (vim.log.levels); Text is a listing the
// plugin shows whole (:Flemma tools, tool:list, tool:log, sandbox:status).
type Reply struct {
	Phase   string `msgpack:"phase,omitempty"`
	Message string `msgpack:"message,omitempty"`
	Level   int    `msgpack:"level,omitempty"`
	Text    string `msgpack:"text,omitempty"`
	// URL and Code: a sign-in's page and the code to enter there
	// (:Flemma login; the plugin opens the page).
	URL  string `msgpack:"url,omitempty"`
	Code string `msgpack:"code,omitempty"`
}

func reply(phase, msg string, level int) Reply {
	r := Reply{Phase: phase}
	if msg != "" {
		r.Message, r.Level = secrets.Default.Redact(msg), level
	}
	return r
}

// text is a listing.
func text(s string) Reply { return Reply{Text: s} }

// StatusReply is :Flemma status, with counters the tests read.
type StatusReply struct {
	Text             string `msgpack:"text"`
	LastFlushes      int    `msgpack:"last_flushes"`                  // buffer updates of the last response
	LinesRead        int    `msgpack:"lines_read"`                    // lines received from Neovim for the buffer
	LastResultUnixNS int64  `msgpack:"last_result_unix_ns,omitempty"` // when the last tool result was written
	// Busy: the buffer has work in progress (a step, a response, running
	// calls, or a step autopilot is about to take); false means nothing
	// will change the buffer until the next action.
	Busy bool `msgpack:"busy"`
}

// Estimate is flemma.estimate (issue 30): what the next send of a buffer
// would cost of its model's context window — the tokens that will be sent
// (provider.EstimateDocument: after a compaction summary, its text instead
// of the turns it replaces; a rule of thumb, not a tokenizer).
type Estimate struct {
	Tokens   int    `msgpack:"tokens"`
	Window   int    `msgpack:"window"` // the model's context window; 0 = not known
	Provider string `msgpack:"provider"`
	Model    string `msgpack:"model"`
	// Threshold is send.compact_threshold: the share of Window at which a
	// send offers :Flemma compact (0 = never).
	Threshold float64 `msgpack:"threshold"`
	// With a compaction summary in force: its marker's line, the messages
	// above it that are not sent, and the estimate without the summary.
	SummaryLine int `msgpack:"summary_line,omitempty"`
	Omitted     int `msgpack:"omitted,omitempty"`
	WholeTokens int `msgpack:"whole_tokens,omitempty"`
}

// ModelsReply is what :Flemma switch completes: the providers, and the
// model ids per provider (the catalogue's and setup's models).
type ModelsReply struct {
	Providers []string            `msgpack:"providers"`
	Models    map[string][]string `msgpack:"models"`
	// Listed: the provider's server listed its models (Discover).
	Listed map[string]bool `msgpack:"listed"`
	// Defaults: the model each provider uses when none is chosen (its
	// configured model, else the provider's default), for the statusline.
	Defaults map[string]string `msgpack:"defaults"`
}

// VersionReply is the handshake.
type VersionReply struct {
	Version string `msgpack:"version"`
}

// HealthLine is one line of :checkhealth flemma.
type HealthLine struct {
	Level string `msgpack:"level"` // ok | info | warn | error
	Text  string `msgpack:"text"`
}

// HealthReply is the host's part of :checkhealth flemma.
type HealthReply struct {
	Version string       `msgpack:"version"`
	Lines   []HealthLine `msgpack:"lines"`
}

// DefineReply lists the Lua tool definitions that were refused.
type DefineReply struct {
	Errors []string `msgpack:"errors,omitempty"`
}

// UnregisterReply says whether a resolver was removed.
type UnregisterReply struct {
	Removed bool `msgpack:"removed"`
}

// WritableReply backs ctx.sandbox.is_path_writable.
type WritableReply struct {
	Writable bool `msgpack:"writable"`
}

// WrapReply backs ctx.sandbox.wrap_command: the wrapped argv, or why not.
type WrapReply struct {
	Argv  []string `msgpack:"argv,omitempty"`
	Error string   `msgpack:"error,omitempty"`
}

// TruncateOpts are ctx.truncate's options (nil: the configured limit).
type TruncateOpts struct {
	MaxLines *int `msgpack:"max_lines"`
	MaxBytes *int `msgpack:"max_bytes"`
}

// TruncateReply is a truncation's result, as ctx.truncate returns it.
type TruncateReply struct {
	Content     string `msgpack:"content"`
	Truncated   bool   `msgpack:"truncated"`
	By          string `msgpack:"truncated_by"`
	TotalLines  int    `msgpack:"total_lines"`
	TotalBytes  int    `msgpack:"total_bytes"`
	OutputLines int    `msgpack:"output_lines"`
	OutputBytes int    `msgpack:"output_bytes"`
}
