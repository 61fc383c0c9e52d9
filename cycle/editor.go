package cycle

// The two things the cycle needs from the editor. rpc implements them over
// Neovim's msgpack-RPC (each method is one nvim_exec_lua call into
// lua/flemma/buf.lua, trust.lua, tools.lua or tools/approval.lua); the unit
// tests implement them over an in-memory buffer. The types they carry are
// the wire shapes: their msgpack tags are what the Lua side reads.

// Editor holds the buffers: it reads and writes them, tells the user, and
// keeps the per-buffer trust state that only the editor session knows.
type Editor interface {
	// Snapshot reads a buffer (flemma.buf.snapshot). have is the
	// changedtick of the host's mirror (-1: none): when the editor tracked
	// the changes since, it may send only the changed window (Delta).
	Snapshot(bufnr, have int) (Snapshot, error)
	// Apply writes every edit of one step, with its cursor, diagnostics,
	// extmarks and trust records, in one call that checks changedtick
	// (flemma.buf.apply).
	Apply(bufnr, tick int, edits []LineEdit, opts ApplyOpts) (ApplyResult, error)
	// SetDiagnostics replaces flemma's diagnostics of a buffer.
	SetDiagnostics(bufnr int, diags []Diag) error
	// SetModifiable locks (false) or unlocks (true) a buffer.
	SetModifiable(bufnr int, on bool) error
	// Notify shows a message (level as vim.log.levels).
	Notify(msg string, level int) error
	// Event fires a User autocommand; data is a ToolEvent or a
	// RequestEvent.
	Event(pattern string, data any) error
	// Progress shows (or, with Phase "", clears) the indicator of a
	// request in progress after the buffer's last line (flemma.buf.progress).
	Progress(bufnr int, p Progress) error
	// TrustPull returns the editor's trust state of a buffer: its load
	// generation, its origin (the text as loaded, or its digest) and the
	// records it keeps for the host (flemma.trust.pull).
	TrustPull(bufnr int) (TrustPull, error)
	// TrustSetDigest replaces the origin lines of load gen by their digest.
	TrustSetDigest(bufnr, gen int, d Digest) error
	// TrustRecord keeps records without an edit (a call is about to start).
	TrustRecord(bufnr int, recs []WireRecord) error
	// TrustSetVouched replaces the lines of the buffer at the user's
	// :Flemma trust number vouch of load gen by the calls they held.
	TrustSetVouched(bufnr, gen, vouch int, calls []DigestCall) error
	// TrustGrant keeps the user's "always allow" grants of the buffer
	// (always.go), as its records are kept: a restarted host pulls them.
	TrustGrant(bufnr int, g WireGrants) error
	// TrustPrune drops the records of ids and keeps tombs (trust.EncodeTombs
	// form) for those that ran or whose result was written.
	TrustPrune(bufnr int, ids []string, tombs string) error
	// TrustAncestry answers which of seqs (undo states) the buffer's text
	// descends from in its undo tree, if the buffer is still at changedtick
	// tick (flemma.trust.ancestry).
	TrustAncestry(bufnr, tick int, seqs []int) (Ancestry, error)
}

// Lua calls back into the user's Lua: approval resolvers and setup
// functions, tools whose execute function lives in Lua, custom previews.
type Lua interface {
	// Resolve asks a Lua resolver: kind is "lua" (registered with
	// flemma.tools.approval), "config" (a setup function) or "module".
	Resolve(kind, name, tool string, input map[string]any, ctx ResolveContext) (ResolveAnswer, error)
	// ExecuteTool starts a Lua tool; an async one answers later through
	// Engine.onToolDone with the same token.
	ExecuteTool(name, token string, input any, info ToolInfo) (LuaResponse, error)
	// CancelTool cancels an async Lua tool.
	CancelTool(token string) error
	// Preview calls a Lua tool's format_preview (nil: it declined).
	Preview(name string, input map[string]any, maxLen int) (*string, error)
	// Diff calls the diff function of a Lua tool with the "diff"
	// capability: the file it would write and its content (nil: it
	// declined). The context is the one execute would get.
	Diff(name string, input map[string]any, info ToolInfo) (*LuaDiff, error)
	// ReviewInput calls a Lua tool's review function: the input that makes
	// the tool write content (the user's reviewed version).
	ReviewInput(name string, input map[string]any, content string) (LuaReview, error)
}

