-- require("flemma.tools.approval"): approval resolvers written in Lua. The
-- chain lives in the host; a Lua resolver's resolve function stays here and
-- the host calls it back when the chain reaches it. The resolvers are kept
-- in flemma.state (flemma.host registers them when it starts).
local P = require("flemma.protocol")
local channel = require("flemma.channel")
local host = require("flemma.host")
local state = require("flemma.state")
local M = {}

local resolvers = state.resolvers -- name -> { wire = { name, priority, description }, resolve }

-- Tell a running host (one that starts later gets every resolver).
local function push(method, arg)
  if channel.get() then
    local res, err = channel.request(method, arg)
    if err then
      error("(flemma) " .. err, 0)
    end
    return res
  end
end

--- Register (or replace) a resolver: def = { resolve = fn(tool_name, input,
--- ctx), priority = 50, description = "" }. resolve returns "approve",
--- "require_approval", "deny" or nil (pass).
function M.register(name, def)
  if type(name) ~= "string" or name == "" then
    error("(flemma) approval.register: the name must be a non-empty string", 2)
  end
  if name:find(".", 1, true) then
    error("(flemma) approval resolver name '" .. name .. "' must not contain dots (dots indicate module paths)", 2)
  end
  if type(def) ~= "table" or type(def.resolve) ~= "function" then
    error("(flemma) approval.register(" .. name .. "): resolve must be a function", 2)
  end
  local priority = def.priority or 50
  if type(priority) ~= "number" then
    error("(flemma) approval.register(" .. name .. "): priority must be a number", 2)
  end
  local wire = { name = name, priority = priority, description = def.description or "" }
  resolvers[name] = { wire = wire, resolve = def.resolve }
  push(P.approval_register, wire)
end

--- Remove a resolver (Lua-registered or built-in); true if it existed.
function M.unregister(name)
  local had = resolvers[name] ~= nil
  resolvers[name] = nil
  local res = push(P.approval_unregister, name)
  if type(res) == "table" then
    return res.removed == true or had
  end
  return had
end

local function all()
  local res, err = host.request(P.approval_list) -- starts the host if need be
  if err then
    error("(flemma) " .. err, 0)
  end
  local out = {}
  for _, e in ipairs(res or {}) do
    local entry = { name = e.name, priority = e.priority, description = e.description }
    if resolvers[e.name] then
      entry.resolve = resolvers[e.name].resolve
    end
    table.insert(out, entry)
  end
  return out
end

--- The entry of a resolver (built-ins included), or nil.
function M.get(name)
  for _, e in ipairs(all()) do
    if e.name == name then
      return e
    end
  end
  return nil
end

--- Every resolver, in evaluation order (a copy).
function M.get_all()
  return all()
end

function M.count()
  return #all()
end

local function from_auto_approve(v)
  if v == true then
    return "approve"
  elseif v == false then
    return "require_approval"
  elseif v == "deny" then
    return "deny"
  end
  return nil
end

--- Called by the host. kind: "lua" (a registered resolver), "config" (the
--- setup function of tools.auto_approve) or "module" (a module path).
--- Returns { decision = string|nil } or { error = string }.
function M._resolve(kind, name, tool_name, input, ctx)
  local fn, convert
  if kind == "lua" then
    fn = resolvers[name] and resolvers[name].resolve
  elseif kind == "config" then
    fn = state.config().tools.auto_approve
    convert = from_auto_approve
  elseif kind == "module" then
    local ok, mod = pcall(require, name)
    if not ok then
      return { error = "cannot load approval module '" .. name .. "': " .. tostring(mod) }
    end
    fn = type(mod) == "function" and mod or (type(mod) == "table" and mod.resolve)
  end
  if type(fn) ~= "function" then
    return { error = "no resolve function for " .. kind .. " resolver '" .. tostring(name) .. "'" }
  end
  local ok, res = pcall(fn, tool_name, input, ctx)
  if not ok then
    return { error = tostring(res) }
  end
  if convert then
    res = convert(res)
  end
  if res ~= nil and type(res) ~= "string" then
    return { error = "returned invalid result (" .. type(res) .. ")" }
  end
  return { decision = res }
end

return M
