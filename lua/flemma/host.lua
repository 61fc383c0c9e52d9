-- The host process: find the binary, start it with jobstart({rpc = true}),
-- check the version handshake, give it the configuration and the tools
-- registered in Lua, and restart it on the next use after it died. Its state
-- (channel, pending requests) is flemma.state's host table. The modules it
-- depends on (tools, buf) reach a running host through flemma.channel.
local P = require("flemma.protocol")
local channel = require("flemma.channel")
local config = require("flemma.config")
local state = require("flemma.state")
local M = {}

local host = state.host

local function plugin_root()
  local src = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

local notify = require("flemma.notify").new(vim.log.levels.ERROR, true)

--- The log file the host writes to.
function M.log_file(cfg)
  if cfg and cfg.host and cfg.host.log_file then
    return cfg.host.log_file
  end
  return config.state_dir() .. "/host.log"
end

--- Where the host binary is: an explicit host.cmd wins, then
--- <plugin root>/bin/flemma-host, then flemma-host on $PATH.
---@return string[]|nil argv, string|nil err
function M.find(cfg)
  local cmd = cfg and cfg.host and cfg.host.cmd
  if type(cmd) == "string" then
    cmd = { cmd }
  end
  if type(cmd) == "table" and cmd[1] then
    if vim.fn.executable(cmd[1]) == 1 then
      return vim.deepcopy(cmd)
    end
    return nil, string.format("host.cmd %q is not executable", cmd[1])
  end
  local local_bin = plugin_root() .. "/bin/flemma-host"
  if vim.fn.executable(local_bin) == 1 then
    return { local_bin }
  end
  local on_path = vim.fn.exepath("flemma-host")
  if on_path ~= "" then
    return { on_path }
  end
  return nil,
    "flemma-host not found: run :Flemma install (or `make build` in "
      .. plugin_root()
      .. ", or set host.cmd in setup())"
end

-- Everything that was waiting for the host gets an answer when it is gone.
local function fail_pending(msg)
  local waiting = host.pending
  host.pending = {}
  for _, p in pairs(waiting) do
    if not p.internal then -- configuration for that host: a new one gets its own
      pcall(p.cb, nil, msg)
    end
  end
end

--- Whether Neovim is quitting: then the host's end is expected, and no new
--- host may start (a job started during teardown keeps Neovim from exiting).
local function leaving()
  return host.leaving or (vim.v.exiting ~= nil and vim.v.exiting ~= vim.NIL)
end

-- The line (0-based) of a call's Tool Use header and of its result's
-- header in a buffer's lines, if there.
local function call_lines(lines, id)
  local use, res
  local tick = "`" .. id .. "`"
  for i, l in ipairs(lines) do
    if not use and l:find("^%*%*Tool Use:%*%*") and l:find("(" .. tick .. ")", 1, true) then
      use = i - 1
    elseif l:find("^%*%*Tool Result:%*%* " .. vim.pesc(tick)) then
      res = i - 1
    end
  end
  return use, res
end

M.interrupted_text = "interrupted: the host stopped while this call ran, so it may have partly run."
  .. " :Flemma tool:resume runs it again, :Flemma tool:discard records it as interrupted"

-- A host is gone (it crashed, was restarted or stopped, or hung and was
-- killed): nothing of its work may outlive it in the buffers. Each chat
-- buffer it had locked is unlocked, its indicators and the progress of a
-- response are cleared, and each call it was running — still without a
-- result — is shown as interrupted where its running indicator was (a mark
-- on its result and a diagnostic on its call; the journal keeps the call
-- unfinished, which the next press reads as interrupted). Returns the
-- number of interrupted calls and of responses cut off.
local function host_gone()
  local buf = require("flemma.buf")
  local ns = buf.namespaces()
  local calls, responses = 0, 0
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].filetype == "chat" then
      local bs = state.buffer(b)
      -- flemma's lock (its note is on the last line); a buffer made
      -- read-only some other way stays so.
      if #vim.api.nvim_buf_get_extmarks(b, ns.lock, 0, -1, { limit = 1 }) > 0 then
        buf.lock(b, false)
      end
      pcall(vim.api.nvim_buf_clear_namespace, b, ns.marks, 0, -1)
      if bs.progress then
        responses = responses + 1
        buf.progress(b, nil)
      end
      local running = bs.running or {}
      bs.running = nil
      if next(running) then
        local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
        local diags = vim.diagnostic.get(b, { namespace = ns.diagnostics })
        for id in pairs(running) do
          local use, res = call_lines(lines, id)
          -- Still without a result: the placeholder's fence follows its
          -- header, with no text inside.
          local empty = res and lines[res + 3] and lines[res + 3]:find("^```flemma:tool") and lines[res + 4] == "```"
          if use and empty then
            calls = calls + 1
            pcall(vim.api.nvim_buf_set_extmark, b, ns.marks, res, 0, {
              virt_text = { { "⚠ interrupted", "DiagnosticWarn" } },
              virt_text_pos = "eol",
            })
            table.insert(diags, {
              lnum = use,
              col = 0,
              severity = vim.diagnostic.severity.WARN,
              message = M.interrupted_text,
              source = "flemma",
            })
          end
        end
        vim.diagnostic.set(ns.diagnostics, b, diags)
      end
    end
  end
  return calls, responses
