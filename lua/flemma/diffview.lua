-- The review of a pending write/edit (or a Lua tool's call with the diff
-- capability): a new tab with the file as it is
-- (left) and the proposal (right, a scratch buffer) in diff mode. The user
-- edits the proposal (do/dp, deleting lines) and :w approves that version
-- (the host makes it the call's input); :Flemma tool:reject in the view
-- rejects the call, asking for an optional reason.
local P = require("flemma.protocol")
local actions = require("flemma.actions")
local host = require("flemma.host")
local M = {}

M.ns = vim.api.nvim_create_namespace("flemma.diffview")

local notify = require("flemma.notify").new(vim.log.levels.INFO)

-- A scratch buffer of the view: the proposal is written with :w (acwrite)
-- and editable when the call takes a reviewed version.
local function scratch(name, lines, proposal, editable)
  local b = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].buftype = proposal and "acwrite" or "nofile"
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].swapfile = false
  vim.bo[b].modifiable = editable
  vim.bo[b].modified = false
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.cmd("diffthis")
  return b
end

--- The review under the cursor's buffer: { chat, id, tab } or nil.
function M.current()
  local ok, r = pcall(vim.api.nvim_buf_get_var, 0, "flemma_review")
  if ok and type(r) == "table" then
    return r
  end
  return nil
end

local function close(r)
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    if tab == r.tab and #vim.api.nvim_list_tabpages() > 1 then
      local cur = vim.api.nvim_get_current_tabpage()
      vim.api.nvim_set_current_tabpage(tab)
      vim.cmd("tabclose")
      if cur ~= tab and vim.api.nvim_tabpage_is_valid(cur) then
        vim.api.nvim_set_current_tabpage(cur)
      end
      return
    end
  end
end

--- Open the view for a host's flemma.diff answer d.
function M.open(d)
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local r = { chat = d.bufnr, id = d.id, tab = tab }
  -- Names without the file's folders: a tab label shortens every folder
  -- to a letter ("f//t/p/notes.txt"); the file's name and the call's id
  -- say what the view is.
  local tail = vim.fn.fnamemodify(d.path or "", ":t")
  local left = scratch(
    string.format("flemma://%s (%s, %s)", tail, d.exists == false and "new file" or "as it is", d.id),
    d.old or {},
    false,
    false
  )
  if d.exists == false then
    -- A file the call creates: the left side is empty; say why.
    vim.api.nvim_buf_set_extmark(left, M.ns, 0, 0, {
      virt_text = { { "new file: " .. tostring(d.path) .. " does not exist yet", "Comment" } },
    })
  end
  vim.cmd("rightbelow vnew")
  local right =
    scratch(string.format("flemma://%s (proposed, %s)", tail, d.id), d.new or {}, true, d.reviewable ~= false)
  r.proposal = right
  for _, b in ipairs({ left, right }) do
    vim.api.nvim_buf_set_var(b, "flemma_review", r)
  end
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = right,
    callback = function()
      M.approve(right)
    end,
  })
  -- After the new tab is drawn, and short enough for one line: no
  -- hit-enter prompt.
  local how = d.reviewable == false and "view only (the tool takes no reviewed version), :w approves it as proposed"
    or "change the right side, :w approves it"
  require("flemma.notify").later(string.format("%s %s: %s, :Flemma tool:reject rejects", d.tool, d.path, how))
end

--- Approve the proposal buffer's text as the call's input (:w).
function M.approve(b)
  b = b or vim.api.nvim_get_current_buf()
  local ok, r = pcall(vim.api.nvim_buf_get_var, b, "flemma_review")
  if not ok then
    return
  end
  local right = r.proposal or b -- from the left side too: the proposal's text
  if not vim.api.nvim_buf_is_valid(right) then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(right, 0, -1, false)
  actions.call(P.review, { r.chat, r.id, lines }, function(res)
    if type(res) == "table" and res.phase == "status" then
      if vim.api.nvim_buf_is_valid(right) then
        vim.bo[right].modified = false
      end
      close(r)
    end
  end)
end

--- Reject the call under review; reason nil asks for one (optional).
function M.reject(reason)
  local r = M.current()
  if not r then
    return false
  end
  if reason == nil or reason == "" then
    reason = vim.fn.input("Reason for rejecting (optional): ")
  end
  actions.call(P.set_status_id, { r.chat, r.id, "rejected", reason or "" }, function(res)
    if res then -- nil: the error was shown, the view stays
      close(r)
    end
  end)
  return true
end

--- Open the diff of the write/edit under the cursor (:Flemma tool:diff,
--- <CR>). fallback, when given, runs instead (quietly) when there is no
--- diff to show there.
function M.at_cursor(bufnr, fallback)
  local lnum = vim.api.nvim_win_get_cursor(0)[1]
  if fallback then
    -- <CR>: only a tool block asks the host (and only a running one).
    local outline = require("flemma.outline")
    local b = outline.block_at(outline.get(0), lnum, { tool_use = true, tool_result = true })
    if not b or not host.running() then
      fallback()
      return
    end
  end
  host.request_async(P.diff, { bufnr, lnum }, function(res, err)
    if type(res) == "table" and res.phase == "diff" then
      M.open(res)
      return
    end
    if fallback then
      fallback()
    elseif err then
      notify(err, vim.log.levels.ERROR)
    elseif type(res) == "table" and type(res.message) == "string" then
      notify(res.message, res.level or vim.log.levels.INFO)
    end
  end)
end

return M
