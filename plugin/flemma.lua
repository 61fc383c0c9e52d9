-- flemma: filetype, the :Flemma command and highlight links. Nothing here
-- requires the rest of the plugin: that happens on first use.
if vim.g.loaded_flemma then
  return
end
vim.g.loaded_flemma = true

local group = vim.api.nvim_create_augroup("flemma", { clear = true })

-- Before the filetype is set: a buffer read again from disk has a new origin
-- (a first read has none yet: attaching takes it).
vim.api.nvim_create_autocmd("BufReadPost", {
  group = group,
  desc = "flemma: a chat buffer read again from disk has a new origin",
  callback = function(ev)
    if package.loaded["flemma.trust"] then
      require("flemma.trust").reread(ev.buf)
    end
  end,
})

vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
  group = group,
  pattern = "*.chat",
  desc = "flemma: .chat files have filetype chat",
  callback = function(ev)
    vim.bo[ev.buf].filetype = "chat"
  end,
})

vim.api.nvim_create_autocmd("FileType", {
  group = group,
  pattern = "chat",
  desc = "flemma: buffer-local keymaps for chat buffers",
  callback = function(ev)
    require("flemma").attach(ev.buf)
  end,
})

local function highlights()
  vim.cmd("highlight default link FlemmaToolPreview Comment")
  vim.cmd("highlight default link FlemmaToolRunning DiagnosticInfo")
  vim.cmd("highlight default link FlemmaLocked WarningMsg")
  vim.cmd("highlight default link FlemmaProgress Comment")
  -- The user's highlights.tool_preview, once flemma is set up.
  if package.loaded["flemma"] then
    require("flemma").apply_highlights()
  end
end
highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = group,
  desc = "flemma: restore default highlight links",
  callback = highlights,
})

vim.api.nvim_create_user_command("Flemma", function(opts)
  require("flemma.commands").run(opts)
end, {
  nargs = "*",
  range = true,
  desc = "flemma: chat and tool commands",
  complete = function(arglead, cmdline, pos)
    return require("flemma.commands").complete(arglead, cmdline, pos)
  end,
})
