-- Folding of chat buffers: 'foldexpr' reads the levels of flemma.outline
-- (one scan per change of the buffer, then a table lookup per line),
-- 'foldtext' says what a closed fold holds, and thinking blocks, long tool
-- results and long tool inputs are closed once when they first appear in a
-- window (a fold the user opened stays open).
local outline = require("flemma.outline")
local state = require("flemma.state")

local M = {}

--- 'foldexpr': v:lua.require'flemma.fold'.expr(v:lnum)
function M.expr(lnum)
  return outline.get(0).levels[lnum] or 0
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

local function body_chars(lines, b)
  local n = 0
  for l = b.body_first, b.body_last do
    n = n + #lines[l]
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

-- "read: src/main.go" for a tool use block (kept on the block: the outline
-- lives until the next change, and foldtext runs at every redraw).
local function call_summary(lines, use)
  if use.summary then
    return use.summary
  end
  local input
  if use.body_first <= use.body_last then
    local ok, v = pcall(vim.fn.json_decode, table.concat(lines, "\n", use.body_first, use.body_last))
    input = ok and v or nil
  end
  local what = clip(subject(use.name, input), 60)
  use.summary = what ~= "" and (use.name .. ": " .. what) or use.name
  return use.summary
end

--- The text of the closed fold starting at first (a message, a block).
function M.describe(bufnr, o, first, last)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local item = o.at[first]
  local count = last - first + 1
  if not item then
    return clip(lines[first] or "", 80) .. " — " .. plural(count, "line")
  end
  if item.kind == "message" then
    local text = ""
    for l = item.first + 1, math.min(last, item.first + 50) do
      if not lines[l]:find("^%s*$") then
        text = clip(lines[l], 60)
        break
      end
    end
    return string.format("@%s: %s — %s", item.role, text, plural(count, "line"))
  end
  local inner = item.body_last - item.body_first + 1
  if item.kind == "frontmatter" then
    return string.format("frontmatter (%s) — %s", item.info or "", plural(inner, "line"))
  elseif item.kind == "thinking" then
    return string.format("thinking — %s, %s", plural(inner, "line"), plural(body_chars(lines, item), "char"))
  elseif item.kind == "tool_use" then
    return string.format(
      "Tool Use %s — %s",
      call_summary(lines, item),
      inner == 1 and plural(body_chars(lines, item), "char") or plural(inner, "line")
    )
  else
    local use = outline.tool_use(o, item.id)
    local what = use and call_summary(lines, use) or ("`" .. item.id .. "`")
    local status = outline.result_status(item)
    if status and status ~= "error" then
      return string.format("%s — %s", what, status)
    end
    return string.format("%s — %s%s", what, status == "error" and "error, " or "", plural(inner, "line"))
  end
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

-- Whether a block starts closed, and the key that remembers it was decided.
local function decide(cfg, lines, b, ordinal)
  if b.kind == "thinking" then
    return "t" .. ordinal, cfg.thinking
  elseif b.kind == "tool_result" then
    local st = outline.result_status(b)
    if st ~= nil and st ~= "error" then
      return nil -- a placeholder: decided when its result is written
    end
    return "r" .. b.id, cfg.result_lines > 0 and (b.body_last - b.body_first + 1) > cfg.result_lines
  elseif b.kind == "tool_use" then
    return "u" .. b.id, cfg.input_chars > 0 and body_chars(lines, b) > cfg.input_chars
  end
  return nil
end

--- Close, in every window showing the buffer, the thinking blocks, long
--- results and long inputs that window has not seen yet.
function M.close_new(bufnr)
  local cfg = state.config().fold
  if not cfg.enabled or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local wins = vim.fn.win_findbuf(bufnr)
  if #wins == 0 then
    return
  end
  local o = outline.get(bufnr)
  local lines
  local b = state.buffer(bufnr)
  b.folded = b.folded or {}
  for _, win in ipairs(wins) do
    if vim.wo[win].foldmethod == "expr" and vim.wo[win].foldexpr == expr then
      local seen = b.folded[win] or {}
      b.folded[win] = seen
      local close, ordinal = {}, 0
      for _, blk in ipairs(o.blocks) do
        if blk.kind == "thinking" then
          ordinal = ordinal + 1
        end
        lines = lines or vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
        local key, shut = decide(cfg, lines, blk, ordinal)
        if key and not seen[key] then
          seen[key] = true
          if shut then
            close[#close + 1] = blk.first
          end
        end
      end
      if #close > 0 then
        vim.api.nvim_win_call(win, function()
          for _, l in ipairs(close) do
            if vim.fn.foldclosed(l) == -1 and vim.fn.foldlevel(l) >= 2 then
              pcall(vim.cmd, l .. "foldclose")
            end
          end
        end)
      end
    end
  end
end

return M
