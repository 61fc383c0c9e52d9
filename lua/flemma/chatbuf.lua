-- A chat buffer as a Neovim citizen: the text a new chat starts with, its
-- window options (folds, concealed fences), Markdown through treesitter
-- where Neovim has the parser (syntax/chat.vim includes Markdown's syntax
-- file otherwise), and the keys that move between messages and tool blocks.
local fold = require("flemma.fold")
local nav = require("flemma.nav")
local outline = require("flemma.outline")
local state = require("flemma.state")

local M = {}

--- How message text is highlighted as Markdown in this Neovim:
--- "treesitter" (0.9+ with the markdown parser), "syntax", or "none".
function M.markdown_mode()
  local want = state.config().chat.markdown
  if want == "none" or want == "syntax" then
    return want
  end
  local ts = vim.fn.has("nvim-0.9") == 1 and vim.treesitter and vim.treesitter.language
  if ts and ts.add then
    local ok, res = pcall(ts.add, "markdown")
    -- 0.9/0.10 raise when the parser is missing; 0.11 returns nil.
    if ok and (res == true or (res == nil and vim.fn.has("nvim-0.11") == 0)) then
      return "treesitter"
    end
  end
  return "syntax"
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
local ruler = string.rep("─", 240) -- cut at the window's edge

--- Draw a ruler after every role line (chat.rulers): extmarks, so the text
--- is untouched and copies, yanks and saves never see them.
function M.draw_rulers(bufnr)
  local b = state.buffer(bufnr)
  b.rulers_pending = false
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, ns_rulers, 0, -1)
  if not state.config().chat.rulers then
    return
  end
  for _, m in ipairs(outline.get(bufnr).messages) do
    pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_rulers, m.first - 1, 0, {
      virt_text = { { " " .. ruler, "FlemmaRuler" } },
      virt_text_pos = "eol",
      hl_mode = "combine",
    })
  end
end

-- One redraw of the rulers per batch of changes, whoever made them (the
-- user, or the host writing a response).
local function rulers_later(bufnr)
  local b = state.buffer(bufnr)
  if b.rulers_pending then
    return
  end
  b.rulers_pending = true
  vim.schedule(function()
    M.draw_rulers(bufnr)
  end)
end

M.rulers_namespace = ns_rulers

--- Called by flemma.attach for every chat buffer (FileType chat).
function M.attach(bufnr)
  apply_template(bufnr)
  keymaps(bufnr)
  if M.markdown_mode() == "treesitter" and not vim.b[bufnr].flemma_ts then
    vim.b[bufnr].flemma_ts = true
    -- treesitter.start turns regex syntax off (and Neovim's FileType
    -- autocommand then leaves it off); flemma's own groups stay on.
    if pcall(vim.treesitter.start, bufnr, "markdown") and vim.fn.exists("g:syntax_on") == 1 then
      vim.bo[bufnr].syntax = "chat"
    end
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    setup_window(bufnr, win)
  end
  if not state.buffer(bufnr).rulers_attached then
    state.buffer(bufnr).rulers_attached = true
    vim.api.nvim_buf_attach(bufnr, false, {
      on_lines = function()
        if not vim.api.nvim_buf_is_valid(bufnr) or not state.buffers[bufnr] then
          return true -- wiped: detach
        end
        rulers_later(bufnr)
      end,
    })
  end
  M.draw_rulers(bufnr)
  local group = vim.api.nvim_create_augroup("flemma.chatbuf." .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    buffer = bufnr,
    desc = "flemma: fold options of a chat window",
    callback = function()
      setup_window(bufnr, vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave" }, {
    group = group,
    buffer = bufnr,
    desc = "flemma: fold new thinking blocks and long tool results",
    callback = function()
      fold.close_new(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    callback = function()
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end,
  })
end

return M
