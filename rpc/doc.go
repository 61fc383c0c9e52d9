// Package rpc is the Neovim boundary: it registers the cycle engine's
// methods as msgpack-RPC handlers (synchronous, and asynchronous through the
// flemma.async notification) and implements cycle.Editor and cycle.Lua with
// nvim_exec_lua calls into the plugin's Lua modules.
//
// It is the only package that imports go-client. Everything it does beyond
// moving messages lives in package cycle.
package rpc