end

local function on_exit(job, code)
  local current = host.chan == job
  if current then
    host.chan = nil
    host.version = nil
    host.catalogue = nil
  end
  local on_purpose = host.stopped[job] or leaving()
  host.stopped[job] = nil
  host.exited[job] = true
  -- Requests this host never answered go once more to a new host (a press
  -- a moment before a crash is not lost; the journal and the trust records
  -- keep a call from running twice); the rest fail.
  local waiting = {}
  for id, p in pairs(host.pending) do
    if p.chan == job then
      waiting[id] = p
      host.pending[id] = nil
    end
  end
  if leaving() then
    return -- nothing left to show an answer, or an error, to
  end
  vim.schedule(function()
    -- An internal request (configuration sent at a start) is dropped: a
    -- new host gets its own.
    for _, p in pairs(waiting) do
      if (p.retried or on_purpose or p.sync) and not p.internal then
        pcall(p.cb, nil, "the host exited before it answered")
      elseif not p.internal then
        M.request_async(p.method, p.args, p.cb, true)
      end
    end
  end)
  -- A new host already took over (a press came before this exit was
  -- seen): the buffers are its now.
  if host.chan ~= nil and not current then
    return
  end
  local calls, responses = host_gone()
  if on_purpose then
    if calls > 0 or responses > 0 then
      host.gone_note = { calls = calls, responses = responses }
    end
    return
  end
  if not host.warned_exit then
    host.warned_exit = true
    local tail = table.concat(host.stderr, "\n")
    local lost = ""
    if calls > 0 then
      lost = string.format(" %d running call(s) were interrupted (see the diagnostics).", calls)
    end
    if responses > 0 then
      lost = lost .. " The response in progress was cut off."
    end
    notify(
      string.format(
        "host exited unexpectedly (code %d); it restarts on next use.%s Log: %s%s",
        code,
        lost,
        host.log_file or "?",
        tail ~= "" and ("\n" .. tail) or ""
      )
    )
  end
end

-- Reports what the host refused of a request sent while it starts.
local function report(what)
  return function(res, err)
    if err then
      notify(what .. ": " .. tostring(err))
    elseif type(res) == "table" and type(res.errors) == "table" then
      for _, e in ipairs(res.errors) do
        notify(e)
      end
    end
  end
end

-- Sends to a host that just started, without waiting: the host serves
-- these in order, before anything sent after them (cycle.Method.Ordered).
local function send_start(chan, method, args, what)
  channel.send(chan, method, args, report(what), { internal = true })
end

-- Sends definitions (tools or tool chains) to a host that just started;
-- what it refuses is shown.
local function send_defs(chan, method, list, what)
  if #list == 0 then
    return
  end
  send_start(chan, method, { vim.fn.json_encode(list) }, "could not register " .. what)
end

--- How long the version handshake of a new host may take: a start on a
--- loaded machine is slow, so at least 10 s.
local function handshake_ms()
  return math.max(channel.bound_ms(), 10000)
end

