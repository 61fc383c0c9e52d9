-- Options: their defaults and what each takes come from lua/flemma/schema.lua,
-- which is generated from the one option schema in Go (options/schema.go; go
-- generate ./options). setup() merges the user's table over the defaults and
-- validates it key by key: a wrong value is replaced (by the default, or the
-- stricter choice for approval and the sandbox) and reported, every other key
-- applies. Pure: it requires only that data (flemma.state keeps the resolved
-- config).
local schema = require("flemma.schema")
local M = {}

---@class flemma.Config
M.defaults = schema.defaults

--- A table whose keys are exactly 1..n (an empty table counts).
function M.is_list(t)
  if type(t) ~= "table" then
    return false
  end
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n == #t
end
local is_list = M.is_list

-- Keys whose value is a list: a user list replaces the default instead of
-- being merged into it index by index. Tables whose keys are the user's own
-- (names of presets, providers, provider parameters, environment
-- variables). Options whose default is nil (so they are not keys of
-- M.defaults). All from the schema.
local list_keys, open_maps, nil_defaults = {}, {}, {}
for _, o in ipairs(schema.options) do
  list_keys[o.path] = o.list or nil
  open_maps[o.path] = o.open or nil
  for _, ty in ipairs(o.types) do
    if ty == "nil" then
      nil_defaults[o.path] = true
    end
  end
end

local function merge(base, over, path)
  local out = vim.deepcopy(base)
  for k, v in pairs(over) do
    local key = path == "" and k or (path .. "." .. k)
    if type(v) == "table" and type(out[k]) == "table" and not list_keys[key] and not is_list(v) then
      out[k] = merge(out[k], v, key)
    else
      out[k] = v
    end
  end
  return out
end

-- The keys of one entry of providers, mcp_servers and models (the schema's
-- entries), by name.
local function by_path(list)
  local out = {}
  for _, o in ipairs(list) do
    out[o.path] = o
  end
  return out
end
local provider_keys = by_path(schema.entries.providers)
M.provider_keys = provider_keys
local mcp_keys = by_path(schema.entries.mcp_servers)
local model_fields = by_path(schema.entries.models)

