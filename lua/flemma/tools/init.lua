-- require("flemma.tools"): register custom tools. Definitions go to the host
-- (schema, flags); execute and format_preview stay here and the host calls
-- them back. The registry is flemma.state's tools table; a running host
-- hears of new tools through flemma.channel (flemma.host sends the registry
-- when it starts).
local P = require("flemma.protocol")
local channel = require("flemma.channel")
local config = require("flemma.config")
local state = require("flemma.state")
local M = {}

local reg = state.tools
local defs, order, running, sources = reg.defs, reg.order, reg.running, reg.sources

local notify = require("flemma.notify").new(vim.log.levels.WARN, true)

-- A non-empty list (an empty table is not an array of definitions).
local function is_list(t)
  return type(t) == "table" and next(t) ~= nil and config.is_list(t)
end

-- What the host needs of a definition: no functions.
local function wire(def)
  return {
    name = def.name,
    description = def.description or "",
    input_schema = def.input_schema or vim.empty_dict(),
    output_schema = def.output_schema,
    strict = def.strict == true,
    async = def.async == true,
    capabilities = def.capabilities or {},
    tags = def.tags or {},
    requires = def.requires or {},
    enabled = def.enabled ~= false,
    supersedes = def.supersedes,
    timeout = def.timeout,
    source = def._source or "lua",
    has_preview = type(def.format_preview) == "function",
    has_diff = type(def.diff) == "function",
    has_review = type(def.review) == "function",
    -- Object schemas are closed (additionalProperties = false) unless the tool opts out.
    open_schema = def.open_schema == true,
  }
end

local function has_capability(def, cap)
  for _, c in ipairs(def.capabilities or {}) do
    if c == cap then
      return true
    end
  end
  return false
end

-- Sends definitions to a running host with method (define_tools or
-- define_chains); false when the host refused one of them.
local function push(list, method)
  method = method or P.define_tools
  if not channel.get() or #list == 0 then
    return true
  end
  local ok, encoded = pcall(vim.fn.json_encode, list)
  if not ok then
    notify("could not register tools: " .. tostring(encoded), vim.log.levels.ERROR)
    return false
  end
  local res, err = channel.request(method, encoded)
  if err then
    notify("could not register tools: " .. err, vim.log.levels.ERROR)
    return false
  elseif type(res) == "table" and type(res.errors) == "table" and #res.errors > 0 then
    for _, e in ipairs(res.errors) do
      notify(e, vim.log.levels.ERROR)
    end
    return false
  end
  return true
end

-- A tool chain as the host expects it (the host validates it).
local function chain_wire(def)
  local steps = {}
  for i, st in ipairs(def.steps) do
    local input = st.input
    if type(input) ~= "table" or next(input) == nil then
      input = vim.empty_dict()
    end
    steps[i] = { name = st.name, tool = st.tool, input = input }
  end
  return {
    name = def.name,
    description = def.description or "",
    input_schema = def.input_schema,
    steps = steps,
    tags = def.tags or {},
    timeout = def.timeout,
    source = def._source or "lua",
  }
end

--- Register a tool chain: { name, description?, input_schema?, steps = { { name, tool,
--- input }, … }, tags?, timeout? }. A step's input is a template: strings may hold
--- {{ input.<field> }} and {{ steps.<step>.output }}. The host validates it; an error is
--- shown and false returned.
function M.register_chain(def, source)
  if type(def) ~= "table" or type(def.name) ~= "string" or def.name == "" then
    notify("register_chain(): a chain is a table with a name", vim.log.levels.ERROR)
    return false
  end
  if not is_list(def.steps) then
    notify("register_chain(" .. def.name .. "): steps must be a non-empty list", vim.log.levels.ERROR)
    return false
  end
  for i, st in ipairs(def.steps) do
    if type(st) ~= "table" or type(st.name) ~= "string" or type(st.tool) ~= "string" then
      notify(
        string.format("register_chain(%s): step %d needs a name and a tool (strings)", def.name, i),
        vim.log.levels.ERROR
      )
      return false
    end
  end
  def = vim.deepcopy(def)
  def._source = source or def._source or "lua"
  local chains, chain_order = reg.chains, reg.chain_order
  if not chains[def.name] then
    table.insert(chain_order, def.name)
  end
  chains[def.name] = def
  return push({ chain_wire(def) }, P.define_chains)
end

--- Every tool chain in host form (sent when the host starts, after the tools).
function M._wire_chains()
  local out = {}
  for _, name in ipairs(reg.chain_order) do
    if reg.chains[name] then
      table.insert(out, chain_wire(reg.chains[name]))
    end
  end
  return out
end

