-- Listings (:Flemma tools, status, tool:list, sandbox:status, tool:log) in a
-- scratch window at the bottom instead of the message area: no hit-enter
-- prompt, the text stays readable while the chat is visible above, `q`
-- closes it and `<CR>` can act on the line under the cursor. One listing
-- window per tab page: a new listing replaces the previous one.
local M = {}

local function listing_window()
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local ok, is = pcall(vim.api.nvim_win_get_var, w, "flemma_listing")
    if ok and is then
      return w
    end
  end
  return nil
end

--- Show text in the listing window, named flemma://<name>. opts.on_enter(line,
--- from_win), when given, is what <CR> does with the line under the cursor.
--- Returns the listing's buffer.
function M.open(name, text, opts)
  opts = opts or {}
  local from = vim.api.nvim_get_current_win()
  local lines = vim.split((text:gsub("\n+$", "")), "\n", { plain = true })
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local height = math.max(3, math.min(#lines, math.floor(vim.o.lines / 3)))
  local win = listing_window()
  if win then
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.cmd("botright " .. height .. "split")
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    vim.api.nvim_win_set_var(win, "flemma_listing", true)
  end
  vim.api.nvim_win_set_height(win, height)
  vim.cmd("setlocal nonumber norelativenumber nofoldenable nospell winfixheight signcolumn=no")
  pcall(vim.api.nvim_buf_set_name, buf, "flemma://" .. name)
  vim.bo[buf].filetype = "flemma-listing"
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true, nowait = true, desc = "flemma: " .. desc })
  end
  map("q", function()
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(0, true)
    else
      vim.cmd("bwipeout")
    end
  end, "close the listing")
  if opts.on_enter then
    map("<CR>", function()
      opts.on_enter(vim.api.nvim_get_current_line(), from)
    end, "go to the line's item")
  end
  return buf
end

--- Go to line lnum of bufnr: in the window it came from when that still
--- shows it, else in any window showing it, else in the previous window.
function M.goto_line(bufnr, lnum, from)
  local win = from
  if not (win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == bufnr) then
    win = vim.fn.win_findbuf(bufnr)[1]
  end
  if not win then
    vim.cmd("wincmd p")
    vim.api.nvim_win_set_buf(0, bufnr)
    win = vim.api.nvim_get_current_win()
  end
  vim.api.nvim_set_current_win(win)
  lnum = math.min(lnum, vim.api.nvim_buf_line_count(bufnr))
  vim.api.nvim_win_set_cursor(win, { lnum, 0 })
  vim.cmd("normal! zv")
end

return M
