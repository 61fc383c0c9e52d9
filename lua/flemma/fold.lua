-- Folding of chat buffers: 'foldexpr' reads the levels flemma.outline
-- keeps current change by change (a table lookup per line), 'foldtext' says
-- what a closed fold holds from that fold's own lines, and thinking blocks,
-- compaction summaries, long tool results and long tool inputs are closed
-- once when they first appear in a window (a fold the user opened stays
-- open): after a change, only the blocks in the lines it touched are looked
-- at.
local outline = require("flemma.outline")
local state = require("flemma.state")

local M = {}

--- 'foldexpr': v:lua.require'flemma.fold'.expr(v:lnum)
function M.expr(lnum)
  return outline.level(vim.api.nvim_get_current_buf(), lnum)
end

local function thousands(n)
  local s = tostring(n)
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end

local function plural(n, word)
  return thousands(n) .. " " .. word .. (n == 1 and "" or "s")
end

-- s on one line and at most max characters.
local function clip(s, max)
  s = s:gsub("\r?\n", "↵"):gsub("%s+", " ")
  s = vim.trim(s)
  if vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. "…"
  end
  return s
end

-- Characters of a block's body; lines[1] is line `base`.
local function body_chars(lines, base, b)
  local n = 0
  for l = b.body_first, b.body_last do
    n = n + #(lines[l - base + 1] or "")
  end
  return n
end

-- What a tool call works on, from its JSON input: the command of bash, else
-- the first of a few well-known fields, else its first string field.
local function subject(name, input)
  if type(input) ~= "table" then
    return ""
  end
  if name == "bash" and type(input.command) == "string" then
    return "$ " .. input.command
  end
  for _, k in ipairs({ "path", "file_path", "file", "pattern", "expression", "query", "url", "label" }) do
    if type(input[k]) == "string" and input[k] ~= "" then
      return input[k]
    end
  end
  local keys = vim.tbl_keys(input)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, k in ipairs(keys) do
    if type(input[k]) == "string" and input[k] ~= "" then
      return input[k]
    end
  end
  return ""
end

-- "read: src/main.go" for a tool use block, remembered by the text of its
-- input (fold texts are drawn at every redraw).
local summaries = setmetatable({}, { __mode = "k" })

local function call_summary(bufnr, use, lines, base)
  if use.body_first > use.body_last then
    return use.name or "?"
  end
  lines = lines or vim.api.nvim_buf_get_lines(bufnr, use.body_first - 1, use.body_last, false)
  base = base or use.body_first
  local text = table.concat(lines, "\n", use.body_first - base + 1, use.body_last - base + 1)
  local per = summaries[state.buffer(bufnr)] or {}
  summaries[state.buffer(bufnr)] = per
  local key = (use.name or "") .. "\0" .. text
  if per[key] then
    return per[key]
  end
  local ok, v = pcall(vim.fn.json_decode, text)
  local what = clip(subject(use.name, ok and v or nil), 60)
  local s = what ~= "" and (use.name .. ": " .. what) or (use.name or "?")
  if vim.tbl_count(per) > 200 then
    per = {}
    summaries[state.buffer(bufnr)] = per
  end
  per[key] = s
  return s
end

--- The text of the closed fold first..last (a message, a block), from the
--- lines of that fold only.
function M.describe(bufnr, m, first, last)
  local count = last - first + 1
  local kind = m.kd[first]
  local lines = vim.api.nvim_buf_get_lines(bufnr, first - 1, last, false)
  if not kind then
    return clip(lines[1] or "", 80) .. " — " .. plural(count, "line")
  end
  if kind == "message" then
    local text = ""
    for i = 2, math.min(#lines, 51) do
      if not lines[i]:find("^%s*$") then
        text = clip(lines[i], 60)
        break
      end
    end
    return string.format("@%s: %s — %s", lines[1]:match("^@(%w+):") or "", text, plural(count, "line"))
  end
  if kind == "frontmatter" then
    local inner = math.max(0, count - 2)
    return string.format("frontmatter (%s) — %s", lines[1]:match("^```(%w+)") or "", plural(inner, "line"))
  end
  local item = outline.block(m, first, lines)
  local inner = item.body_last - item.body_first + 1
  if kind == "thinking" then
    return string.format("thinking — %s, %s", plural(inner, "line"), plural(body_chars(lines, first, item), "char"))
  elseif kind == "summary" then
    return string.format("compaction summary — %s, sent instead of the conversation above", plural(inner, "line"))
  elseif kind == "tool_use" then
    return string.format(
      "Tool Use %s — %s",
      call_summary(bufnr, item, lines, first),
      inner == 1 and plural(body_chars(lines, first, item), "char") or plural(inner, "line")
    )
  end
  local use = item.id and outline.tool_use(m, item.id, first - 1)
  local what = use and call_summary(bufnr, use) or ("`" .. (item.id or "?") .. "`")
  local status = outline.result_status(item)
  if status and status ~= "error" then
    return string.format("%s — %s", what, status)
  end
  return string.format("%s — %s%s", what, status == "error" and "error, " or "", plural(inner, "line"))
end

--- 'foldtext': v:lua.require'flemma.fold'.text()
function M.text()
  local bufnr = vim.api.nvim_get_current_buf()
  local ok, s = pcall(M.describe, bufnr, outline.get(bufnr), vim.v.foldstart, vim.v.foldend)
  if not ok then
    return vim.fn.foldtext()
  end
  return s
end

local expr = "v:lua.require'flemma.fold'.expr(v:lnum)"

--- Set the window's fold options for a chat buffer (window-local, as an
--- ftplugin would), unless folding is off in the config.
function M.setup_window(win)
  local cfg = state.config().fold
  if not cfg.enabled then
    return
  end
  vim.api.nvim_win_call(win, function()
    if vim.wo.foldexpr ~= expr or vim.wo.foldmethod ~= "expr" then
      vim.cmd("setlocal foldmethod=expr foldexpr=" .. expr .. " foldtext=v:lua.require'flemma.fold'.text()")
      vim.cmd("setlocal foldlevel=99")
    end
  end)
