-- The host process: find the binary, start it with jobstart({rpc = true}),
-- check the version handshake, give it the configuration and the tools
-- registered in Lua, and restart it on the next use after it died. Its state
-- (channel, pending requests) is flemma.state's host table. The modules it
-- depends on (tools, buf) reach a running host through flemma.channel.
local P = require("flemma.protocol")
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
  return nil, "flemma-host not found: run `make build` in " .. plugin_root() .. " (or set host.cmd in setup())"
end

-- Everything that was waiting for the host gets an answer when it is gone.
local function fail_pending(msg)
  local waiting = host.pending
  host.pending = {}
  for _, p in pairs(waiting) do
    pcall(p.cb, nil, msg)
  end
end

--- Whether Neovim is quitting: then the host's end is expected, and no new
--- host may start (a job started during teardown keeps Neovim from exiting).
local function leaving()
  return host.leaving or (vim.v.exiting ~= nil and vim.v.exiting ~= vim.NIL)
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
    for _, p in pairs(waiting) do
      if p.retried or on_purpose then
        pcall(p.cb, nil, "the host exited before it answered")
      else
        M.request_async(p.method, p.args, p.cb, true)
      end
    end
  end)
  if on_purpose or not current then
    return
  end
  -- A host that died mid-run must not leave chat buffers locked, nor its
  -- running indicators spinning.
  vim.schedule(function()
    local buf = require("flemma.buf")
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].filetype == "chat" then
        buf.lock(b, false)
        pcall(vim.api.nvim_buf_clear_namespace, b, buf.namespaces().marks, 0, -1)
      end
    end
  end)
  if not host.warned_exit then
    host.warned_exit = true
    local tail = table.concat(host.stderr, "\n")
    notify(
      string.format(
        "host exited unexpectedly (code %d); it restarts on next use. Log: %s%s",
        code,
        host.log_file or "?",
        tail ~= "" and ("\n" .. tail) or ""
      )
    )
  end
end

-- Sends definitions (tools or tool chains) to a host that just started;
-- what it refuses is shown.
local function send_defs(chan, method, list, what)
  if #list == 0 then
    return
  end
  local ok, res = pcall(function()
    return vim.rpcrequest(chan, method, vim.fn.json_encode(list))
  end)
  if not ok then
    notify("could not register " .. what .. ": " .. tostring(res))
  elseif type(res) == "table" and type(res.errors) == "table" then
    for _, e in ipairs(res.errors) do
      notify(e)
    end
  end
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
  local hs_ok, info = pcall(vim.rpcrequest, chan, P.version)
  if not hs_ok or type(info) ~= "table" then
    M.stop()
    return nil, "host did not answer the version handshake: " .. tostring(info) .. " (log: " .. host.log_file .. ")"
  end
  host.version = info.version
  local want = require("flemma.version")
  if info.version ~= want then
    notify(
      string.format(
        "host version %s does not match the plugin's %s: run `make build` (binary: %s)",
        tostring(info.version),
        want,
        argv[1]
      ),
      vim.log.levels.WARN
    )
  end
  host.warned_exit = false
  local sok, serr = pcall(function()
    return vim.rpcrequest(chan, P.setup, M.config_json())
  end)
  if not sok then
    notify("host rejected the configuration: " .. tostring(serr))
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
    pcall(vim.rpcrequest, chan, P.approval_register, state.resolvers[name].wire)
  end
  -- What the user changed at runtime outlives a restarted host.
  if host.runtime.switch then
    pcall(vim.rpcrequest, chan, P.switch, host.runtime.switch)
  end
  if host.runtime.autopilot then
    pcall(vim.rpcrequest, chan, P.autopilot, host.runtime.autopilot)
  end
  return chan
end

--- Ask the host for what :Flemma switch completes (after each setup: the
--- models setup describes are in it).
function M.refresh_catalogue(chan)
  chan = chan or host.chan
  host.catalogue = nil
  if chan then
    local ok, res = pcall(vim.rpcrequest, chan, P.models)
    if ok and type(res) == "table" then
      host.catalogue = res
    end
  end
end

--- What :Flemma switch completes: { providers, models = { [provider] = ids } },
--- starting the host when it is not running; nil when it cannot start.
function M.catalogue()
  if not host.catalogue then
    local ok, chan = pcall(M.ensure, state.config())
    if ok and chan and not host.catalogue then
      M.refresh_catalogue(chan)
    end
  end
  return host.catalogue
end

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

--- Call the host and wait for the answer; starts it on first use (and
--- again when it died a moment ago). Returns result or nil, err. Only for
--- quick calls; a user's action goes through request_async.
function M.request(method, ...)
  for attempt = 1, 2 do
    local chan, err = M.ensure(state.config())
    if not chan then
      return nil, err
    end
    local ok, res = pcall(vim.rpcrequest, chan, method, ...)
    if ok then
      if res == vim.NIL then
        res = nil
      end
      return res
    end
    if attempt == 2 or not dead_channel(res) then
      return nil, tostring(res)
    end
    forget_dead()
  end
end

local function check_late()
  local now = vim.loop.now()
  local late_after = (state.config().host.timeout or 10) * 1000
  for _, p in pairs(host.pending) do
    if not p.warned and now - p.started > late_after then
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
--- answer is reported, with the way out.
function M.request_async(method, args, cb, retried)
  for attempt = 1, 2 do
    local chan, err = M.ensure(state.config())
    if not chan then
      cb(nil, err)
      return
    end
    host.next_id = host.next_id + 1
    local id = host.next_id
    host.pending[id] =
      { method = method, args = args, cb = cb, started = vim.loop.now(), retried = retried, chan = chan }
    local ok, e = pcall(vim.rpcnotify, chan, P.async, id, method, args)
    if ok then
      if not host.watchdog then
        host.watchdog = vim.loop.new_timer()
        host.watchdog:start(1000, 1000, vim.schedule_wrap(check_late))
      end
      return
    end
    host.pending[id] = nil
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
function M.restart()
  M.stop()
  fail_pending("the host was restarted")
  local chan, err = M.ensure(state.config())
  if not chan then
    return nil, err
  end
  return chan
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
