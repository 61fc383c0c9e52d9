-- editing.auto_write: after a response ends, the chat is written to its
-- file as :write would (its autocommands run), with no prompt: a buffer
-- without a file name, not a file buffer, or unchanged is left alone, and a
-- file changed on disk since Neovim read or wrote it is not overwritten
-- (:write would ask). A failure is said once per buffer until a write
-- succeeds again.
local state = require("flemma.state")
local notify = require("flemma.notify").new(vim.log.levels.WARN)
local M = {}

-- The file's modification time when the buffer last read or wrote it.
local function mtime(name)
  local st = vim.loop.fs_stat(name)
  return st and (st.mtime.sec .. "." .. st.mtime.nsec) or nil
end

--- Note the file's time now (the buffer was read or written).
function M.seen(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    local name = vim.api.nvim_buf_get_name(bufnr)
    state.buffer(bufnr).file_time = name ~= "" and mtime(name) or nil
  end
end

--- Called by flemma.chatbuf for every chat buffer.
function M.attach(bufnr, group)
  M.seen(bufnr)
  vim.api.nvim_create_autocmd({ "BufWritePost", "BufReadPost", "FileChangedShellPost" }, {
    group = group,
    buffer = bufnr,
    desc = "flemma: the file's time for editing.auto_write",
    callback = function()
      M.seen(bufnr)
    end,
  })
end

local function failed(bufnr, msg)
  local b = state.buffer(bufnr)
  if b.auto_write_error ~= msg then
    b.auto_write_error = msg
    notify("editing.auto_write: " .. msg)
  end
end

--- Write bufnr if editing.auto_write asks it (FlemmaRequestEnd).
function M.after_response(bufnr)
  local cfg = state.config().editing
  if not (cfg and cfg.auto_write) or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" or not vim.bo[bufnr].modified then
    return
  end
  local b = state.buffer(bufnr)
  local now = mtime(name)
  if b.file_time and now and now ~= b.file_time then
    failed(
      bufnr,
      vim.fn.fnamemodify(name, ":~:.") .. " changed on disk since it was read: not written (:w! overwrites it)"
    )
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent keepalt write")
  end)
  if ok then
    b.auto_write_error = nil
  else
    failed(bufnr, tostring(err):gsub("^Vim%(%a+%):", ""))
  end
end

return M
