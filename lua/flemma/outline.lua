-- The structure of a chat buffer, found by one cheap pass over its lines:
-- the frontmatter, the messages, and inside them thinking blocks, tool uses
-- and tool results, with their line ranges. Folding, navigation and the
-- fold texts read it; it never changes the text. It follows the host's
-- parser (buffer/lex.go) where it matters for display: role markers and
-- tool headers inside a code fence are content, a tool header counts only
-- in its role's message (Tool Use in @Assistant:, Tool Result in @You:).
-- The result of a buffer is kept in flemma.state until its changedtick moves.
local state = require("flemma.state")

local M = {}

local function is_blank(s)
  return s:find("^%s*$") ~= nil
end

--- Scan lines (a list of strings). Returns
---   { messages = { { role, first, last } … },
---     blocks = { { kind = "frontmatter"|"thinking"|"tool_use"|"tool_result",
---                  first, last, body_first, body_last, id, name, info, suffix, msg } … },
---     levels = { [lnum] = fold level (number, or ">N" where a fold starts) },
---     at = { [first line] = the message or block starting there } }
--- body_first..body_last is the text inside the block's fence or tags.
--- A tool block whose fence never closes, and a thinking block without
--- </thinking>, are left out (the host reports them as diagnostics).
function M.scan(lines)
  local n = #lines
  local messages, blocks, at = {}, {}, {}
  local start = 1
  -- Frontmatter: line 1 is ``` and a language tag, closed by exactly ```.
  if n > 0 and lines[1]:find("^```%w+%s*$") then
    for j = 2, n do
      if lines[j]:find("^```%s*$") then
        local b = {
          kind = "frontmatter",
          first = 1,
          last = j,
          body_first = 2,
          body_last = j - 1,
          info = lines[1]:match("^```(%w+)"),
        }
        blocks[1] = b
        at[1] = b
        start = j + 1
        break
      end
    end
  end
  local msg -- the current message
  local fence = 0 -- backticks of the open code fence (0: none)
  local fence_block -- the tool block whose body that fence is
  local header -- a tool header waiting for its fence
  local think -- an open thinking block
  for lnum = start, n do
    local s = lines[lnum]
    local c = s:byte(1)
    if fence > 0 then
      if c == 96 then
        local ticks = s:match("^`+")
        if #ticks >= fence and is_blank(s:sub(#ticks + 1)) then
          fence = 0
          if fence_block then
            fence_block.last = lnum
            fence_block.body_last = lnum - 1
            blocks[#blocks + 1] = fence_block
            at[fence_block.first] = fence_block
            fence_block = nil
          end
        end
      end
    elseif c == 64 and s:find("^@%w+:%s*$") then -- @Role:
      if msg then
        msg.last = lnum - 1
      end
      msg = { kind = "message", role = s:match("^@(%w+):"), first = lnum, last = n }
      messages[#messages + 1] = msg
      at[lnum] = msg
      header, think = nil, nil
    elseif c == 96 then
      local ticks = s:match("^`+")
      if #ticks >= 3 and not s:find("`", #ticks + 1, true) then
        fence = #ticks
        if header then
          header.body_first = lnum + 1
          header.info = s:sub(#ticks + 1)
          fence_block, header = header, nil
        end
      else
        header = nil
      end
    elseif msg and c == 42 and msg.role == "Assistant" and not think and s:find("^%*%*Tool Use:%*%*") then
      local name, id = s:match("^%*%*Tool Use:%*%*%s*`([^`]+)`%s*%(`([^)]+)`%)")
      header = name and { kind = "tool_use", first = lnum, name = name, id = id, msg = #messages } or nil
    elseif msg and c == 42 and msg.role == "You" and s:find("^%*%*Tool Result:%*%*") then
      local id, suffix = s:match("^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$")
      header = id and { kind = "tool_result", first = lnum, id = id, suffix = suffix, msg = #messages } or nil
    elseif msg and c == 60 and msg.role == "Assistant" then -- <
      if think then
        if s == "</thinking>" then
          think.last = lnum
          think.body_last = lnum - 1
          blocks[#blocks + 1] = think
          at[think.first] = think
          think = nil
        end
      elseif
        s == "<thinking>"
        or s:find("^<thinking%s+redacted>$")
        or s:find('^<thinking%s+%w+:signature="[^"]*"%s*>$')
      then
        think = { kind = "thinking", first = lnum, body_first = lnum + 1, msg = #messages }
      end
      header = nil
    elseif header and not is_blank(s) then
      header = nil
    end
  end
  table.sort(blocks, function(a, b)
    return a.first < b.first
  end)
  -- Fold levels: a message is a fold of level 1, a block inside it one of
  -- level 2; the frontmatter is a fold of its own; lines before the first
  -- message are at level 0.
  local levels = {}
  local first_msg = messages[1] and messages[1].first or n + 1
  for l = 1, n do
    levels[l] = l < first_msg and 0 or 1
  end
  for _, m in ipairs(messages) do
    levels[m.first] = ">1"
  end
  for _, b in ipairs(blocks) do
    if b.kind == "frontmatter" then
      levels[1] = ">1"
      for l = 2, b.last do
        levels[l] = 1
      end
    else
      levels[b.first] = ">2"
      for l = b.first + 1, b.last do
        levels[l] = 2
      end
    end
  end
  return { messages = messages, blocks = blocks, levels = levels, at = at }
end

--- The outline of a buffer, scanned again only when its text changed.
function M.get(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local b = state.buffer(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local o = b.outline
  if not o or o.tick ~= tick then
    o = M.scan(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
    o.tick = tick
    b.outline = o
  end
  return o
end

--- The message containing lnum (nil before the first one).
function M.message_at(o, lnum)
  local found
  for _, m in ipairs(o.messages) do
    if m.first > lnum then
      break
    end
    found = m
  end
  return found
end

--- The thinking or tool block containing lnum, if any.
function M.block_at(o, lnum, kinds)
  for _, b in ipairs(o.blocks) do
    if b.first > lnum then
      break
    end
    if lnum <= b.last and (not kinds or kinds[b.kind]) then
      return b
    end
  end
  return nil
end

--- The tool use with this id (for the name and input of a result).
function M.tool_use(o, id)
  for _, b in ipairs(o.blocks) do
    if b.kind == "tool_use" and b.id == id then
      return b
    end
  end
  return nil
end

--- The status of a tool result block: its flemma:tool placeholder status,
--- a legacy header suffix such as (pending), "error", or nil for a result.
function M.result_status(b)
  local st = b.info and b.info:match("^flemma:tool.-status=(%a+)")
  if st then
    return st
  end
  local suffix = b.suffix and b.suffix:match("^%s*%((.*)%)%s*$")
  if suffix then
    for word in suffix:gmatch("[%w_=]+") do
      local w = word:match("^status=(%a+)$") or word
      if w == "pending" or w == "approved" or w == "rejected" or w == "denied" or w == "aborted" or w == "error" then
        return w
      end
    end
  end
  return nil
end

return M
