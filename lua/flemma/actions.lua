-- What the keys and :Flemma ask of the host: the request goes out without
-- waiting and the message of the answer is shown. require("flemma") exposes
-- these as its cycle, execute_at_cursor, cancel and call.
local P = require("flemma.protocol")
local buf = require("flemma.buf")
local host = require("flemma.host")
local state = require("flemma.state")
local M = {}

local notify = require("flemma.notify").new(vim.log.levels.INFO)

local function current(bufnr)
  return (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
end

--- Call the host without waiting and show the message its answer carries,
--- if any; then(res) runs with the answer (nil on an error, shown too).
function M.call(method, args, then_)
  -- The user acted here: flemma may move this window's cursor (to a call
  -- that waits, to the answer) until they move it themselves.
  local cur = vim.api.nvim_get_current_buf()
  if vim.bo[cur].filetype == "chat" then
    buf.anchor(cur)
  end
  host.request_async(method, args or {}, function(res, err)
    if err then
      notify(err, vim.log.levels.ERROR)
      res = nil
    elseif type(res) == "table" and type(res.message) == "string" then
      notify(res.message, res.level or vim.log.levels.INFO)
    end
    if then_ then
      then_(res)
    end
  end)
end

--- Run the next phase of the cycle for a buffer (<C-]>).
function M.cycle(bufnr)
  bufnr = current(bufnr)
  -- A chat with nothing written yet: say how to start, without starting
  -- the host for nothing.
  local empty = true
  for _, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, 200, false)) do
    if not (l:find("^%s*$") or l:find("^@%w+:%s*$")) then
      empty = false
      break
    end
  end
  if empty and vim.api.nvim_buf_line_count(bufnr) <= 200 then
    notify("Nothing to send yet: write your message under @You:, then press <C-]>.", vim.log.levels.INFO)
    return { phase = "empty" }
  end
  local _, err = host.ensure(state.config())
  if err then
    notify(err, vim.log.levels.ERROR)
    return nil
  end
  -- Tool sources still resolving: the host's gate holds the step (it says
  -- so) and runs it for this buffer when they are ready, wherever the
  -- cursor is then.
  -- Leave insert mode: typing into the buffer while flemma locks it would
  -- go nowhere (E21), and a response streaming in must not meet keys.
  if vim.fn.mode():sub(1, 1) == "i" then
    vim.cmd("stopinsert")
  end
  M.call(P.cycle, { bufnr })
  return { phase = "sent" }
end

--- Execute or resolve the tool block under the cursor (<M-CR>).
function M.execute_at_cursor(bufnr)
  bufnr = current(bufnr)
  local line = vim.api.nvim_win_get_cursor(0)[1]
  M.call(P.execute_at, { bufnr, line })
end

--- Approve every call of the message under the cursor that waits for a
--- decision (:Flemma tool:approve-all): each is the user's own approval.
function M.approve_all(bufnr)
  bufnr = current(bufnr)
  M.call(P.set_status_all, { bufnr, vim.api.nvim_win_get_cursor(0)[1], "approved", "" })
end

--- Reject every call of the message under the cursor that waits for a
--- decision (:Flemma tool:reject-all [reason]).
function M.reject_all(bufnr, reason)
  bufnr = current(bufnr)
  M.call(P.set_status_all, { bufnr, vim.api.nvim_win_get_cursor(0)[1], "rejected", reason or "" })
end

--- Approve the pending call under the cursor and always allow its tool
--- (bash: its command rule) in this buffer for this session
--- (:Flemma tool:allow-always, keymaps.tool_allow_always).
function M.allow_always(bufnr)
  bufnr = current(bufnr)
  M.call(P.allow_always, { bufnr, vim.api.nvim_win_get_cursor(0)[1] })
end

--- Cancel running tools of a buffer (<C-c>).
function M.cancel(bufnr)
  M.call(P.cancel, { current(bufnr) })
end

return M
