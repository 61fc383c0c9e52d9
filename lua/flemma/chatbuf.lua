-- A chat buffer as a Neovim citizen: the text a new chat starts with, its
-- window options (folds, concealed fences), Markdown through treesitter
-- where Neovim has the parser (syntax/chat.vim includes Markdown's syntax
-- file otherwise), and the keys that move between messages and tool blocks.
local fold = require("flemma.fold")
local nav = require("flemma.nav")
local outline = require("flemma.outline")
local state = require("flemma.state")

local M = {}

--- Above this many lines a chat with chat.markdown = "auto" is highlighted
--- by Markdown's regex syntax instead of treesitter: Neovim's treesitter
--- parses the whole document again after every change (≈ 24 µs a line),
--- which a keystroke cannot afford in a long chat (docs/design.md).
M.treesitter_max_lines = 300

local function has_ts_markdown()
  local ts = vim.fn.has("nvim-0.9") == 1 and vim.treesitter and vim.treesitter.language
  if ts and ts.add then
    local ok, res = pcall(ts.add, "markdown")
    -- 0.9/0.10 raise when the parser is missing; 0.11 returns nil.
    if ok and (res == true or (res == nil and vim.fn.has("nvim-0.11") == 0)) then
      return true
    end
  end
  return false
end

--- How message text of a buffer (default: the current one) is highlighted
--- as Markdown: "treesitter" (0.9+ with the markdown parser; with
--- chat.markdown = "auto" only in chats of at most M.treesitter_max_lines
--- lines that never grew past it), "syntax", or "none".
function M.markdown_mode(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local want = state.config().chat.markdown
  if want == "none" or want == "syntax" then
    return want
  end
  if not has_ts_markdown() then
    return "syntax"
  end
  -- chat.conceal_fences hides the fences' backticks, nothing else: the
  -- treesitter queries conceal **, inline backticks and the info string
  -- (flemma:tool) too, and cannot be told not to for one buffer.
  if want == "auto" and state.config().chat.conceal_fences then
    return "syntax"
  end
  if want == "auto" then
    local b = state.buffers[bufnr]
    if (b and b.ts_dropped) or vim.api.nvim_buf_line_count(bufnr) > M.treesitter_max_lines then
      return "syntax"
    end
  end
  return "treesitter"
end

--- A chat highlighted by treesitter that grew past M.treesitter_max_lines
--- (chat.markdown = "auto"): regex syntax from now on, for good.
function M.check_treesitter(bufnr)
  local b = state.buffer(bufnr)
  if not b.ts_on or b.ts_dropped or state.config().chat.markdown ~= "auto" then
    return
  end
  if vim.api.nvim_buf_line_count(bufnr) <= M.treesitter_max_lines then
    return
  end
  b.ts_dropped, b.ts_on = true, false
  pcall(vim.treesitter.stop, bufnr)
  if vim.fn.exists("g:syntax_on") == 1 then
    -- Loaded again: syntax/chat.vim now includes Markdown's syntax file.
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd("unlet! b:current_syntax")
      vim.bo[bufnr].syntax = ""
      vim.bo[bufnr].syntax = "chat"
    end)
  end
end

-- The template of a new chat (a buffer that is empty when flemma attaches).
local function apply_template(bufnr)
  local tpl = state.config().chat.template
  if type(tpl) ~= "string" or tpl == "" or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  if #lines > 1 or lines[1] ~= "" then
    return
  end
  -- Not an undo step: like a skeleton file, the template is where the
  -- buffer starts, and `u` does not take it away.
  local ul = vim.bo[bufnr].undolevels
  vim.bo[bufnr].undolevels = -1
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, vim.split(tpl, "\n", { plain = true }))
  vim.bo[bufnr].undolevels = ul
  -- A file that does not exist yet is not "modified" by its template:
  -- quitting without writing leaves no file behind and asks nothing.
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.fn.filereadable(name) == 0 then
    vim.bo[bufnr].modified = false
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(bufnr), 0 })
  end
end

local function setup_window(bufnr, win)
  fold.setup_window(win)
  if state.config().chat.conceal_fences then
    vim.api.nvim_win_call(win, function()
      vim.cmd("setlocal conceallevel=2 concealcursor=")
    end)
  end
  fold.close_new(bufnr)
end

local function keymaps(bufnr)
  local km = state.config().keymaps
  local function map(modes, lhs, fn, desc)
    if type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set(modes, lhs, fn, { buffer = bufnr, silent = true, desc = "flemma: " .. desc })
    end
  end
  local motion = { "n", "x", "o" }
  map(motion, km.next_message, function()
    nav.jump("message", 1)
  end, "next message")
  map(motion, km.prev_message, function()
    nav.jump("message", -1)
  end, "previous message")
  map(motion, km.next_tool, function()
    nav.jump("tool", 1)
  end, "next tool block")
  map(motion, km.prev_tool, function()
    nav.jump("tool", -1)
  end, "previous tool block")
  local object = { "x", "o" }
  map(object, km.message_inner, function()
    nav.message_object(false)
  end, "inner message")
  map(object, km.message_around, function()
    nav.message_object(true)
  end, "around message")
  map(object, km.tool_inner, function()
    nav.tool_object(false)
  end, "inner tool block")
  map(object, km.tool_around, function()
    nav.tool_object(true)
  end, "around tool block")
