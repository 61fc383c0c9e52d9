-- Moving between messages and tool blocks, and text objects for them, over
-- the structure flemma.outline keeps: each looks at the lines between the
-- cursor and its target only. The cursor moves; the text never changes.
local outline = require("flemma.outline")

local M = {}

local tool_kinds = { tool_use = true, tool_result = true }
local message_kinds = { message = true }

--- Move to the start of the next (dir = 1) or previous (dir = -1) message
--- (kind = "message") or tool block (kind = "tool"), count times. Returns
--- the line moved to, or nil when there is none in that direction.
function M.jump(kind, dir, count)
  count = count or math.max(vim.v.count1, 1)
  local m = outline.get(0)
  local kinds = kind == "message" and message_kinds or tool_kinds
  local line = vim.api.nvim_win_get_cursor(0)[1]
  local target
  for _ = 1, count do
    local found = outline.find(m, line, dir, kinds)
    if not found then
      break
    end
    target, line = found, found
  end
  if not target then
    return nil
  end
  local normal = vim.api.nvim_get_mode().mode == "n"
  if normal then
    vim.cmd("normal! m'") -- `` and <C-o> come back
  end
  vim.api.nvim_win_set_cursor(0, { target, 0 })
  if normal then
    vim.cmd("normal! zv")
  end
  return target
end

-- Select lines first..last linewise (from visual or operator-pending mode).
local function select(first, last)
  local mode = vim.api.nvim_get_mode().mode
  if mode == "v" or mode == "V" or mode == "\22" then
    vim.cmd("normal! \27")
  end
  vim.api.nvim_win_set_cursor(0, { first, 0 })
  vim.cmd("normal! V")
  vim.api.nvim_win_set_cursor(0, { last, 0 })
end

--- Select the message under the cursor: inner = its text without the role
--- line and trailing blank lines; around = from the role line to the next
--- message. Returns first, last (nil when there is nothing to select).
function M.message_object(around)
  local m = outline.message_at(outline.get(0), vim.api.nvim_win_get_cursor(0)[1])
  if not m then
    return nil
  end
  local first, last = m.first, m.last
  if not around then
    first = m.first + 1
    local lines = vim.api.nvim_buf_get_lines(0, first - 1, last, false)
    while last >= first and lines[last - first + 1]:find("^%s*$") do
      last = last - 1
    end
    if last < first then
      return nil
    end
  end
  select(first, last)
  return first, last
end

--- Select the tool block (Tool Use or Tool Result) under the cursor: inner =
--- the text inside its fence; around = from its header to its closing fence.
function M.tool_object(around)
  local b = outline.block_at(outline.get(0), vim.api.nvim_win_get_cursor(0)[1], tool_kinds)
  if not b then
    return nil
  end
  local first, last = b.first, b.last
  if not around then
    first, last = b.body_first, b.body_last
    if last < first then
      return nil
    end
  end
  select(first, last)
  return first, last
end

return M
