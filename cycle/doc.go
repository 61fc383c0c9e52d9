// Package cycle is the host's work behind <C-]>: per-buffer state, the
// three phases (categorize, execute, send), the approval chain with its
// origin and journal gates, the executor, streaming responses into the
// buffer, autopilot, previews and crash recovery.
//
// It talks to the editor only through two small interfaces, Editor and
// Lua (editor.go): rpc implements them over Neovim's msgpack-RPC, the unit
// tests over an in-memory buffer. Every step re-reads and re-parses the
// buffer and finds blocks by tool id, never by remembered line numbers, and
// writes its edits in one call that checks changedtick.
//
// Tool chains (toolchain.go) are registered tools whose run calls other
// tools step by step; each step goes through the approval chain as its own
// call, when the chain call is categorized and again before it runs
// (registerChain, chainTool).
//
// The engine (engine.go) holds what every buffer shares: the session
// table, the configuration of the latest setup, and the services — the
// tool registry, the executor, the providers, MCP, the journal, the
// editor. Each buffer has a session (session.go): its own lock, condition
// variable and context, its state, and its phase (phase.go), which one
// transition table changes. Commands take a buffer's step through
// withStep/withBlock (step.go). The files go by capability:
//
//	cycle.go       <C-]>: which phase applies
//	categorize.go  phase 1: placeholders and the approval chain
//	jobs.go        phase 2: approved calls run, results written
//	send.go        phase 3: the request; stream.go writes the response
//	autopilot.go   the next step after a response or the last result
//	actions.go     the commands on one call (<M-CR>, status, result, <C-c>)
//	recovery.go    crash recovery: recovered results, undo, resume, discard
//	reports.go     :checkhealth, :Flemma status, tools, tool:list
//	               (credhealth.go asks credential commands, toollist.go
//	               reads the user's past decisions from the journal)
//	always.go      :Flemma tool:allow-always, the user's grants in a chat
//	usage.go       usage accounting, the usage line, the over-window note
//	attach.go      @./file references (attachments.go loads them)
//	templates.go   {{ }}, {% %} and include() of user messages
package cycle
