package tools

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is the one interface every tool implements, built-in or Lua.
type Tool interface {
	// Spec describes the tool to the registry, the providers and previews.
	Spec() Spec
	// Run executes one call. input has already been validated against
	// Spec().InputSchema. A returned error is a model-facing failure whose
	// text must say what went wrong and how to fix it; it must never carry
	// stack traces or raw internal error text (use Internal for those).
	Run(ctx context.Context, call Call, input json.RawMessage) (Output, error)
}

// Spec is what the registry knows of a tool.
type Spec struct {
	Name         string
	Description  string
	InputSchema  map[string]any
	OutputSchema map[string]any // optional
	Strict       bool
	Async        bool
	Capabilities []string // e.g. CapSideEffects, "can_auto_approve_if_sandboxed"
	Tags         []string
	Requires     []string // executables ("exe:rg") or features ("feature:bwrap")
	Enabled      bool     // false: registered but only used when a buffer selects it
	Supersedes   string   // name of the tool this one replaces
	Source       string   // "built-in", "lua", "lua module <m>", "async source"
	// Timeout is the tool's own time limit (a Lua definition's timeout,
	// a built-in's own bound); tools.timeouts may override it (Timeouts).
	Timeout time.Duration
	// SelfTimed: the tool enforces Call.Timeout itself, to report it in
	// its own words (bash: "Command timed out after N seconds"), and takes
	// it as the cap of a timeout the model asks for; the executor's
	// deadline is a moment later. Its Timeout is only the executor's bound
	// for a call that carries none.
	SelfTimed bool
	// Truncates: the tool keeps its output within the limits itself, the
	// way that fits it (bash keeps the tail, read the head with an offset
	// to continue); the executor truncates the output of every other tool.
	Truncates bool
}

// CapSideEffects marks a tool that changes files or runs commands: a call to
// it that was already in a file (not received from the provider) is never
// auto-approved.
const CapSideEffects = "side_effects"

// CapSandboxed marks a tool whose calls the sandbox confines (bash): the
// sandbox resolver may approve them when a working backend enforces the
// sandbox. approval.CapSandboxed is the same name (a test in cycle checks).
const CapSandboxed = "can_auto_approve_if_sandboxed"

// CapReadsPath marks a tool that reads where its input's "path" says (the
// current directory when it has none): read, grep, find, ls. A policy
// approves its calls only inside the readable roots; elsewhere they ask,
// naming the path (issue 28 item 6).
const CapReadsPath = "reads_path"

// Call identifies one tool call and the buffer it belongs to.
type Call struct {
	ID     string
	Tool   string
	Bufnr  int
	Cwd    string
	Buffer string // full path of the .chat file, "" when unsaved
	// Env configures the built-ins for this call (sandbox, truncation,
	// read log, shell, …); nil means the defaults.
	Env *Env
	// Timeout is the call's time limit (the host computes it from
	// tools.timeouts and the tool's own: Timeouts.For); zero means the
	// tool's Spec.Timeout, else the executor's default.
	Timeout time.Duration
}

// Output is what a tool produced. Exactly one of Text or JSON is used: JSON
// output is written into a json fence.
type Output struct {
	Text string
	JSON any
	// Changes are the files the call changed, with what Undo needs to
	// take each change back (write, edit, a sandboxed bash). A tool that
	// fails after changing files returns them with its error: they stay
	// undoable.
	Changes []Change
}

// Result is an executed call, ready to be written into the buffer.
type Result struct {
	Content  string
	IsError  bool
	Lang     string // fence language ("json" for structured output)
	Kind     string // error kind when IsError: "ToolValidationError", "ToolError", "Timeout", "Canceled", "InternalError"
	Duration time.Duration
	// Changes are the files the call changed (Output.Changes): the host
	// keeps them with the call so that :Flemma tool:undo can pass each
	// to Undo, last first.
	Changes []Change
}

// Internal wraps an unexpected failure. The executor logs its detail and
// shows the model only a generic message naming the tool.
type Internal struct{ Err error }

func (e *Internal) Error() string { return e.Err.Error() }
func (e *Internal) Unwrap() error { return e.Err }