local function set(t, path, value)
  local parts = vim.split(path, ".", { plain = true })
  for i = 1, #parts - 1 do
    t = t[parts[i]]
  end
  t[parts[#parts]] = value
end

local function get(t, path)
  for part in path:gmatch("[^.]+") do
    if type(t) ~= "table" then
      return nil
    end
    t = t[part]
  end
  return t
end

local function distance(a, b)
  if math.abs(#a - #b) > 2 then
    return 3
  end
  local prev = {}
  for j = 0, #b do
    prev[j] = j
  end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

--- The name among names (a list, or the keys of a table) closest to k, when
--- one is within two edits (a typo such as auto_aprove); nil otherwise.
local function closest(k, names)
  local best, best_d = nil, 3
  local list = is_list(names) and names or vim.tbl_keys(names)
  for _, c in ipairs(list) do
    local d = distance(tostring(k), tostring(c))
    if d < best_d then
      best, best_d = c, d
    end
  end
  return best
end

--- v is a list of strings (an argv: no shell).
local function string_list(v)
  for i, x in pairs(v) do
    if type(i) ~= "number" or type(x) ~= "string" then
      return false
    end
  end
  return true
end

--- v maps names to strings (headers, environment variables).
local function string_map(v)
  for k, x in pairs(v) do
    if type(k) ~= "string" or type(x) ~= "string" then
      return false
    end
  end
  return true
end

--- Warnings for keys of user that flemma does not know, with the closest
--- known key when one is near (a typo such as auto_aprove).
local function unknown_keys(user, defaults, path, out)
  if type(user) ~= "table" or is_list(user) or open_maps[path] or list_keys[path] then
    return out
  end
  for k, v in pairs(user) do
    local key = path == "" and tostring(k) or (path .. "." .. tostring(k))
    local known = type(defaults) == "table" and defaults[k] ~= nil or nil_defaults[key]
    if not known then
      local candidates = {}
      for dk in pairs(type(defaults) == "table" and defaults or {}) do
        candidates[#candidates + 1] = tostring(dk)
      end
      for nk in pairs(nil_defaults) do
        local parent, name = nk:match("^(.-)%.?([^.]+)$")
        if parent == path then
          candidates[#candidates + 1] = name
        end
      end
      local best = closest(k, candidates)
      if path == "tools" and type(v) == "table" and not best then
        -- tools.<name> = { … } is a tool's own configuration (ctx:get_config()).
        goto continue
      end
      local hint = best and string.format(" (did you mean %s?)", path == "" and best or (path .. "." .. best)) or ""
      table.insert(out, string.format("unknown option %s%s: it is ignored", key, hint))
    elseif type(defaults) == "table" then
      unknown_keys(v, defaults[k], key, out)
    end
    ::continue::
  end
  return out
end

-- providers.<name>: every key known and of its type; a wrong value is
-- dropped with an error, an unknown key warned about (did you mean).
local function check_providers(cfg, errors, warnings)
  if type(cfg.providers) ~= "table" then
    table.insert(errors, "providers: expected table, got " .. type(cfg.providers) .. " (the default is used)")
    cfg.providers = vim.deepcopy(M.defaults.providers)
    return
  end
  for name, entry in pairs(cfg.providers) do
    local base = "providers." .. tostring(name)
    if type(entry) ~= "table" then
      table.insert(errors, string.format("%s: expected table, got %s (ignored)", base, type(entry)))
      cfg.providers[name] = nil
    else
      for k, v in pairs(entry) do
        local key = base .. "." .. tostring(k)
        local spec = provider_keys[k]
        if not spec then
          local best = closest(k, provider_keys)
          local hint = best and string.format(" (did you mean %s.%s?)", base, best) or ""
          table.insert(warnings, string.format("unknown option %s%s: it is ignored", key, hint))
          entry[k] = nil
        else
          local ok = M.check(spec, v)
          local why = string.format("expected %s, got %s", spec.want, M.literal(v))
          if ok and k == "api_key_env" and v == true then
            ok, why = false, "expected a variable name, a list of names, or false (no key)"
          elseif ok and k == "api_key_env" and type(v) == "table" and not string_list(v) then
            ok, why = false, "expected a list of strings"
          elseif ok and k == "headers" and not string_map(v) then
            ok, why = false, "expected a table of header names to string values"
          end
          if not ok then
            table.insert(errors, string.format("%s: %s (ignored)", key, why))
            entry[k] = nil
          end
        end
      end
    end
  end
end

-- models = { [id] = { … } }: each entry's fields; a wrong one is reported and
-- dropped, the rest of the entry applies.
local function check_models(cfg, errors, warnings)
  if type(cfg.models) == "table" then
    for id, entry in pairs(cfg.models) do
      local key = "models[" .. string.format("%q", tostring(id)) .. "]"
      if type(id) ~= "string" or type(entry) ~= "table" then
        table.insert(errors, key .. ": expected a table of model settings (the entry is ignored)")
        cfg.models[id] = nil
      else
        for field, v in pairs(entry) do
          local spec = model_fields[field]
          if not spec then
            local best = closest(field, model_fields)
            table.insert(
              warnings,
              string.format(
                "unknown option %s.%s%s: it is ignored",
                key,
                tostring(field),
                best and (" (did you mean " .. best .. "?)") or ""
              )
            )
            entry[field] = nil
          elseif not M.check(spec, v) then
            table.insert(
              errors,
              string.format("%s.%s: expected %s, got %s (it is ignored)", key, field, spec.want, M.literal(v))
            )
            entry[field] = nil
          end
        end
      end
    end
  end
end

-- mcp_servers = { [name] = { command, args, env } | { url, headers } }: a
-- wrong entry is reported and dropped (the other servers still start).
local function check_mcp_servers(cfg, errors, warnings)
  if type(cfg.mcp_servers) ~= "table" then
    return -- reported by the type check of the default
  end
  for name, entry in pairs(cfg.mcp_servers) do
    local key = "mcp_servers." .. tostring(name)
    local why
    if
      type(name) ~= "string"
      or not name:match("^[a-z0-9][a-z0-9_]*$")
      or name:find("__", 1, true)
      or name:sub(-1) == "_"
    then
      why = "a server name is lower-case letters and digits, words joined by one _ (its tools are mcp__<name>__<tool>)"
    elseif type(entry) ~= "table" then
      why = "expected a table { command = …, args = {…}, env = {…} } or { url = …, headers = {…} }"
    else
      for k, v in pairs(entry) do
        local spec = mcp_keys[k]
        if not spec then
          table.insert(warnings, string.format("unknown option %s.%s: it is ignored", key, tostring(k)))
          entry[k] = nil
        elseif not M.check(spec, v) then
          why = string.format("%s: expected %s, got %s", k, spec.want, M.literal(v))
        elseif spec.open and not string_map(v) then
          why = k .. ": expected a table of names to string values"
        end
      end
      if not why and (entry.command == nil) == (entry.url == nil) then
        why = "set command (a stdio server) or url (a streamable HTTP server), one of the two"
      end
    end
    if why then
      table.insert(errors, string.format("%s: %s (the server is ignored)", key, why))
      cfg.mcp_servers[name] = nil
    end
  end
end

--- v as Lua writes it: a string quoted, a list in braces (messages).
local function literal(v)
  if type(v) == "string" then
    return '"' .. v:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n"):gsub("\t", "\\t") .. '"'
  elseif type(v) == "table" and is_list(v) then
    if #v == 0 then
      return "{}"
    end
    local parts = {}
    for _, x in ipairs(v) do
      parts[#parts + 1] = literal(x)
    end
    local out = "{ " .. table.concat(parts, ", ") .. " }"
    return #out > 60 and (out:sub(1, 57) .. "…") or out
  elseif type(v) == "table" then
    local out = vim.inspect(v, { newline = " ", indent = "" })
    return #out > 60 and (out:sub(1, 57) .. "…") or out
  end
  return tostring(v)
end
M.literal = literal

--- Whether v is a value option o (an entry of schema.options) takes.
function M.check(o, v)
  for _, ty in ipairs(o.types) do
    if ty == "nil" then
      if v == nil then
        return true
      end
    elseif ty == "number" then
      if
        type(v) == "number"
        and v == v
        and v ~= math.huge
        and v ~= -math.huge
        and (not o.whole or v == math.floor(v))
        and (o.min == nil or v >= o.min)
      then
        return true
      end
    elseif ty == "string" then
      if type(v) == "string" then
        if o.one_of then
          if vim.tbl_contains(o.one_of, v) then
            return true
          end
        elseif o.percent then
          local n = tonumber(v:match("^(%d+)%%$"))
          if n and n >= 1 and n <= 100 then
            return true
          end
        else
          return true
        end
      end
    elseif ty == "table" then
      if type(v) == "table" then
        if o.list then
          if is_list(v) then
            local strings = true
            for _, x in ipairs(v) do
              strings = strings and type(x) == "string"
            end
            if strings then
              return true
            end
          end
        elseif next(v) == nil or not is_list(v) then
          return true
        end
      end
    elseif type(v) == ty then
      return true
    end
  end
  return false
end

--- What replaces a wrong value v of option o, and how the message says it:
--- the stricter choice where the schema gives one, else the default.
function M.fallback(o, v)
  local function strings()
    local out = {}
    if type(v) == "table" then
      for _, x in ipairs(v) do
        if type(x) == "string" then
          out[#out + 1] = x
        end
      end
    end
    return out
  end
  local default = get(M.defaults, o.path)
  if o.keep == "strings" then
    local kept = strings()
    return kept, string.format("%s is used: %s", literal(kept), o.why)
  elseif o.keep == "strings_or_default" then
    local kept = strings()
    if #kept > 0 then
      return kept, string.format("%s is used: %s", literal(kept), o.why)
    end
    return vim.deepcopy(default), "the default is used: " .. o.why
  elseif o.keep == "default_and_strings" then
    local kept = vim.deepcopy(default)
    for _, x in ipairs(strings()) do
      if not vim.tbl_contains(kept, x) then
        kept[#kept + 1] = x
      end
    end
    return kept, "the default list and the strings given are used: " .. o.why
  elseif o.fallback ~= nil then
    return vim.deepcopy(o.fallback), string.format("%s is used: %s", literal(o.fallback), o.why)
  elseif default == nil then
    return nil, "it is left unset"
  end
  return vim.deepcopy(default), string.format("the default %s is used", literal(default))
end

--- Every option of cfg checked against the schema: a wrong value is
--- replaced (M.fallback) and reported as "path: expected …, got … (what is
--- used)"; a table that should hold options but is something else gets its
--- defaults.
local function validate(cfg, errors)
  for path, field in pairs(schema.shorthands) do
    local v = get(cfg, path)
    if type(v) == "boolean" then
      local t = vim.deepcopy(get(M.defaults, path))
      t[field] = v
      set(cfg, path, t)
    end
  end
  local bad = {}
  for _, o in ipairs(schema.options) do
    local parts = vim.split(o.path, ".", { plain = true })
    for i = 1, #parts - 1 do
      local group = table.concat(parts, ".", 1, i)
      local v = get(cfg, group)
      if v ~= nil and type(v) ~= "table" and not bad[group] then
        bad[group] = true
        local want = schema.shorthands[group] and "a table or a boolean" or "a table"
        local t = vim.deepcopy(get(M.defaults, group))
        local used = "its defaults are used"
        if group == "tools.autopilot" then
          t.enabled, used = false, "autopilot is off: a wrong value never turns it on"
        end
        table.insert(errors, string.format("%s: expected %s, got %s (%s)", group, want, literal(v), used))
        set(cfg, group, t)
      end
    end
    local v = get(cfg, o.path)
    if v ~= nil and not M.check(o, v) then
      local use, how = M.fallback(o, v)
      table.insert(errors, string.format("%s: expected %s, got %s (%s)", o.path, o.want, literal(v), how))
      set(cfg, o.path, use)
    end
  end
  -- tools.timeouts is open (tool names and tags are the user's): each of
  -- its values is a number of seconds.
  if type(cfg.tools.timeouts) == "table" then
    for k, v in pairs(cfg.tools.timeouts) do
      if type(k) ~= "string" or type(v) ~= "number" or v <= 0 then
        table.insert(
          errors,
          string.format(
            "tools.timeouts.%s: expected a number of seconds > 0, got %s (ignored)",
            tostring(k),
            literal(v)
          )
        )
        cfg.tools.timeouts[k] = nil
      end
    end
  end
end

--- Merge user options over the defaults and validate them, key by key: the
--- errors are the values replaced (each once), the warnings unknown keys.
---@return table config, string[] errors, string[] warnings
function M.resolve(user)
  local errors = {}
  if user ~= nil and type(user) ~= "table" then
    return vim.deepcopy(M.defaults), { "setup() expects a table, got " .. type(user) }, {}
  end
  local warnings = unknown_keys(user or {}, M.defaults, "", {})
  table.sort(warnings)
  local cfg = merge(M.defaults, user or {}, "")
  validate(cfg, errors)
  check_providers(cfg, errors, warnings)
  check_models(cfg, errors, warnings)
  check_mcp_servers(cfg, errors, warnings)
  return cfg, errors, warnings
end

--- flemma's state directory: stdpath("state")/flemma, or stdpath("data")/flemma
--- on Neovim versions without a "state" stdpath (0.7).
function M.state_dir()
  local ok, dir = pcall(vim.fn.stdpath, "state")
  if not ok or type(dir) ~= "string" or dir == "" then
    dir = vim.fn.stdpath("data")
  end
  return dir .. "/flemma"
end

--- Where Neovim keeps what it knows of the user's files and sessions:
--- its state folder (shada, undo, swap, logs; 0.8 and later), its data
--- folder (plugins' data; 0.7's shada, undo, swap), the folders
--- 'undodir', 'directory' and 'backupdir' name (not "." and other relative
--- ones: those are the edited file's own folder), the shada file's folder,
--- and flemma's log file. Tools never read them and sandboxed commands
--- never see them, like flemma's state folder.
function M.private_paths(cfg)
  local out, seen = {}, {}
  local function add(p)
    if type(p) ~= "string" or p == "" then
      return
    end
    p = vim.fn.fnamemodify(vim.fn.expand(p), ":p"):gsub("/+$", "")
    if p ~= "" and p:sub(1, 1) == "/" and not seen[p] then
      seen[p] = true
      table.insert(out, p)
    end
  end
  local ok, state = pcall(vim.fn.stdpath, "state")
  if ok and type(state) == "string" then
    add(state)
  end
  -- Plugins keep their data here: sessions, histories, other assistants'
  -- conversations (and Neovim 0.7 its shada, undo and swap files).
  add(vim.fn.stdpath("data"))
  for _, opt in ipairs({ "undodir", "directory", "backupdir" }) do
    for _, d in ipairs(vim.split(vim.o[opt] or "", ",", { plain = true })) do
      d = d:gsub("/+$", "")
      if d:sub(1, 1) == "/" or d:sub(1, 1) == "~" or d:sub(1, 1) == "$" then
        add(d)
      end
    end
  end
  local shada = vim.o.shadafile
  if shada == "" then
    add(vim.fn.stdpath("data") .. "/shada")
  elseif shada ~= "NONE" then
    add(vim.fn.fnamemodify(vim.fn.expand(shada), ":h"))
  end
  if cfg and cfg.host and type(cfg.host.log_file) == "string" then
    add(cfg.host.log_file)
  end
  return out
end

--- The part of the config the host needs, in a shape msgpack can carry:
--- functions are replaced by a marker (the host calls them back in Neovim).
function M.for_host(cfg)
  local function strip(v)
    if type(v) == "function" then
      return { __lua_function = true }
    elseif type(v) == "table" then
      local out = {}
      for k, x in pairs(v) do
        out[k] = strip(x)
      end
      if next(out) == nil and not is_list(v) then
        return vim.empty_dict()
      end
      return out
    end
    return v
  end
  return strip({
    paths = {
      state = M.state_dir(),
      config = vim.fn.stdpath("config"),
      data = vim.fn.stdpath("data") .. "/flemma",
      private = M.private_paths(cfg),
    },
    provider = cfg.provider,
    model = cfg.model,
    models = cfg.models,
    parameters = cfg.parameters,
    providers = cfg.providers,
    mcp_servers = cfg.mcp_servers,
    send = cfg.send,
    tools = cfg.tools,
    sandbox = cfg.sandbox,
  })
end

return M
