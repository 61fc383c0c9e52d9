-- What the user types while flemma works (docs/design.md, "Typing while
-- flemma works"). A chat buffer is locked while an answer streams or tools
-- run; instead of E21 on every key (and the rest of the text running as
-- Normal-mode commands), the keys that start an insert open a draft: a small
-- window over the bottom of the chat window, in Insert mode. Once flemma is
-- done with the buffer the draft goes under the last @You: — at once when
-- the user is not typing in it, else when they press <C-]> there.
local channel = require("flemma.channel")
local notify = require("flemma.notify")
local P = require("flemma.protocol")
local state = require("flemma.state")

local M = {}

-- The Normal-mode keys that start an insert (or a change, which inserts).
M.keys = { "i", "a", "I", "A", "o", "O", "s", "S", "c", "C", "R", "gi", "gI" }

local function draft(bufnr)
  local b = state.buffer(bufnr)
  b.draft = b.draft or {}
  return b.draft
end

local function lines_of(d)
  if not (d.buf and vim.api.nvim_buf_is_valid(d.buf)) then
    return {}
  end
  local lines = vim.api.nvim_buf_get_lines(d.buf, 0, -1, false)
  while #lines > 0 and lines[#lines]:find("^%s*$") do
    table.remove(lines)
  end
  while #lines > 0 and lines[1]:find("^%s*$") do
    table.remove(lines, 1)
  end
  return lines
end

local function close(d)
  if d.win and vim.api.nvim_win_is_valid(d.win) then
    pcall(vim.api.nvim_win_close, d.win, true)
  end
  d.win = nil
end

--- The text of bufnr's draft (lines), empty when there is none.
function M.text(bufnr)
  local b = state.buffers[bufnr]
  return b and b.draft and lines_of(b.draft) or {}
end

-- Put the draft under the chat's last line (its @You: message) and close
-- it. Only while the chat is modifiable.
local function flush(bufnr)
  local d = draft(bufnr)
  local lines = lines_of(d)
  if #lines == 0 or not vim.api.nvim_buf_is_valid(bufnr) or not vim.bo[bufnr].modifiable then
    return false
  end
  local n = vim.api.nvim_buf_line_count(bufnr)
  local last = vim.api.nvim_buf_get_lines(bufnr, n - 1, n, false)[1] or ""
  if last:find("^%s*$") then
    vim.api.nvim_buf_set_lines(bufnr, n - 1, n, false, lines)
  else
    vim.api.nvim_buf_set_lines(bufnr, n, n, false, lines)
  end
  vim.api.nvim_buf_set_lines(d.buf, 0, -1, false, {})
  local was = d.win and vim.api.nvim_get_current_win() == d.win
  close(d)
  if was then
    vim.cmd("stopinsert")
    local win = vim.fn.win_findbuf(bufnr)[1]
    if win then
      vim.api.nvim_set_current_win(win)
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(bufnr), 0 })
    end
  end
  notify.now("Your draft is under @You:; <C-]> sends it.")
  return true
end

--- <C-]> in the draft: under @You: when flemma is done, else say it waits.
function M.submit(bufnr)
  if not vim.bo[bufnr].modifiable then
    notify.now("flemma is still working; your draft waits (<C-]> again when done).")
    return
  end
  if not flush(bufnr) then
    close(draft(bufnr))
  end
end

--- Open (or go back to) bufnr's draft over the current window, in Insert
--- mode at its end.
function M.open(bufnr)
  local d = draft(bufnr)
  if not (d.buf and vim.api.nvim_buf_is_valid(d.buf)) then
    d.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[d.buf].bufhidden = "hide"
    vim.bo[d.buf].filetype = "markdown"
    for _, mode in ipairs({ "n", "i" }) do
      vim.api.nvim_buf_set_keymap(d.buf, mode, state.config().keymaps.send or "<C-]>", "", {
        callback = function()
          M.submit(bufnr)
        end,
        desc = "flemma: put the draft under @You:",
      })
    end
  end
  if not (d.win and vim.api.nvim_win_is_valid(d.win)) then
    local win = vim.api.nvim_get_current_win()
    local width = math.max(10, vim.api.nvim_win_get_width(win) - 2)
    local height = math.min(5, math.max(1, vim.api.nvim_win_get_height(win) - 4))
    d.win = vim.api.nvim_open_win(d.buf, true, {
      relative = "win",
      win = win,
      row = math.max(0, vim.api.nvim_win_get_height(win) - height - 2),
      col = 0,
      width = width,
      height = height,
      style = "minimal",
      border = "rounded",
    })
    vim.wo[d.win].wrap = true
  else
    vim.api.nvim_set_current_win(d.win)
  end
  local n = vim.api.nvim_buf_line_count(d.buf)
  local last = vim.api.nvim_buf_get_lines(d.buf, n - 1, n, false)[1]
  vim.api.nvim_win_set_cursor(d.win, { n, #last })
  vim.cmd("startinsert!")
  if not d.told then
    d.told = true
    notify.now("flemma is working: type here; it goes under @You: when done")
  end
end

-- Once the host is idle for bufnr and the buffer still unlocked, the draft
-- goes in (unless the user is typing in it: then <C-]> does it).
local function when_idle(bufnr, tries)
  local d = draft(bufnr)
  if tries <= 0 or #lines_of(d) == 0 or not vim.api.nvim_buf_is_valid(bufnr) or not vim.bo[bufnr].modifiable then
    return
  end
  if d.win and vim.api.nvim_get_current_win() == d.win then
    notify.now("flemma is done: <C-]> puts your draft under @You:")
    return
  end
  local res = channel.request(P.status, bufnr)
  if res and res.busy then
    vim.defer_fn(function()
      when_idle(bufnr, tries - 1)
    end, 100)
    return
  end
  flush(bufnr)
end

local function map_keys(bufnr)
  local d = draft(bufnr)
  d.mapped = {}
  for _, lhs in ipairs(M.keys) do
    -- A key the user mapped keeps their mapping.
    if vim.fn.maparg(lhs, "n") == "" then
      vim.api.nvim_buf_set_keymap(bufnr, "n", lhs, "", {
        callback = function()
          M.open(bufnr)
        end,
        nowait = true,
        desc = "flemma: type into a draft while flemma works",
      })
      d.mapped[#d.mapped + 1] = lhs
    end
  end
end

local function unmap_keys(bufnr)
  local d = draft(bufnr)
  for _, lhs in ipairs(d.mapped or {}) do
    pcall(vim.api.nvim_buf_del_keymap, bufnr, "n", lhs)
  end
  d.mapped = nil
end

--- The buffer was locked (on) or unlocked by flemma (flemma.buf.lock).
function M.locked(bufnr, on)
  local d = draft(bufnr)
  if on then
    if not d.mapped then
      vim.api.nvim_buf_call(bufnr, function()
        map_keys(bufnr)
      end)
    end
    return
  end
  if d.mapped then
    unmap_keys(bufnr)
  end
  d.told = nil
  if #lines_of(d) > 0 then
    vim.schedule(function()
      when_idle(bufnr, 300)
    end)
  end
end

return M