--- Start the host if it is not running; returns the channel or nil, err.
function M.ensure(cfg)
  if host.chan then
    return host.chan
  end
  if leaving() then
    return nil, "Neovim is quitting"
  end
  local argv, err = M.find(cfg)
  if not argv then
    return nil, err
  end
  host.log_file = M.log_file(cfg)
  vim.fn.mkdir(vim.fn.fnamemodify(host.log_file, ":h"), "p", 448) -- 0700
  table.insert(argv, "--log-file")
  table.insert(argv, host.log_file)
  host.stderr = {}
  local ok, chan = pcall(vim.fn.jobstart, argv, {
    rpc = true,
    on_exit = on_exit,
    on_stderr = function(_, data)
      for _, line in ipairs(data or {}) do
        if line ~= "" then
          table.insert(host.stderr, line)
          if #host.stderr > 20 then
            table.remove(host.stderr, 1)
          end
        end
      end
    end,
  })
  if not ok or type(chan) ~= "number" or chan <= 0 then
    return nil, string.format("could not start %s: %s", argv[1], ok and tostring(chan) or chan)
  end
  host.chan = chan
  -- Quitting Neovim ends the host on purpose: no warning, no restart.
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = vim.api.nvim_create_augroup("FlemmaHostLeave", { clear = true }),
    once = true,
    callback = function()
      host.leaving = true
    end,
  })
  -- The handshake is the one answer a start waits for, and not forever.
  local info, herr = channel.wait(chan, P.version, {}, handshake_ms())
  if type(info) ~= "table" then
    M.stop()
    return nil, "host did not answer the version handshake: " .. tostring(herr) .. " (log: " .. host.log_file .. ")"
  end
  host.version = info.version
  local want = require("flemma.version")
  if info.version ~= want then
    notify(
      string.format(
        "host version %s does not match the plugin's %s: run :Flemma install (binary: %s)",
        tostring(info.version),
        want,
        argv[1]
      ),
      vim.log.levels.WARN
    )
  end
  host.warned_exit = false
  local cok, js = pcall(M.config_json)
  if cok then
    -- The host applies it key by key; what it says is what it replaced.
    channel.send(chan, P.setup, { js }, function(_, serr)
      if serr then
        notify("setup (host): " .. tostring(serr), vim.log.levels.WARN)
      end
    end, { internal = true })
  else
    notify("the configuration cannot be sent to the host: " .. tostring(js))
  end
  M.refresh_catalogue(chan)
  -- Tools registered before the host started, then tools.modules (lazily,
  -- on this first start).
  local tools = require("flemma.tools")
  send_defs(chan, P.define_tools, tools._wire_all(), "tools")
  -- Tool chains, after the tools their steps call.
  send_defs(chan, P.define_chains, tools._wire_chains(), "tool chains")
  tools.load_modules()
  tools._report_sources() -- async sources still resolving: the host's steps wait for them
  -- Approval resolvers registered in Lua (flemma.tools.approval keeps them
  -- in flemma.state), by name.
  local names = vim.tbl_keys(state.resolvers)
  table.sort(names)
  for _, name in ipairs(names) do
    send_start(chan, P.approval_register, { state.resolvers[name].wire }, "could not register resolver " .. name)
  end
  -- What the user changed at runtime outlives a restarted host.
  if host.runtime.switch then
    send_start(chan, P.switch, { host.runtime.switch }, ":Flemma switch")
  end
  if host.runtime.autopilot then
    send_start(chan, P.autopilot, { host.runtime.autopilot }, ":Flemma autopilot")
  end
  return chan
end

--- Ask the host for what :Flemma switch completes (after each setup: the
--- models setup describes are in it), without waiting.
function M.refresh_catalogue(chan)
  chan = chan or host.chan
  host.catalogue = nil
  host.discover_asked = {} -- a new host (or setup) has listed nothing yet
  if chan then
    channel.send(chan, P.models, {}, function(res)
      if type(res) == "table" and host.chan == chan then
        host.catalogue = res
      end
    end, { internal = true })
  end
end

--- What :Flemma switch completes: { providers, models = { [provider] = ids } },
--- starting the host when it is not running (waiting at most host.timeout
--- for its answer); nil when it cannot start or does not answer.
function M.catalogue()
  if not host.catalogue then
    local ok, chan = pcall(M.ensure, state.config())
    if ok and chan and not host.catalogue then
      local res = channel.wait(chan, P.models, {})
      if type(res) == "table" then
        host.catalogue = res
      end
    end
  end
  return host.catalogue
end

--- Ask the host, without waiting, to list a provider's models from its
--- server (once per host): FlemmaModels brings the catalogue with them.
function M.discover(name)
  host.discover_asked = host.discover_asked or {}
  if type(name) ~= "string" or host.discover_asked[name] or not host.chan then
    return
  end
  host.discover_asked[name] = true
  M.request_async(P.discover, { name }, function() end)
end

--- Whether a provider's model list came (true: listed; false: its server
--- did not answer or it lists none); nil while it is asked for.
function M.listed(name)
  local cat = host.catalogue or {}
  return (cat.listed or {})[name]
end

-- The host sends the catalogue again when a model list came.
vim.api.nvim_create_autocmd("User", {
  pattern = "FlemmaModels",
  group = vim.api.nvim_create_augroup("flemma_models", { clear = true }),
  callback = function(ev)
    local data = ev.data
    if data == nil then -- Neovim 0.7: autocmds carry no data
      data = require("flemma.buf").last_event
    end
    if type(data) == "table" and data.providers then
      host.catalogue = data
    end
  end,
})

--- The configuration as the host takes it: JSON (flemma.setup).
function M.config_json()
  return vim.fn.json_encode(config.for_host(state.config()))
end

-- A channel that is gone although on_exit has not run yet (the host died
-- a moment ago).
local function dead_channel(err)
  local e = tostring(err)
  return e:find("Invalid channel", 1, true) ~= nil or e:find("closed", 1, true) ~= nil
end

