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
// Templates of user messages ({{ expr }}, {% statements %}, include()) run
// in the same sandbox: Expand for one expression, a Renderer for the
// messages of one send (each message one chunk, one VM for the send, where
// print writes into the output and include renders a file the caller
// reads and confines).
//
// Every run is bounded:
//   - time: Limits.Deadline for the evaluation, Limits.CallDeadline for a call
//     of a stored function. The VM checks it before every instruction, and
//     the functions that run long inside one instruction (find, match,
//     gmatch, gsub, table.sort, table.concat, conversions of values) check
//     it as they go;
//   - memory: everything that can allocate a run-time-sized value in one
//     instruction is charged before it allocates — concatenation and
//     t[k] = v (both rewritten at compile time into calls of bounded
//     functions), string.rep/format/gsub/upper/lower/reverse, table.concat,
//     table.insert, unpack, string.byte, long error and assert messages
//     and tostring of a flemma.opt list; one value may not exceed
//     Limits.MaxBytes, all of them together not 8×MaxBytes. Growth one slot
//     per instruction (filling a table in a loop) is bounded by the deadline
//     (a few tens of MB in 100 ms), and a VM kept for a stored function is
//     measured after every run and disabled when it retains more than
//     MaxBytes;
//   - recursion: 200 Lua frames ("stack overflow"), a 64 Ki-slot value stack,
//     a 64 KiB source.
//
// Compiling happens before the deadline starts and cannot be interrupted, so
// code that would make gopher-lua's compiler slow is refused up front: more
// than 200 levels of nesting (Lua 5.1's "too many syntax levels"; the left
// operand of a left-associative operator does not count), arithmetic chains
// whose constant folding is quadratic, functions with about 2000 distinct
// constants or more (looked up by linear scan), more than 100 functions.
// Parsing and compiling a hostile 64 KiB chunk then takes tens of
// milliseconds at most, once per distinct text (results are cached).
//
// # Converting values
//
// Everything that crosses between Lua and Go after or around a run is
// bounded, because a frontmatter can build in microseconds a table whose
// expansion is exponential (local a = {}; for i = 1, 32 do a = {a, a} end).
// One conversion — all template variables together, one value written to
// flemma.opt, the input and context of one call — may produce at most
// Limits.MaxValues values (65536) and MaxBytes of strings, nested at most 32
// tables deep. A table that appears in several places is converted once and
// the result is shared, but it counts at every place, so the bound holds for
// anyone walking the result as a tree (a JSON encoder, a template engine).
// Exceeding a bound is an error diagnostic naming the variable or option and
// its line (for a call: an error), never a silent cut. A table that contains
// itself is cut where it refers back in template variables and refused in
// flemma.opt. The provider sections together are bounded the same way, as
// are names (256 bytes: tools, rules, model, provider, parameter names) and
// diagnostics (50, of at most 1 KiB each).
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
// sandbox.writable, readable, deny_read, env_deny, backend, network,
// tools.require_approval, tools.auto_approve_sandboxed) or that choose what
// runs (host, providers, tools.modules, tools.bash) are refused with an
// error saying why. Unknown keys and unknown tool or preset names are errors
// with a "did you mean" suggestion. Every problem is reported at the buffer
// line of the statement that caused it, and evaluation goes on, so one pass
// shows all of them; any error makes Result.Blocking true.
//
// A function assigned to tools.auto_approve stays in its VM and is called
// later through Func.Call, serialised, with flemma.opt frozen. A call that
// errors, spins, allocates or recurses returns an error within CallDeadline
// and leaves the VM usable; one that panics in Go or makes its VM keep more
// than MaxBytes disables the function.
//
// # Budgets
//
// One key press may lead to hundreds of calls. Create a Budget per press
// (Evaluator.NewBudget, Limits.CallBudget: 200 ms) and pass it in the
// context (WithBudget): the calls share it, each is charged the time it
// held its VM, and once it is used up every further call fails at once
// with ErrBudget, without entering a VM.
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
// A source over 64 KiB (or with an info string over 64 bytes) is refused
// without being cached or copied.
package frontmatter