end

-- Whether a block starts closed, and the key that remembers it was decided
-- (nil: not decidable yet). A thinking block is known by an extmark on its
-- first line (its text is the same for every block); a tool block by its id.
local ns_seen = vim.api.nvim_create_namespace("flemma.fold_seen")

-- The key of the block starting at first, from its first line alone (nil
-- while it is still being written).
local function key_of(bufnr, m, first)
  local kind = m.kd[first]
  local last = outline.last_of(m, first)
  if not outline.complete(m, first, last) then
    return nil, last -- still being written: decided when it is complete
  end
  if kind == "thinking" or kind == "summary" then
    local marks = vim.api.nvim_buf_get_extmarks(bufnr, ns_seen, { first - 1, 0 }, { first - 1, 0 }, { limit = 1 })
    local id = marks[1] and marks[1][1] or vim.api.nvim_buf_set_extmark(bufnr, ns_seen, first - 1, 0, {})
    return "t" .. id, last
  end
  local head = vim.api.nvim_buf_get_lines(bufnr, first - 1, first, false)[1] or ""
  local id = kind == "tool_use" and head:match("^%*%*Tool Use:%*%*%s*`[^`]+`%s*%(`([^)]+)`%)")
    or head:match("^%*%*Tool Result:%*%*%s*`([^`]+)`")
  return (kind == "tool_use" and "u" or "r") .. (id or first), last
end

-- Whether the block starts closed (nil: not decided yet, a placeholder).
local function decide(bufnr, cfg, m, first, last)
  local kind = m.kd[first]
  if kind == "thinking" then
    return cfg.thinking
  elseif kind == "summary" then
    return true -- read once; what matters is that it replaces the turns above
  end
  -- A result is short to read: reading a long one is what closing it saves.
  local head = vim.api.nvim_buf_get_lines(bufnr, first - 1, math.min(last, first + 8), false)
  local b = outline.block(m, first, head)
  b.body_last = last - 1
  if kind == "tool_result" then
    local st = outline.result_status(b)
    if st ~= nil and st ~= "error" then
      return nil -- a placeholder: decided when its result is written
    end
    return cfg.result_lines > 0 and (b.body_last - b.body_first + 1) > cfg.result_lines
  end
  if cfg.input_chars <= 0 then
    return false
  end
  local n = 0
  for _, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, b.body_first - 1, b.body_last, false)) do
    n = n + #l
  end
  return n > cfg.input_chars
end

local function chat_windows(bufnr)
  local out = {}
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    if vim.wo[win].foldmethod == "expr" and vim.wo[win].foldexpr == expr then
      out[#out + 1] = win
    end
  end
  return out
end

--- Close, in every window showing the buffer, the thinking blocks, long
--- results and long inputs that window has not seen yet: those starting in
--- lines first..last (and the block around first), or all of them.
function M.close_new(bufnr, first, last)
  local cfg = state.config().fold
  if not cfg.enabled or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local wins = chat_windows(bufnr)
  if #wins == 0 then
    return
  end
  local m = outline.get(bufnr)
  first, last = first or 1, math.min(last or m.n, m.n)
  -- A block whose end was written now started above.
  local lv, kd = m.lv, m.kd
  while first > 1 and lv[first] == 2 and not kd[first] do
    first = first - 1
  end
  local b = state.buffer(bufnr)
  b.folded = b.folded or {}
  local close = {}
  for l = first, last do
    if outline.block_kinds[kd[l]] then
      local key, blast = key_of(bufnr, m, l)
      local unseen = {}
      if key then
        for _, win in ipairs(wins) do
          b.folded[win] = b.folded[win] or {}
          if not b.folded[win][key] then
            unseen[#unseen + 1] = win
          end
        end
      end
      -- Only a block some window has not seen yet is read.
      local shut = #unseen > 0 and decide(bufnr, cfg, m, l, blast)
      if #unseen > 0 and shut ~= nil then
        for _, win in ipairs(unseen) do
          b.folded[win][key] = true
          if shut then
            close[win] = close[win] or {}
            table.insert(close[win], l)
          end
        end
      end
    end
  end
  for win, lines in pairs(close) do
    vim.api.nvim_win_call(win, function()
      for _, l in ipairs(lines) do
        if vim.fn.foldclosed(l) == -1 and vim.fn.foldlevel(l) >= 2 then
          pcall(vim.cmd, l .. "foldclose")
        end
      end
    end)
  end
end

return M
