-- Everything flemma remembers during an editor session, in one place: the
-- effective configuration, the host process, the registered tools and
-- resolvers, and what is known of each chat buffer. Modules keep no state of
-- their own (but flemma.buf's last_event, part of its API on Neovim 0.7):
-- they read and write it here, so none has to require another (least of all
-- "flemma") to reach a value, and a wiped buffer is forgotten in one call.
-- This module requires only flemma.config.
local config = require("flemma.config")

local M = {}

--- The effective configuration: what setup() resolved, nil until then.
M.cfg = nil

--- The wrong values of the last setup(), each replaced ("path: expected
--- …, got … (what is used)"); :checkhealth lists them.
M.setup_errors = {}

--- The effective configuration; the defaults when setup() was not called.
function M.config()
  if not M.cfg then
    M.cfg = config.resolve({})
  end
  return M.cfg
end

--- The host process and the requests it has not answered (flemma.host).
M.host = {
  chan = nil, -- job/channel id while running
  version = nil, -- the version it reported in the handshake
  log_file = nil,
  stderr = {}, -- its last lines of stderr
  warned_exit = false, -- an unexpected exit was reported (once until the next start)
  stopped = {}, -- job ids stopped on purpose (stop, :Flemma host:restart)
  exited = {}, -- job ids whose exit was seen (restart waits for it)
  gone_note = nil, -- what a host stopped on purpose left interrupted: { calls, responses }
  leaving = false, -- Neovim is quitting (VimLeavePre): its end is expected, no new host starts
  pending = {}, -- request id -> { method, args, cb, started (ms), warned, retried, sync, internal, chan } (flemma.channel)
  next_id = 0,
  watchdog = nil, -- timer that reports late answers while requests are pending
  -- What :Flemma switch completes, as the running host answered it after the
  -- last setup (and again with each model list its servers sent, FlemmaModels):
  -- { providers = {…}, models = { [provider] = { id… } }, listed = { [provider] = bool } }.
  catalogue = nil,
  discover_asked = {}, -- provider -> true: its model list was asked of this host
  -- Runtime overrides replayed into a (re)started host: switch = the
  -- arguments of the last :Flemma switch, autopilot = "enable" | "disable".
  runtime = {},
}

--- Tools registered from Lua (flemma.tools). These tables, and M.resolvers,
--- are never replaced: modules may keep references to them.
M.tools = {
  defs = {}, -- name -> definition (functions included)
  order = {}, -- names in registration order
  running = {}, -- token -> cancel function of an async execution
  sources = { pending = 0, generation = 0, waiters = {} }, -- async tool sources
  modules_loaded = false, -- tools.modules of the config (loaded on the first start)
  chains = {}, -- name -> tool chain definition (register_chain)
  chain_order = {}, -- chain names in registration order
}

--- Approval resolvers registered from Lua (flemma.tools.approval):
--- name -> { wire = { name, priority, description } (what the host gets), resolve }.
M.resolvers = {}

--- The trust store (path -> { sha256, time }), read lazily (flemma.trust).
M.trust_store = nil

--- Tokens of every response of this session (from FlemmaRequestEnd).
M.usage = {
  responses = 0,
  input_tokens = 0,
  output_tokens = 0,
  cache_read_tokens = 0,
  cache_write_tokens = 0,
  reasoning_tokens = 0,
  cost_usd = 0, -- of the responses whose model's prices are known
}

--- Per chat buffer, dropped when it is wiped (forget_buffer):
---   trust = { gen, trusted, origin, digest, load_seq, records, tombs, vouch,
---     vouch_lines, vouched, fm_before } (flemma.trust)
---   tracker = { base, first, tail }: what changed since the host's last sync (flemma.buf)
---   our_tick = changedtick right after flemma's last write (flemma.buf)
---   marks_tick = changedtick of the host's last write that set the previews too (flemma.buf)
---   progress = the request in progress: { phase, provider, model, t0, thinking_chars, text_chars } (flemma.buf)
---   running = tool id -> true while it runs (flemma.buf, from the tool events)
---   outline = the buffer's structure, kept current change by change; outline_attached (flemma.outline)
---   display_pending = rulers/folds of the last changes are scheduled (flemma.chatbuf)
---   ts_on, ts_dropped = Markdown by treesitter / dropped for regex syntax once the chat grew (flemma.chatbuf)
---   folded = window -> blocks it has seen (flemma.fold)
---   progress_line = 0-based line of the progress note, which has no ruler (flemma.buf)
M.buffers = {}

--- The state of a buffer, created on first use.
function M.buffer(bufnr)
  local b = M.buffers[bufnr]
  if not b then
    b = {}
    M.buffers[bufnr] = b
  end
  return b
end

--- Forget everything about a buffer (it was wiped).
function M.forget_buffer(bufnr)
  M.buffers[bufnr] = nil
end

return M