// LuaDiff is what a Lua tool's diff function answers (flemma.tools._diff).
type LuaDiff struct {
	Path    string `msgpack:"path"`  // resolved as ctx.path.resolve does
	Input   string `msgpack:"input"` // as the function named it
	Content string `msgpack:"content"`
	Error   string `msgpack:"error"` // the function failed or answered something else
}

// LuaReview is what a Lua tool's review function answers
// (flemma.tools._review): the call's new input, or why not.
type LuaReview struct {
	Input map[string]any `msgpack:"input"`
	Error string         `msgpack:"error"`
}

// ToolEvent is the data of FlemmaToolExecuting / FlemmaToolFinished.
type ToolEvent struct {
	Bufnr    int    `msgpack:"bufnr"`
	ToolName string `msgpack:"tool_name"`
	ToolID   string `msgpack:"tool_id"`
	Status   string `msgpack:"status"` // executing | success | error
}

// PendingEvent is the data of FlemmaApprovalPending: a press left calls
// waiting for the user's approval.
type PendingEvent struct {
	Bufnr   int    `msgpack:"bufnr"`
	Pending int    `msgpack:"pending"` // how many calls wait
	First   string `msgpack:"first"`   // the tool id of the first one (the cursor goes there)
	Auto    bool   `msgpack:"auto"`    // autopilot stopped on them
}

// RequestEvent is the data of FlemmaRequestStart / FlemmaRequestEnd.
type RequestEvent struct {
	Bufnr    int    `msgpack:"bufnr"`
	Provider string `msgpack:"provider"`
	Model    string `msgpack:"model"`
	// Status (end only): "ok", "error", "cancelled", "cut" (stopped at
	// the output limit, filtered, inside a tool call, or with a piece of
	// the stream unreadable) or "empty" (nothing was written).
	Status     string      `msgpack:"status,omitempty"`
	StopReason string      `msgpack:"stop_reason,omitempty"`
	Error      string      `msgpack:"error,omitempty"`
	Usage      *UsageEvent `msgpack:"usage,omitempty"`
	// CostUSD is the response's cost at the model's catalogue prices
	// (models = {…} may set them); absent when they are not known.
	CostUSD    *float64 `msgpack:"cost_usd,omitempty"`
	DurationMS int64    `msgpack:"duration_ms,omitempty"`
}

// UsageEvent is the token accounting of one response.
type UsageEvent struct {
	InputTokens      int `msgpack:"input_tokens"`
	OutputTokens     int `msgpack:"output_tokens"`
	CacheReadTokens  int `msgpack:"cache_read_tokens"`
	CacheWriteTokens int `msgpack:"cache_write_tokens"`
	ReasoningTokens  int `msgpack:"reasoning_tokens"`
	// WebSearches are the provider's own web searches (billed apart).
	WebSearches int `msgpack:"web_searches,omitempty"`
}

// Progress is what a request in progress shows under the buffer.
type Progress struct {
	// Phase is "waiting" (nothing received yet), "thinking", "answering",
	// or "" (done: clear the indicator).
	Phase    string `msgpack:"phase"`
	Provider string `msgpack:"provider"`
	Model    string `msgpack:"model"` // the effective model: the provider's default by name when none is set
	// ElapsedMS is the time since the request was sent; the editor
	// counts on from it.
	ElapsedMS     int64 `msgpack:"elapsed_ms"`
	ThinkingChars int   `msgpack:"thinking_chars"`
	TextChars     int   `msgpack:"text_chars"`
}

// ResolveContext is the second argument of a Lua resolver.
type ResolveContext struct {
	Bufnr  int    `msgpack:"bufnr"`
	ToolID string `msgpack:"tool_id"`
}

// ResolveAnswer is what a Lua resolver returned: a decision name, nothing
// (pass), or the error it raised.
type ResolveAnswer struct {
	Decision *string `msgpack:"decision"`
	Error    string  `msgpack:"error"`
}

// ToolInfo is the execution context a Lua tool's execute receives.
type ToolInfo struct {
	Bufnr   int     `msgpack:"bufnr"`
	Cwd     string  `msgpack:"cwd"`
	Buffer  string  `msgpack:"buffer"`
	Timeout float64 `msgpack:"timeout"` // seconds
	ToolID  string  `msgpack:"tool_id"`
}