local function forget_dead()
  host.chan = nil
  host.version = nil
end

--- Call the host and wait for the answer, at most host.timeout; starts it
--- on first use (and again when it died a moment ago). Returns result or
--- nil, err (a host that does not answer in time: err says so). Only for
--- what needs the answer now; a user's action goes through request_async.
function M.request(method, ...)
  local args = { ... }
  for attempt = 1, 2 do
    local chan, err = M.ensure(state.config())
    if not chan then
      return nil, err
    end
    local res, rerr = channel.wait(chan, method, args)
    if rerr == nil then
      return res
    end
    if attempt == 2 or not dead_channel(rerr) then
      return nil, tostring(rerr)
    end
    forget_dead()
  end
end

local function check_late()
  local now = vim.loop.now()
  local late_after = (state.config().host.timeout or 10) * 1000
  for _, p in pairs(host.pending) do
    -- A caller that waits (channel.wait) reports its own late answer.
    if not p.warned and not p.sync and now - p.started > late_after then
      p.warned = true
      local pid = host.chan and vim.fn.jobpid(host.chan) or "?"
      require("flemma.notify").now(
        string.format(
          "the host has not answered %s for %d s (pid %s): it may be hung. :Flemma host:restart stops and restarts it.",
          p.method,
          math.floor((now - p.started) / 1000),
          tostring(pid)
        ),
        vim.log.levels.WARN
      )
    end
  end
  if next(host.pending) == nil and host.watchdog then
    host.watchdog:stop()
    host.watchdog:close()
    host.watchdog = nil
  end
end

--- Call the host without waiting: cb(result, err) runs when it answers
--- (or fails). Neovim stays responsive whatever the host does; a late
--- answer is reported, with the way out. internal: configuration for this
--- host (setup()): when the host goes, it is dropped, not sent again nor
--- failed (a new host gets its own).
function M.request_async(method, args, cb, retried, internal)
  for attempt = 1, 2 do
    local chan, err = M.ensure(state.config())
    if not chan then
      cb(nil, err)
      return
    end
    local id, e = channel.send(chan, method, args, cb, { retried = retried, internal = internal })
    if id then
      if not host.watchdog then
        host.watchdog = vim.loop.new_timer()
        host.watchdog:start(1000, 1000, vim.schedule_wrap(check_late))
      end
      return
    end
    if attempt == 2 or not dead_channel(e) then
      cb(nil, tostring(e))
      return
    end
    forget_dead()
  end
end

--- The host's answer to request_async (called by the host).
function M._reply(id, res, err)
  local p = host.pending[id]
  host.pending[id] = nil
  if not p then
    return
  end
  if res == vim.NIL then
    res = nil
  end
  if err == "" or err == vim.NIL then
    err = nil
  end
  p.cb(res, err)
end

--- Requests waiting for an answer (tests wait for 0).
function M._pending()
  local n = 0
  for _ in pairs(host.pending) do
    n = n + 1
  end
  return n
end

--- :Flemma host:restart — stop the host (hung or not) and start a new one.
--- The old host is gone before the new one starts (a hung one is killed
--- after a moment), so its end — unlocking its buffers, showing its
--- running calls as interrupted — never lands on the new host's work.
--- Returns the channel and a note on what the old host left interrupted,
--- or nil, err.
function M.restart()
  local old = host.chan
  local pid
  if old then
    local ok, p = pcall(vim.fn.jobpid, old)
    pid = ok and p or nil
  end
  host.gone_note = nil
  M.stop()
  fail_pending("the host was restarted")
  if old then
    local function gone()
      return host.exited[old] == true
    end
    -- SIGTERM first (jobstop): it stops its commands and exits. A stopped
    -- or hung host cannot: SIGKILL (its commands' supervisors end them).
    if not vim.wait(1000, gone, 10) and pid then
      pcall(vim.loop.kill, pid, 9)
      vim.wait(3000, gone, 10)
    end
  end
  local note = host.gone_note
  host.gone_note = nil
  local chan, err = M.ensure(state.config())
  if not chan then
    return nil, err
  end
  return chan, note
end

--- Send a notification (no answer awaited).
function M.notify(method, ...)
  local chan, err = M.ensure(state.config())
  if not chan then
    return nil, err
  end
  if not pcall(vim.rpcnotify, chan, method, ...) then
    forget_dead()
    return nil, "the host is gone"
  end
  return true
end

function M.running()
  return host.chan ~= nil, host.version, host.log_file
end

--- The channel id (for tests and :checkhealth), or nil.
function M._chan()
  return host.chan
end

function M.stop()
  if host.chan then
    host.stopped[host.chan] = true
    pcall(vim.fn.jobstop, host.chan)
    host.chan = nil
    host.catalogue = nil
  end
end

return M
