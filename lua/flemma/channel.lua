-- The running host's channel, for the modules the host itself depends on
-- (tools, trust, the keymaps' autocommands): they talk to a host that is
-- already running and never start one. Starting, restarting and answering
-- is flemma.host's, which requires them, not the other way round.
--
-- Every request goes out as the notification flemma.async (id, method,
-- args) and its answer comes back through flemma.host._reply: Neovim never
-- sits in a blocking rpcrequest that a hung host would make last forever.
-- A caller that needs the answer now (a Lua tool's context, a tool
-- registration, :checkhealth) waits for it at most host.timeout, with the
-- editor's event loop running (vim.wait), and gets a message saying the
-- host may be hung otherwise.
local P = require("flemma.protocol")
local notify = require("flemma.notify")
local state = require("flemma.state")

local M = {}

--- The channel id, or nil when the host is not running.
function M.get()
  return state.host.chan
end

--- How long a caller waits for an answer: host.timeout, in ms.
function M.bound_ms()
  local s = tonumber(state.config().host.timeout) or 10
  return math.max(s, 0.1) * 1000
end

--- Send method(args) to chan as flemma.async; cb(result, err) runs when the
--- host answers or is gone (flemma.host). fields are kept with the pending
--- request: retried (not sent again to a new host), sync (its caller waits
--- and reports a late answer itself), internal (dropped silently when the
--- host exits: a new host gets its own). Returns the request id, or nil, err.
function M.send(chan, method, args, cb, fields)
  local host = state.host
  host.next_id = host.next_id + 1
  local id = host.next_id
  local p = { method = method, args = args, cb = cb, started = vim.loop.now(), chan = chan }
  for k, v in pairs(fields or {}) do
    p[k] = v
  end
  host.pending[id] = p
  local ok, e = pcall(vim.rpcnotify, chan, P.async, id, method, args)
  if not ok then
    host.pending[id] = nil
    return nil, tostring(e)
  end
  return id
end

--- Call method(args) on chan and wait for the answer, at most timeout_ms
--- (default: host.timeout). Returns result, nil — or nil, err when the host
--- refused, is gone, or did not answer in time (then the answer, if it ever
--- comes, is dropped).
function M.wait(chan, method, args, timeout_ms)
  local done, res, err = false, nil, nil
  local id, serr = M.send(chan, method, args, function(r, e)
    done, res, err = true, r, e
  end, { sync = true, retried = true })
  if not id then
    return nil, serr
  end
  local ms = timeout_ms or M.bound_ms()
  notify.hold()
  local ok, waited, why = pcall(vim.wait, ms, function()
    return done
  end, 20)
  notify.release()
  if not ok then -- vim.wait refused (a fast event): nothing was waited for
    state.host.pending[id] = nil
    return nil, tostring(waited)
  end
  if not done then
    state.host.pending[id] = nil
    if why == -2 then
      return nil, method .. " was interrupted (<C-c>) before the host answered"
    end
    local okp, pid = pcall(vim.fn.jobpid, chan)
    return nil,
      string.format(
        "the host did not answer %s within %g s (pid %s): it may be hung. :Flemma host:restart restarts it",
        method,
        ms / 1000,
        okp and tostring(pid) or "?"
      )
  end
  if res == vim.NIL then
    res = nil
  end
  return res, err
end

--- Call the running host and wait for the answer (at most host.timeout).
--- Returns result or nil, err; err when no host runs.
function M.request(method, ...)
  local chan = state.host.chan
  if not chan then
    return nil, "the host is not running"
  end
  return M.wait(chan, method, { ... })
end

--- Send a notification to the running host, if any; true if it was sent.
function M.notify(method, ...)
  local chan = state.host.chan
  return chan ~= nil and pcall(vim.rpcnotify, chan, method, ...)
end

return M
