-- :Flemma <subcommand> [args]: dispatch and completion.
local P = require("flemma.protocol")
local actions = require("flemma.actions")
local diffview = require("flemma.diffview")
local host = require("flemma.host")
local listing = require("flemma.listing")
local presets = require("flemma.presets")
local state = require("flemma.state")
local trust = require("flemma.trust")
local M = {}

local notify = require("flemma.notify").new(vim.log.levels.INFO)

-- Call the host without waiting; then_(res) runs with its answer.
local host_call = actions.call

-- Call the host and show the text it answers (listings, status) in the
-- listing window, never in the message area (no hit-enter prompt).
local function show(method, args, name, on_enter)
  host_call(method, args, function(res)
    if res and type(res.text) == "string" then
      listing.open(name, res.text, { on_enter = on_enter })
    end
  end)
end

local function buf()
  return vim.api.nvim_get_current_buf()
end

local function line()
  return vim.api.nvim_win_get_cursor(0)[1]
end

M.subcommands = {
  send = function()
    host_call(P.send, { buf() })
  end,
  cancel = function()
    actions.cancel(buf())
  end,
  -- The model summarizes the conversation into a folded summary block that
  -- is sent instead of the turns above it (u undoes it).
  compact = function()
    host_call(P.compact, { buf() })
  end,
  ["tool:execute"] = function()
    host_call(P.execute_at, { buf(), line() })
  end,
  ["tool:approve"] = function()
    if diffview.current() then -- in a diff view: approve the reviewed version
      diffview.approve()
      return
    end
    host_call(P.set_status, { buf(), line(), "approved", "" })
  end,
  ["tool:reject"] = function(args)
    if diffview.reject(table.concat(args, " ")) then
      return
    end
    host_call(P.set_status, { buf(), line(), "rejected", table.concat(args, " ") })
  end,
  -- The pending call under the cursor: approve it, and always allow its
  -- tool (for bash, its command rule) in this buffer for this session.
  ["tool:allow-always"] = function()
    actions.allow_always(buf())
  end,
  ["tool:approve-all"] = function()
    actions.approve_all(buf())
  end,
  ["tool:reject-all"] = function(args)
    actions.reject_all(buf(), table.concat(args, " "))
  end,
  ["tool:diff"] = function()
    diffview.at_cursor(buf())
  end,
  ["tool:result"] = function(args)
    local id = table.remove(args, 1)
    if not id then
      notify("usage: :Flemma tool:result <id> <text>", vim.log.levels.WARN)
      return
    end
    host_call(P.set_result, { buf(), id, table.concat(args, " "), false })
  end,
  ["tool:error"] = function(args)
    local id = table.remove(args, 1)
    if not id then
      notify("usage: :Flemma tool:error <id> <text>", vim.log.levels.WARN)
      return
    end
    host_call(P.set_result, { buf(), id, table.concat(args, " "), true })
  end,
  ["tool:cancel"] = function()
    host_call(P.cancel_at, { buf(), line() })
  end,
  ["tool:cancel-all"] = function()
    actions.cancel(buf())
  end,
  ["tool:list"] = function()
    local bufnr = buf()
    -- <CR> on "line N: name (id): state" goes to that call.
    show(P.tool_list, { bufnr }, "tool-list", function(text, from)
      local lnum = tonumber(text:match("^line (%d+):"))
      if lnum and vim.api.nvim_buf_is_valid(bufnr) then
        listing.goto_line(bufnr, lnum, from)
      end
    end)
  end,
  ["tool:resume"] = function()
    host_call(P.resume, { buf(), line() })
  end,
  ["tool:undo"] = function()
    host_call(P.undo, { buf(), line() })
  end,
  ["tool:discard"] = function()
    host_call(P.discard, { buf(), line() })
  end,
  ["tool:log"] = function(args)
    -- The host renders it for people; --json: the journal's JSON lines.
    host_call(P.journal_log, { buf(), args[1] == "--json" }, function(res)
      if res and type(res.text) == "string" then
        listing.open("tool-log", res.text)
      end
    end)
  end,
  tools = function(args)
    show(P.tools, { buf(), args[1] or "" }, "tools")
  end,
  mcp = function()
    show(P.mcp, {}, "mcp")
  end,
  ["autopilot:enable"] = function()
    state.host.runtime.autopilot = "enable"
    host_call(P.autopilot, { "enable" })
  end,
  ["autopilot:disable"] = function()
    state.host.runtime.autopilot = "disable"
    host_call(P.autopilot, { "disable" })
  end,
  ["autopilot:status"] = function()
    host_call(P.autopilot, { "status" })
  end,
  ["sandbox:status"] = function()
    show(P.sandbox_status, { buf() }, "sandbox-status")
  end,
  trust = function()
    trust.trust(buf())
  end,
  ["attach:allow"] = function()
    host_call(P.attach_allow, { buf() })
  end,
  untrust = function()
    trust.untrust(buf())
  end,
  switch = function(args)
    if #args == 0 then
      M.pick_model()
      return
    end
    -- $name: a preset of setup's presets, expanded into what it stands for
    -- (the host checks it like any :Flemma switch; nothing changes when
    -- either refuses it).
    local spec, err = presets.expand(state.config(), args)
    if not spec then
      notify(err, vim.log.levels.ERROR)
      return
    end
    host_call(P.switch, { spec }, function(res)
      if res and res.phase == "switch" then
        state.host.runtime.switch = spec -- replayed into a restarted host
      end
    end)
  end,
  status = function()
    show(P.status, { buf() }, "status")
  end,
  -- The estimated size of the next send against the model's window.
  ["usage:estimate"] = function()
    local usage = require("flemma.usage")
    usage.refresh(buf(), function(e, err)
      if e then
        notify(usage.describe(e), vim.log.levels.INFO)
      else
        notify("usage:estimate: " .. tostring(err or "the host gave no estimate"), vim.log.levels.ERROR)
      end
    end)
  end,
  -- :Flemma login copilot: GitHub's device sign-in. The host answers with
  -- the code (shown) and the page to enter it on (opened where possible),
  -- then waits for GitHub and says when it is done.
  login = function(args)
    host_call(P.login, { args[1] or "" }, function(res)
      if res and type(res.url) == "string" and res.url ~= "" then
        M.open_url(res.url)
      end
    end)
  end,
  ["host:restart"] = function()
    local chan, r = host.restart()
    if not chan then
      notify(r, vim.log.levels.ERROR)
      return
    end
    local msg = "host restarted"
    if r and r.calls > 0 then
      msg = msg .. string.format(": %d call(s) it was running were interrupted (see the diagnostics on them)", r.calls)
    end
    if r and r.responses > 0 then
      msg = msg .. "; the response in progress was cut off"
    end
    notify(msg, (r and r.calls > 0) and vim.log.levels.WARN or vim.log.levels.INFO)
  end,
  -- The host: the release's binary (checksum verified) or go build;
  -- "force" replaces one of the right version too.
  install = function(args)
    local ok, msg = require("flemma.install").run({ force = args[1] == "force" })
    notify(msg, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  end,
  log = function()
    local _, _, log_file = host.running()
    vim.cmd("split " .. vim.fn.fnameescape(log_file or host.log_file(state.config())))
    -- The log as it is now, at its end; q closes it like the listings.
    vim.cmd("setlocal readonly nomodifiable autoread")
    vim.cmd("normal! G")
    vim.keymap.set(
      "n",
      "q",
      "<cmd>close<CR>",
      { buffer = true, silent = true, nowait = true, desc = "flemma: close the log" }
    )
  end,
}

function M.run(opts)
  local args = vim.deepcopy(opts.fargs)
  local name = table.remove(args, 1)
  if not name then
    notify("usage: :Flemma <" .. table.concat(M.names(), "|") .. ">", vim.log.levels.WARN)
    return
  end
  local fn = M.subcommands[name]
  if not fn then
    notify("unknown subcommand '" .. name .. "'; try one of: " .. table.concat(M.names(), ", "), vim.log.levels.ERROR)
    return
  end
  fn(args)
end

function M.names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

--- Open a URL in the browser where possible: vim.ui.open (Neovim 0.10+),
--- else xdg-open or open when installed. Nothing when neither is there: the
--- message already shows the URL.
function M.open_url(url)
  if vim.ui.open then
    pcall(vim.ui.open, url)
    return
  end
  for _, prog in ipairs({ "xdg-open", "open" }) do
    if vim.fn.executable(prog) == 1 then
      pcall(vim.fn.jobstart, { prog, url }, { detach = true })
      return
    end
  end
end

-- How long the picker waits for a provider's model list before it shows
-- the models it knows (the list keeps coming for completion).
M.pick_wait_ms = 3000

--- :Flemma switch without arguments: one vim.ui.select (so a picker
--- plugin that replaces it shows it) over setup's presets, the catalogue's
--- models of each provider and the providers themselves; a provider picked
--- opens a second picker over its models (the catalogue's, setup's and
--- those its server lists). Nothing waits on the host: the model list is
--- asked for when the provider is picked and the second picker opens when
--- it came, or after pick_wait_ms.
function M.pick_model()
  local cfg = state.config()
  local cat = host.catalogue() or {}
  local providers = cat.providers or {}
  local items = {}
  for _, name in ipairs(presets.names(cfg)) do
    table.insert(items, { label = presets.describe(cfg, name:sub(2)), args = { name } })
  end
  local models = type(cat.models) == "table" and cat.models or {}
  for _, p in ipairs(providers) do
    for _, model in ipairs(type(models[p]) == "table" and models[p] or {}) do
      table.insert(items, { label = p .. " " .. model, args = { p, model } })
    end
  end
  for _, p in ipairs(providers) do
    table.insert(items, { label = p .. " …  (its models, or its default)", provider = p })
  end
  if #items == 0 then
    notify("no providers: the host is not running (:Flemma host:restart)", vim.log.levels.WARN)
    return
  end
  vim.ui.select(items, {
    prompt = "Switch to",
    format_item = function(item)
      return item.label
    end,
  }, function(item)
    if not item then
      return
    end
    if item.args then
      M.subcommands.switch(item.args)
    else
      M.pick_provider_model(item.provider)
    end
  end)
end

--- The second picker of :Flemma switch: the models of one provider.
function M.pick_provider_model(name)
  host.discover(name)
  local waited = 0
  local function open()
    if host.listed(name) == nil and waited < M.pick_wait_ms then
      waited = waited + 100
      vim.defer_fn(open, 100)
      return
    end
    local models = { "(its default model)" }
    vim.list_extend(models, ((host.catalogue() or {}).models or {})[name] or {})
    vim.ui.select(models, { prompt = name .. " model" }, function(model, idx)
      if not model then
        return
      end
      M.subcommands.switch(idx == 1 and { name } or { name, model })
    end)
  end
  open()
end

-- The parameters :Flemma switch takes after the provider and model.
local switch_params = { "max_tokens=", "temperature=", "thinking=", "cache_retention=" }

-- Completion of a subcommand's arguments: fn(args before the one being
-- completed) returns the candidates.
M.completers = {
  ["tool:log"] = function(args)
    return #args == 0 and { "--json" } or {}
  end,
  login = function(args)
    return #args == 0 and { "copilot" } or {}
  end,
  -- :Flemma switch <provider> [model] [key=value…]: the host's providers
  -- and, for the provider typed, the models of its catalogue and setup's.
  -- A "$" word completes setup's presets; after one, the models of its
  -- provider.
  switch = function(args)
    local cat = host.catalogue() or {}
    if #args == 0 then
      local out = presets.names(state.config())
      vim.list_extend(out, cat.providers or {})
      return out
    end
    local out = {}
    if #args == 1 then
      local provider = args[1]
      if provider:sub(1, 1) == "$" then
        local words = presets.words(state.config(), provider:sub(2))
        provider = words and words[1] or ""
      end
      out = vim.deepcopy((cat.models or {})[provider] or {})
      host.discover(provider) -- the server's list, for the next <Tab>
    end
    vim.list_extend(out, switch_params)
    return out
  end,
}

function M.complete(arglead, cmdline, _)
  local words = vim.split(cmdline:gsub("^[%s:]+", ""), "%s+", { trimempty = false })
  local candidates
  if #words <= 2 then
    candidates = M.names()
  else
    local fn = M.completers[words[2]]
    if not fn then
      return {}
    end
    candidates = fn(vim.list_slice(words, 3, #words - 1))
  end
  return vim.tbl_filter(function(n)
    return type(n) == "string" and n:sub(1, #arglead) == arglead
  end, candidates)
end

return M
