-- The ExecutionContext a Lua tool's execute receives (seed 004): the stable
-- contract tools code against, instead of requiring flemma internals.
local P = require("flemma.protocol")
local channel = require("flemma.channel")
local state = require("flemma.state")
local M = {}

local Context = {}
Context.__index = function(self, key)
  local v = rawget(Context, key)
  if v ~= nil then
    return v
  end
  -- Namespaces are built on first access.
  local ns = M.namespaces[key]
  if ns then
    local built = ns(self)
    rawset(self, key, built)
    return built
  end
  return nil
end

--- A read-only deep copy of config.tools[<tool name>], or nil.
function Context:get_config()
  local sub = state.config().tools[rawget(self, "_tool")]
  if type(sub) ~= "table" then
    return nil
  end
  return vim.deepcopy(sub)
end

-- The host that runs the tool answers its questions.
local function host_call(method, ...)
  local res, err = channel.request(method, ...)
  if err then
    error("(flemma) " .. err, 0)
  end
  return res
end

M.namespaces = {
  path = function(ctx)
    return {
      resolve = function(p)
        if type(p) ~= "string" then
          error("ctx.path.resolve: expected a string", 2)
        end
        if p:sub(1, 1) == "/" then
          return vim.fn.fnamemodify(p, ":p")
        end
        if p:sub(1, 2) == "~/" or p == "~" then
          return vim.fn.fnamemodify(p, ":p")
        end
        local base = ctx.__dirname or ctx.cwd
        return vim.fn.fnamemodify(base .. "/" .. p, ":p")
      end,
    }
  end,
  sandbox = function(ctx)
    return {
      is_path_writable = function(p)
        local res = host_call(P.sandbox_writable, ctx.bufnr, ctx.path.resolve(p))
        return type(res) == "table" and res.writable == true
      end,
      wrap_command = function(argv)
        local res = host_call(P.sandbox_wrap, ctx.bufnr, argv)
        if type(res) == "table" and type(res.argv) == "table" then
          return res.argv
        end
        return nil, (type(res) == "table" and res.error) or "sandbox unavailable"
      end,
    }
  end,
  truncate = function(_)
    local limits = state.config().tools.truncate or {}
    local function call(which, text, opts)
      local o = vim.empty_dict()
      if type(opts) == "table" then
        local function int(x)
          x = tonumber(x)
          return x and math.floor(x) or nil
        end
        o.max_lines, o.max_bytes = int(opts.max_lines), int(opts.max_bytes)
      end
      local res = host_call(P.truncate, which, text or "", o)
      return res
    end
    return {
      MAX_LINES = limits.max_lines or 2000,
      MAX_BYTES = limits.max_bytes or 51200,
      truncate_head = function(text, opts)
        return call("head", text, opts)
      end,
      truncate_tail = function(text, opts)
        return call("tail", text, opts)
      end,
      format_size = function(n)
        return host_call(P.format_size, n)
      end,
    }
  end,
}

--- Build the context of one execution. info comes from the host.
function M.new(tool_name, info)
  info = info or {}
  local name = info.buffer
  if name == "" or name == vim.NIL then
    name = nil
  end
  local ctx = {
    _tool = tool_name,
    bufnr = info.bufnr,
    cwd = info.cwd ~= vim.NIL and info.cwd or vim.fn.getcwd(),
    timeout = info.timeout or state.config().tools.default_timeout,
    __filename = name,
    __dirname = name and vim.fn.fnamemodify(name, ":h") or nil,
  }
  return setmetatable(ctx, Context)
end

return M
