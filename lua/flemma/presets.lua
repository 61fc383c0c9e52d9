-- Named presets for :Flemma switch $name (setup's presets = {…}): a preset is
-- a provider, a model and parameters under a name. A preset is expanded here
-- into the words :Flemma switch <provider> [model] [key=value…] takes, and
-- that spec is what the host checks and applies (and what a restarted host
-- is given again): a preset can change nothing the command itself cannot.
-- Pure: it reads the config it is given.
local M = {}

-- The parameters a preset may carry: those :Flemma switch takes.
M.params = { "max_tokens", "temperature", "thinking", "cache_retention" }

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do
    table.insert(out, k)
  end
  table.sort(out, function(a, b)
    return tostring(a) < tostring(b)
  end)
  return out
end

--- The presets of a config by name ("fast": a key "fast" or "$fast").
function M.all(cfg)
  local out = {}
  local presets = type(cfg) == "table" and cfg.presets or nil
  if type(presets) ~= "table" then
    return out
  end
  for k, v in pairs(presets) do
    if type(k) == "string" then
      local name = k:gsub("^%$", "")
      if name ~= "" then
        out[name] = v
      end
    end
  end
  return out
end

--- The "$name" of every preset, sorted.
function M.names(cfg)
  local out = {}
  for _, name in ipairs(sorted_keys(M.all(cfg))) do
    table.insert(out, "$" .. name)
  end
  return out
end

-- A parameter's value as one word of the spec.
local function word(v)
  local s = tostring(v)
  if s:find("[%s\"'\\]") then
    return '"' .. s:gsub('[\\"]', "\\%0") .. '"'
  end
  return s
end

local function check_param(name, k, v)
  if k == "max_tokens" then
    if type(v) ~= "number" or v ~= math.floor(v) or v < 1 then
      return string.format("preset $%s: parameters.max_tokens must be a whole number (got %s)", name, vim.inspect(v))
    end
  elseif k == "temperature" then
    if type(v) ~= "number" then
      return string.format("preset $%s: parameters.temperature must be a number (got %s)", name, vim.inspect(v))
    end
  elseif k == "cache_retention" then
    if v ~= "short" and v ~= "long" and v ~= "none" then
      return string.format(
        'preset $%s: parameters.cache_retention must be "short", "long" or "none" (got %s)',
        name,
        vim.inspect(v)
      )
    end
  elseif k == "thinking" then
    local t = type(v)
    if t ~= "string" and t ~= "number" and t ~= "boolean" then
      return string.format(
        "preset $%s: parameters.thinking must be a level, a budget or false (got %s)",
        name,
        vim.inspect(v)
      )
    end
  else
    return string.format(
      "preset $%s: unknown parameter %q (a preset takes %s)",
      name,
      tostring(k),
      table.concat(M.params, ", ")
    )
  end
end

--- The words of preset `name` (without "$"): { provider, model?, "k=v"… },
--- or nil and a message that says what is wrong with it. provider is the
--- provider set up when the preset names none.
function M.words(cfg, name)
  local p = M.all(cfg)[name]
  if p == nil then
    local names = M.names(cfg)
    return nil,
      string.format(
        "unknown preset $%s (%s); nothing was changed",
        name,
        #names > 0 and ("presets: " .. table.concat(names, ", "))
          or "no presets are set up: presets = { … } in setup()"
      )
  end
  if type(p) == "string" then
    local words = vim.split(p, "%s+", { trimempty = true })
    if #words == 0 or words[1]:find("=", 1, true) then
      return nil, string.format("preset $%s: %q does not start with a provider; nothing was changed", name, p)
    end
    return words
  end
  if type(p) ~= "table" then
    return nil,
      string.format(
        'preset $%s is a %s: a preset is { provider, model, parameters = {…} } or "<provider> [model] [key=value…]"; nothing was changed',
        name,
        type(p)
      )
  end
  for _, k in ipairs(sorted_keys(p)) do
    if k ~= "provider" and k ~= "model" and k ~= "parameters" then
      return nil,
        string.format(
          "preset $%s: unknown key %q (a preset takes provider, model, parameters); nothing was changed",
          name,
          tostring(k)
        )
    end
  end
  local provider = p.provider == nil and cfg.provider or p.provider
  if type(provider) ~= "string" or provider == "" or provider:find("[%s=]") then
    return nil, string.format("preset $%s: provider must be a provider's name (got %s)", name, vim.inspect(p.provider))
  end
  if p.model ~= nil and (type(p.model) ~= "string" or p.model == "" or p.model:find("[%s=]")) then
    return nil, string.format("preset $%s: model must be a model's name (got %s)", name, vim.inspect(p.model))
  end
  local words = { provider, p.model }
  if p.parameters ~= nil then
    if type(p.parameters) ~= "table" then
      return nil, string.format("preset $%s: parameters must be a table (got %s)", name, vim.inspect(p.parameters))
    end
    for _, k in ipairs(sorted_keys(p.parameters)) do
      local err = check_param(name, k, p.parameters[k])
      if err then
        return nil, err .. "; nothing was changed"
      end
      table.insert(words, k .. "=" .. word(p.parameters[k]))
    end
  end
  return words
end

--- The :Flemma switch arguments with a leading "$name" expanded: a model
--- after it replaces the preset's, key=value words after it are added
--- (the later wins). Arguments without a preset come back as they are.
--- Returns the spec string, or nil and a message.
function M.expand(cfg, args)
  local first = args[1]
  if type(first) ~= "string" or first:sub(1, 1) ~= "$" then
    return table.concat(args, " ")
  end
  local words, err = M.words(cfg, first:sub(2))
  if not words then
    return nil, err
  end
  local rest = { unpack(args, 2) }
  if rest[1] and not rest[1]:find("=", 1, true) then
    -- A model named after the preset replaces the preset's.
    if words[2] and not words[2]:find("=", 1, true) then
      words[2] = rest[1]
    else
      table.insert(words, 2, rest[1])
    end
    table.remove(rest, 1)
  end
  vim.list_extend(words, rest)
  return table.concat(words, " ")
end

--- What the picker shows for a preset: "$fast  anthropic claude-haiku-4-5
--- temperature=0", or the problem with it.
function M.describe(cfg, name)
  local words, err = M.words(cfg, name)
  if not words then
    return "$" .. name .. "  (" .. err .. ")"
  end
  return "$" .. name .. "  " .. table.concat(words, " ")
end

return M