local function add(name, def, source)
  if type(def) ~= "table" then
    notify("register(" .. tostring(name) .. "): the definition must be a table", vim.log.levels.ERROR)
    return false
  end
  def = vim.deepcopy(def)
  def.name = def.name or name
  if type(def.name) ~= "string" or def.name == "" then
    notify("register(): a definition needs a name", vim.log.levels.ERROR)
    return false
  end
  if type(def.execute) ~= "function" then
    notify("register(" .. def.name .. "): execute must be a function", vim.log.levels.ERROR)
    return false
  end
  -- The "diff" capability and the diff function come together: a diff
  -- function declares the capability, the capability needs the function.
  if type(def.diff) == "function" then
    if not has_capability(def, "diff") then
      def.capabilities = def.capabilities or {}
      table.insert(def.capabilities, "diff")
    end
  elseif def.diff ~= nil or has_capability(def, "diff") then
    notify(
      "register("
        .. def.name
        .. '): the "diff" capability needs diff = function(input, ctx) returning { path, content }',
      vim.log.levels.ERROR
    )
    return false
  end
  if def.review ~= nil and (type(def.review) ~= "function" or type(def.diff) ~= "function") then
    notify("register(" .. def.name .. "): review must be a function, and needs a diff function", vim.log.levels.ERROR)
    return false
  end
  def._source = source or def._source or "lua"
  if not defs[def.name] then
    table.insert(order, def.name)
  end
  defs[def.name] = def
  push({ wire(def) })
  return true
end

--- Tell the running host how many async sources are still resolving: its
--- one gate holds every step that decides calls or sends (keys, :Flemma
--- send, autopilot) until none is, and then goes on for each waiting
--- buffer wherever the cursor is. Called when a source is added or done
--- (after the tools it registered were sent) and when a host starts.
function M._report_sources()
  if channel.get() then
    channel.request(P.sources_pending, sources.pending)
  end
end

local function source_done(gen, source, err)
  if source.done or gen ~= sources.generation then
    return
  end
  source.done = true
  sources.pending = sources.pending - 1
  M._report_sources()
  if err ~= nil then
    notify("Async tool source failed: " .. tostring(err))
  end
  if sources.pending == 0 then
    local waiters = sources.waiters
    sources.waiters = {}
    vim.schedule(function()
      for _, fn in ipairs(waiters) do
        pcall(fn)
      end
      require("flemma.buf").event("FlemmaBootComplete", {})
    end)
  end
end

local function add_source(resolve, timeout, label)
  sources.pending = sources.pending + 1
  M._report_sources()
  local gen = sources.generation
  local source = { done = false }
  local function done(err)
    source_done(gen, source, err)
  end
  local function register(name, def)
    add(name, def, label or "async source")
  end
  local tcfg = state.config().tools
  local secs = timeout or (type(tcfg.timeouts) == "table" and tcfg.timeouts.default) or tcfg.default_timeout or 30
  vim.defer_fn(function()
    done(string.format("Timed out after %ss", secs))
  end, math.floor(secs * 1000))
  local ok, err = pcall(resolve, register, done)
  if not ok then
    done(err)
  end
end

--- Register tools. Forms (seed 004): (name, def); a module name exporting
--- `definitions` or `resolve(register, done)` [+ `timeout`]; an array of
--- definitions; a function (register, done); a table { resolve, timeout }.
function M.register(a, b)
  if type(a) == "string" and b ~= nil then
    return add(a, b)
  elseif type(a) == "string" then
    local ok, mod = pcall(require, a)
    if not ok then
      notify("could not load tool module '" .. a .. "': " .. tostring(mod), vim.log.levels.ERROR)
      return false
    end
    local has_chains = type(mod) == "table" and is_list(mod.chains)
    if type(mod) == "table" and type(mod.definitions) == "table" then
      for _, def in ipairs(mod.definitions) do
        add(nil, def, "lua module " .. a)
      end
    elseif type(mod) == "table" and type(mod.resolve) == "function" then
      add_source(mod.resolve, mod.timeout, "lua module " .. a)
    elseif not has_chains then
      notify("tool module '" .. a .. "' exports neither definitions, resolve nor chains", vim.log.levels.ERROR)
      return false
    end
    if has_chains then
      for _, def in ipairs(mod.chains) do
        M.register_chain(def, "lua module " .. a)
      end
    end
    return true
  elseif type(a) == "function" then
    add_source(a, nil)
    return true
  elseif type(a) == "table" and type(a.resolve) == "function" then
    add_source(a.resolve, a.timeout)
    return true
  elseif is_list(a) then
    for _, def in ipairs(a) do
      add(nil, def)
    end
    return true
  elseif type(a) == "table" and a.name then
    return add(a.name, a)
  end
  notify("register(): unsupported arguments", vim.log.levels.ERROR)
  return false
