// Package rpc is the Neovim boundary: the msgpack-RPC handlers the Lua side
// calls, the one atomic write path (every step's edits go to Neovim in a single
// call that checks changedtick), and the Ctrl-] cycle that ties the parser,
// the approval chain and the executor together.
//
// It is the only package that imports go-client. Every step re-reads and
// re-parses the buffer and finds blocks by tool id, never by remembered line
// numbers.
package rpc