end

local ns_rulers = vim.api.nvim_create_namespace("flemma.rulers")
local ruler = { { " " .. string.rep("─", 240), "FlemmaRuler" } } -- cut at the window's edge

-- The line highlight of each role line (chat.role_backgrounds), by the
-- role the outline's state after it holds (1 You, 2 Assistant, 3 System).
local role_lines = { "FlemmaRoleLineYou", "FlemmaRoleLineAssistant", "FlemmaRoleLineSystem" }

--- Draw the rulers of lines first..last (all when not given): one extmark
--- on each role line, with the ruler after it (chat.rulers) and its line
--- highlight (chat.role_backgrounds), so the text is untouched and copies,
--- yanks and saves never see them. Extmarks move with the text: after a
--- change only the lines it touched are drawn again.
function M.draw_rulers(bufnr, first, last)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local m = outline.get(bufnr)
  first, last = first or 1, last or m.n
  if first > m.n then
    first = math.max(1, m.n)
  end
  -- Marks of replaced lines end up at the start or just after the end of
  -- the new text (or past the buffer's last line): cleared with the range.
  vim.api.nvim_buf_clear_namespace(bufnr, ns_rulers, first - 1, last >= m.n and -1 or last)
  local cfg = state.config().chat
  local rulers, backgrounds = cfg.rulers, cfg.role_backgrounds
  if not rulers and not backgrounds then
    return
  end
  local kd, st = m.kd, m.st
  -- The line with the progress note has no ruler (flemma.buf).
  local note = (state.buffers[bufnr] or {}).progress_line
  for l = first, math.min(last, m.n) do
    if kd[l] == "message" then
      local opts
      if rulers and note ~= l - 1 then
        opts = { virt_text = ruler, virt_text_pos = "eol", hl_mode = "combine" }
      end
      local group = backgrounds and role_lines[(st[l] or 0) % 5]
      if group then
        opts = opts or {}
        opts.line_hl_group = group
      end
      if opts then
        pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_rulers, l - 1, 0, opts)
      end
    end
  end
end

M.rulers_namespace = ns_rulers

-- What a change asks of the display, once per batch of changes (the
-- user's, or the host writing a response): rulers and new folds of the
-- lines it touched, and Markdown by treesitter dropped once the buffer
-- grew past chat.treesitter_max_lines.
local function after_changes(bufnr)
  local b = state.buffer(bufnr)
  b.display_pending = false
  if not vim.api.nvim_buf_is_valid(bufnr) or not state.buffers[bufnr] then
    return
  end
  local m = outline.get(bufnr)
  local a, z = outline.take(m, "rulers")
  if a then
    M.draw_rulers(bufnr, a, z + 1)
  end
  -- Not while the user types in it: a block closed under the cursor.
  if not (vim.api.nvim_get_current_buf() == bufnr and vim.fn.mode():sub(1, 1) == "i") then
    a, z = outline.take(m, "folds")
    if a then
      fold.close_new(bufnr, a, z)
    end
  end
  M.check_treesitter(bufnr)
end

local function display_later(bufnr)
  local b = state.buffer(bufnr)
  if b.display_pending then
    return
  end
  b.display_pending = true
  vim.schedule(function()
    after_changes(bufnr)
  end)
end

--- Called by flemma.attach for every chat buffer (FileType chat).
--- group: the chat buffers' augroup (flemma.attach), where the buffer's
--- autocommands go; their BufWipeout is flemma.attach's.
function M.attach(bufnr, group)
  apply_template(bufnr)
  keymaps(bufnr)
  if M.markdown_mode(bufnr) == "treesitter" and not vim.b[bufnr].flemma_ts then
    vim.b[bufnr].flemma_ts = true
    -- treesitter.start turns regex syntax off (and Neovim's FileType
    -- autocommand then leaves it off); flemma's own groups stay on.
    if pcall(vim.treesitter.start, bufnr, "markdown") then
      state.buffer(bufnr).ts_on = true
      if vim.fn.exists("g:syntax_on") == 1 then
        vim.bo[bufnr].syntax = "chat"
      end
    end
  end
  -- The rulers and folds follow the changes the outline sees.
  local m = outline.track(bufnr, "rulers", display_later)
  outline.track(bufnr, "folds")
  outline.take(m, "rulers")
  outline.take(m, "folds")
  M.draw_rulers(bufnr)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    setup_window(bufnr, win)
  end
  vim.api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    buffer = bufnr,
    desc = "flemma: fold options of a chat window",
    callback = function()
      setup_window(bufnr, vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd("InsertLeave", {
    group = group,
    buffer = bufnr,
    desc = "flemma: fold the thinking blocks and long tool results typed in Insert mode",
    callback = function()
      display_later(bufnr)
    end,
  })
  require("flemma.autowrite").attach(bufnr, group)
end

return M
