// Package frontmatter evaluates a buffer's frontmatter (Lua in an isolated
// gopher-lua VM, or JSON) into per-buffer options and template variables.
//
// It is pure: no Neovim, no network, no processes, no files. A .chat file may
// come from anyone, so its frontmatter is treated as hostile input.
//
// # Lua
//
// Every evaluation gets a fresh VM whose globals are a whitelist: assert,
// error, ipairs, pairs, pcall, select, tonumber, tostring, type, unpack,
// print (discards its output), _VERSION, string (without dump), table, math
// (without randomseed) and flemma.opt. There is no io, os, debug, package,
// coroutine, require, load*, dofile, getfenv/setfenv, get/setmetatable or
// raw*. Reading an undefined global raises "Undefined variable '<name>'".
// Globals the chunk creates become template variables (strings, numbers,
// booleans and tables of those); locals and the chunk's return value do not.
//
// Every run is bounded:
//   - time: Limits.Deadline for the evaluation, Limits.CallDeadline for a call
//     of a stored function. The VM checks it before every instruction, and
//     the string functions that run long inside one instruction (find,
//     match, gmatch, gsub) are a deadline-checking reimplementation of Lua
//     5.1 patterns;
//   - memory: everything that can allocate a run-time-sized value in one
//     instruction is charged before it allocates — concatenation and
//     t[k] = v (both rewritten at compile time into calls of bounded
//     functions), string.rep/format/gsub/upper/lower/reverse, table.concat,
//     table.insert, unpack and string.byte; one value may not exceed
//     Limits.MaxBytes, all of them together not 8×MaxBytes. Growth one slot
//     per instruction (filling a table in a loop) is bounded by the deadline
//     (a few tens of MB in 100 ms), and a VM kept for a stored function is
//     measured after every run and disabled when it retains more than
//     MaxBytes;
//   - recursion: 200 Lua frames ("stack overflow"), a 64 Ki-slot value stack,
//     a 64 KiB source.
//
// # flemma.opt
//
// flemma.opt sets options with the keys of the setup config: tools (the
// enabled tools, a list), tools.auto_approve (alias approve: a list of tool
// names, $presets and command rules, or a function), tools.autopilot (a
// boolean or {enabled, max_turns}), tools.max_concurrent, thinking,
// temperature, max_tokens, cache_retention, provider, model, the free-form
// provider sections anthropic, openai and vertex, and sandbox.enabled /
// sandbox = true. parameters.* leads to the same request parameters. Lists
// support assignment, :append, :remove, :prepend (one name or a table of
// names, chainable), the operators + - ^ (recorded at once; writing the list
// back is a no-op), :get() and #. Removing a tool from auto_approve also
// records it in AutoApproveExclusions, which the approval layer removes from
// the presets the list names.
//
// Keys that could weaken the sandbox or approval (sandbox.enabled = false,
// sandbox.writable, deny_read, env_deny, backend, network,
// tools.require_approval, tools.auto_approve_sandboxed) or that choose what
// runs (host, providers, tools.modules, tools.bash) are refused with an
// error saying why. Unknown keys and unknown tool or preset names are errors
// with a "did you mean" suggestion. Every problem is reported at the buffer
// line of the statement that caused it, and evaluation goes on, so one pass
// shows all of them; any error makes Result.Blocking true.
//
// A function assigned to tools.auto_approve stays in its VM and is called
// later through Func.Call, serialised, with flemma.opt frozen.
//
// # JSON
//
// {"flemma": {...}} applies the same options through the same validator;
// "$set", "$append", "$remove" and "$prepend" keys are list operations. All
// other top-level keys are template variables.
//
// # Caching
//
// An Evaluator caches results by language, code, start line and setup, and
// compiled chunks by code (64 entries each, least recently used first out).
package frontmatter
