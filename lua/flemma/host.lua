-- The host process: find the binary, start it with jobstart({rpc = true}),
-- check the version handshake, and restart it on the next use after it died.
local M = {}

local state = {
  chan = nil, -- job/channel id while running
  stopping = false,
  version = nil,
  warned_exit = false,
  log_file = nil,
  stderr = {},
}

local function plugin_root()
  local src = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

local function notify(msg, level)
  vim.schedule(function()
    vim.notify("(flemma) " .. msg, level or vim.log.levels.ERROR)
  end)
end

--- The log file the host writes to.
function M.log_file(cfg)
  if cfg and cfg.host and cfg.host.log_file then
    return cfg.host.log_file
  end
  return require("flemma").state_dir() .. "/host.log"
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
    "flemma-host not found: run `make build` in " .. plugin_root() .. " (or set host.cmd in setup())"
end

local function on_exit(_, code)
  local was = state.chan
  state.chan = nil
  state.version = nil
  if state.stopping or was == nil then
    return
  end
  -- A host that died mid-run must not leave chat buffers locked.
  vim.schedule(function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].filetype == "chat" then
        vim.bo[b].modifiable = true
      end
    end
  end)
  if not state.warned_exit then
    state.warned_exit = true
    local tail = table.concat(state.stderr, "\n")
    notify(
      string.format(
        "host exited unexpectedly (code %d); it restarts on next use. Log: %s%s",
        code,
        state.log_file or "?",
        tail ~= "" and ("\n" .. tail) or ""
      )
    )
  end
end

--- Start the host if it is not running; returns the channel or nil, err.
function M.ensure(cfg)
  if state.chan then
    return state.chan
  end
  local argv, err = M.find(cfg)
  if not argv then
    return nil, err
  end
  state.log_file = M.log_file(cfg)
  vim.fn.mkdir(vim.fn.fnamemodify(state.log_file, ":h"), "p", 448) -- 0700
  table.insert(argv, "--log-file")
  table.insert(argv, state.log_file)
  state.stderr = {}
  state.stopping = false
  local ok, chan = pcall(vim.fn.jobstart, argv, {
    rpc = true,
    on_exit = on_exit,
    on_stderr = function(_, data)
      for _, line in ipairs(data or {}) do
        if line ~= "" then
          table.insert(state.stderr, line)
          if #state.stderr > 20 then
            table.remove(state.stderr, 1)
          end
        end
      end
    end,
  })
  if not ok or type(chan) ~= "number" or chan <= 0 then
    return nil, string.format("could not start %s: %s", argv[1], ok and tostring(chan) or chan)
  end
  state.chan = chan
  local hs_ok, info = pcall(vim.rpcrequest, chan, "flemma.version")
  if not hs_ok or type(info) ~= "table" then
    M.stop()
    return nil, "host did not answer the version handshake: " .. tostring(info) .. " (log: " .. state.log_file .. ")"
  end
  state.version = info.version
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
  state.warned_exit = false
  local sok, serr = pcall(vim.rpcrequest, chan, "flemma.setup", require("flemma").host_config())
  if not sok then
    notify("host rejected the configuration: " .. tostring(serr))
  end
  -- Tools registered before the host started, then tools.modules (lazily,
  -- on this first start).
  local tools = require("flemma.tools")
  local defs = tools._wire_all()
  if #defs > 0 then
    local dok, res = pcall(vim.rpcrequest, chan, "flemma.define_tools", defs)
    if not dok then
      notify("could not register tools: " .. tostring(res))
    elseif type(res) == "table" and type(res.errors) == "table" then
      for _, e in ipairs(res.errors) do
        notify(e)
      end
    end
  end
  tools.load_modules()
  for _, r in ipairs(require("flemma.tools.approval")._wire_all()) do
    pcall(vim.rpcrequest, chan, "flemma.approval_register", r)
  end
  return chan
end

--- Call the host; starts it on first use. Returns result or nil, err.
function M.request(method, ...)
  local chan, err = M.ensure(require("flemma").config())
  if not chan then
    return nil, err
  end
  local ok, res = pcall(vim.rpcrequest, chan, method, ...)
  if not ok then
    return nil, tostring(res)
  end
  if res == vim.NIL then
    res = nil
  end
  return res
end

--- Send a notification (no answer awaited).
function M.notify(method, ...)
  local chan, err = M.ensure(require("flemma").config())
  if not chan then
    return nil, err
  end
  vim.rpcnotify(chan, method, ...)
  return true
end

function M.running()
  return state.chan ~= nil, state.version, state.log_file
end

--- The channel id (for tests and :checkhealth), or nil.
function M._chan()
  return state.chan
end

function M.stop()
  if state.chan then
    state.stopping = true
    pcall(vim.fn.jobstop, state.chan)
    state.chan = nil
  end
end

return M