end

--- Load tools.modules from the config (once, lazily).
function M.load_modules()
  if reg.modules_loaded then
    return
  end
  reg.modules_loaded = true
  for _, name in ipairs(state.config().tools.modules or {}) do
    M.register(name)
  end
end

function M.is_ready()
  return sources.pending == 0
end

--- Run fn once every async source has resolved (now if they have).
function M.when_ready(fn)
  if M.is_ready() then
    fn()
  else
    table.insert(sources.waiters, fn)
  end
end

function M.get(name)
  return defs[name]
end

--- Every definition in host form (sent when the host starts).
function M._wire_all()
  local out = {}
  for _, name in ipairs(order) do
    if defs[name] then
      table.insert(out, wire(defs[name]))
    end
  end
  return out
end

-- A result as the host expects it: { success, output, error }.
local function normalize(res)
  if type(res) ~= "table" then
    return { success = false, error = "the tool returned " .. type(res) .. ", not a result table" }
  end
  return { success = res.success == true, output = res.output, error = res.error }
end

--- Called by the host: run a Lua tool. Returns { status = "done", result }
--- for a sync tool (or an async one that answered at once), { status =
--- "started" } when the answer will come as the notification
--- flemma.tool_done(token, result), or { status = "internal", error } when
--- the tool threw (the host logs that and hides it from the model).
function M._execute(name, token, input, info)
  local def = defs[name]
  if not def then
    return { status = "internal", error = "no Lua tool named " .. tostring(name) }
  end
  local ctx = require("flemma.tools.context").new(name, info)
  if def.async then
    local phase = "starting"
    local early
    local function callback(res)
      if phase == "finished" then
        return -- only the first call counts
      end
      if phase == "starting" then
        early = res
        phase = "finished"
        return
      end
      phase = "finished"
      running[token] = nil
      channel.notify(P.tool_done, token, normalize(res))
    end
    local ok, cancel = pcall(def.execute, input, ctx, callback)
    if not ok then
      phase = "finished"
      return { status = "internal", error = tostring(cancel) }
    end
    if phase == "finished" then
      return { status = "done", result = normalize(early) }
    end
    phase = "running"
    running[token] = cancel
    return { status = "started" }
  end
  local ok, res = pcall(def.execute, input, ctx)
  if not ok then
    return { status = "internal", error = tostring(res) }
  end
  return { status = "done", result = normalize(res) }
end

--- Called by the host when an async execution is cancelled.
function M._cancel(token)
  local cancel = running[token]
  running[token] = nil
  if type(cancel) == "function" then
    pcall(cancel)
  end
end

--- Called by the host: what a Lua tool with the "diff" capability would
--- leave in a file, { path (resolved), input (as named), content }; nil when it declines, { error } when
--- its diff function failed or answered something else.
function M._diff(name, input, info)
  local def = defs[name]
  if not def or type(def.diff) ~= "function" then
    return nil
  end
  local ctx = require("flemma.tools.context").new(name, info)
  local ok, d, err = pcall(def.diff, vim.deepcopy(input), ctx)
  if not ok then
    return { error = tostring(d) }
  elseif d == nil then
    return err ~= nil and { error = tostring(err) } or nil
  elseif type(d) ~= "table" or type(d.path) ~= "string" or d.path == "" or type(d.content) ~= "string" then
    return { error = "diff must return { path = string, content = string }" }
  end
  -- The path as the tool's execute resolves it (ctx.path.resolve).
  return { path = ctx.path.resolve(d.path), input = d.path, content = d.content }
end

--- Called by the host: the input that makes a Lua tool write content (the
--- user's reviewed version), from its review function.
function M._review(name, input, content)
  local def = defs[name]
  if not def or type(def.review) ~= "function" then
    return { error = name .. " takes no reviewed version" }
  end
  local ok, res, err = pcall(def.review, vim.deepcopy(input), content)
  if not ok then
    return { error = tostring(res) }
  elseif type(res) ~= "table" then
    return { error = err ~= nil and tostring(err) or "review must return the new input (a table)" }
  end
  -- An empty table is an object here: the input is an object.
  if next(res) == nil then
    res = vim.empty_dict()
  end
  return { input = res }
end

--- Called by the host: a Lua tool's format_preview, or nil.
function M._preview(name, input, max_length)
  local def = defs[name]
  if not def or type(def.format_preview) ~= "function" then
    return nil
  end
  local ok, s = pcall(def.format_preview, input, max_length)
  if ok and type(s) == "string" then
    return s
  end
  return nil
end

return M
