-- flemma: chat with language models in .chat buffers; the Go host does the
-- work, this module wires keys and configuration to it.
local P = require("flemma.protocol")
local M = {}

local cfg = nil -- resolved config; nil until setup() or first use

local notify = require("flemma.notify").new(vim.log.levels.INFO)

--- Optional: merge and validate options, and send them to the host if it is
--- already running (otherwise they go with the first start).
function M.setup(opts)
  local resolved, errors, warnings = require("flemma.config").resolve(opts)
  cfg = resolved
  if #errors > 0 then
    notify("invalid setup options:\n" .. table.concat(errors, "\n"), vim.log.levels.ERROR)
  end
  if warnings and #warnings > 0 then
    notify(table.concat(warnings, "\n"), vim.log.levels.WARN)
  end
  M.apply_highlights()
  local running = require("flemma.host").running()
  if running then
    local ok, js = pcall(M.host_config)
    if not ok then
      notify("the configuration cannot be sent to the host: " .. tostring(js), vim.log.levels.ERROR)
      return
    end
    local _, err = require("flemma.host").request(P.setup, js)
    if err then
      notify("host rejected the configuration: " .. err, vim.log.levels.ERROR)
    end
  end
end

--- highlights.tool_preview: a highlight group to link FlemmaToolPreview to
--- ("Comment", the default link plugin/flemma.lua sets), a "#rrggbb" colour,
--- or a table of attributes for nvim_set_hl. Applied at setup() and, by
--- plugin/flemma.lua's ColorScheme autocommand, after every :colorscheme.
function M.apply_highlights()
  local hl = (M.config().highlights or {}).tool_preview
  local ok, err = pcall(function()
    if type(hl) == "table" then
      vim.api.nvim_set_hl(0, "FlemmaToolPreview", hl)
    elseif type(hl) == "string" and hl:match("^#%x%x%x%x%x%x$") then
      vim.api.nvim_set_hl(0, "FlemmaToolPreview", { fg = hl })
    elseif type(hl) == "string" and hl ~= "" and hl ~= "Comment" then
      vim.cmd("highlight! link FlemmaToolPreview " .. hl)
    end
  end)
  if not ok then
    notify("highlights.tool_preview: " .. tostring(err), vim.log.levels.WARN)
  end
end

--- flemma's state directory: stdpath("state")/flemma, or stdpath("data")/flemma
--- on Neovim versions without a "state" stdpath (0.7).
function M.state_dir()
  local ok, dir = pcall(vim.fn.stdpath, "state")
  if not ok or type(dir) ~= "string" or dir == "" then
    dir = vim.fn.stdpath("data")
  end
  return dir .. "/flemma"
end

function M.config()
  if not cfg then
    cfg = require("flemma.config").resolve({})
  end
  return cfg
end

--- The configuration as the host takes it: JSON (flemma.setup).
function M.host_config()
  return vim.fn.json_encode(require("flemma.config").for_host(M.config()))
end

--- Call the host without waiting and show the message its answer carries,
--- if any; then(res) runs with the answer (nil on an error, shown too).
function M.call(method, args, then_)
  require("flemma.host").request_async(method, args or {}, function(res, err)
    if err then
      notify(err, vim.log.levels.ERROR)
      res = nil
    elseif type(res) == "table" and type(res.message) == "string" then
      notify(res.message, res.level or vim.log.levels.INFO)
    end
    if then_ then
      then_(res)
    end
  end)
end
local call = M.call

--- Run the next phase of the cycle for a buffer (<C-]>).
function M.cycle(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local _, err = require("flemma.host").ensure(M.config())
  if err then
    notify(err, vim.log.levels.ERROR)
    return nil
  end
  local tools = require("flemma.tools")
  if not tools.is_ready() then
    notify("Waiting for tool definitions to load…", vim.log.levels.WARN)
    tools.when_ready(function()
      if vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_get_current_buf() == bufnr then
        M.cycle(bufnr)
      end
    end)
    return { phase = "waiting" }
  end
  -- Leave insert mode: typing into the buffer while flemma locks it would
  -- go nowhere (E21), and a response streaming in must not meet keys.
  if vim.fn.mode():sub(1, 1) == "i" then
    vim.cmd("stopinsert")
  end
  call(P.cycle, { bufnr })
  return { phase = "sent" }
end

--- Execute or resolve the tool block under the cursor (<M-CR>).
function M.execute_at_cursor(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local line = vim.api.nvim_win_get_cursor(0)[1]
  call(P.execute_at, { bufnr, line })
end

--- Cancel running tools of a buffer (<C-c>).
function M.cancel(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  call(P.cancel, { bufnr })
end

--- Buffer-local keymaps for a chat buffer.
function M.attach(bufnr)
  -- The text the buffer holds now is its origin (once: a later FileType
  -- event is not a load; reloads are seen by plugin/flemma.lua).
  require("flemma.trust").get(bufnr)
  local km = M.config().keymaps
  local function map(modes, lhs, fn, desc)
    if type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set(modes, lhs, fn, { buffer = bufnr, silent = true, desc = "flemma: " .. desc })
    end
  end
  map({ "n", "i" }, km.send, function()
    M.cycle(bufnr)
  end, "run the next step of the tool cycle / send")
  map("n", km.tool_execute, function()
    M.execute_at_cursor(bufnr)
  end, "execute or resolve the tool block under the cursor")
  map({ "n", "i" }, km.cancel, function()
    M.cancel(bufnr)
  end, "cancel the running request or tools")

  -- Previews follow the text and the window width. Only a running host is
  -- asked: typing never starts one.
  local group = vim.api.nvim_create_augroup("flemma.buffer." .. bufnr, { clear = true })
  local function refresh()
    local host = require("flemma.host")
    local chan = host._chan()
    if chan then
      pcall(vim.rpcnotify, chan, P.refresh, bufnr)
    end
  end
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    desc = "flemma: forget the buffer's host state",
    callback = function()
      -- The buffer's autocommands go with it, and so does its group (the
      -- resize autocommand in it is not buffer-local).
      pcall(vim.api.nvim_del_augroup_by_id, group)
      require("flemma.trust").forget(bufnr)
      local chan = require("flemma.host")._chan()
      if chan then
        pcall(vim.rpcnotify, chan, P.forget, bufnr)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    buffer = bufnr,
    desc = "flemma: remember a trusted buffer's file as trusted",
    callback = function()
      require("flemma.trust").written(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = bufnr,
    desc = "flemma: note undos and refresh tool previews",
    callback = function()
      require("flemma.trust").undos(bufnr)
      refresh()
    end,
  })
  local resize = vim.fn.exists("##WinResized") == 1 and { "VimResized", "WinResized" }
    or { "VimResized", "WinScrolled" }
  vim.api.nvim_create_autocmd(resize, {
    group = group,
    desc = "flemma: re-cut tool previews to the window width",
    callback = function()
      if vim.api.nvim_buf_is_valid(bufnr) and #vim.fn.win_findbuf(bufnr) > 0 then
        refresh()
      end
    end,
  })
end

return M
