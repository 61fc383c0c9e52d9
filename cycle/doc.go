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
// (RegisterChain, chainTool).
package cycle
