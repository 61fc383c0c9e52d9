-- The running host's channel, for the modules the host itself depends on
-- (tools, trust, the keymaps' autocommands): they talk to a host that is
-- already running and never start one. Starting, restarting and waiting for
-- answers is flemma.host's, which requires them, not the other way round.
local state = require("flemma.state")

local M = {}

--- The channel id, or nil when the host is not running.
function M.get()
  return state.host.chan
end

--- Call the running host and wait for the answer (quick calls only).
--- Returns result or nil, err; err when no host runs.
function M.request(method, ...)
  local chan = state.host.chan
  if not chan then
    return nil, "the host is not running"
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

--- Send a notification to the running host, if any; true if it was sent.
function M.notify(method, ...)
  local chan = state.host.chan
  return chan ~= nil and pcall(vim.rpcnotify, chan, method, ...)
end

return M
