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

-- Every group flemma uses, linked to a standard group (syntax/chat.vim
-- defines the syntax items). The colour of "approved" is DiagnosticOk where
-- Neovim has it (0.9+).
local links = {
  FlemmaToolPreview = "Comment",
  FlemmaToolRunning = "DiagnosticInfo",
  FlemmaLocked = "WarningMsg",
  FlemmaProgress = "Comment",
  FlemmaRuler = "NonText",
  FlemmaRoleLineYou = "CursorLine",
  FlemmaRoleLineAssistant = "CursorLine",
  FlemmaRoleLineSystem = "CursorLine",
  FlemmaRoleYou = "Title",
  FlemmaRoleAssistant = "Statement",
  FlemmaRoleSystem = "PreProc",
  FlemmaRole = "Identifier",
  FlemmaToolUse = "Special",
  FlemmaToolResult = "Special",
  FlemmaToolLabel = "Label",
  FlemmaToolName = "Function",
  FlemmaToolId = "Constant",
  FlemmaToolError = "DiagnosticError",
  FlemmaLegacyStatus = "Special",
  FlemmaFence = "Delimiter",
  FlemmaFenceInfo = "Type",
  FlemmaCode = "Normal",
  FlemmaToolFence = "Type",
  FlemmaStatusPending = "DiagnosticWarn",
  FlemmaStatusApproved = "DiagnosticOk",
  FlemmaStatusRejected = "DiagnosticError",
  FlemmaStatusDenied = "DiagnosticHint",
  FlemmaStatusAborted = "Comment",
  FlemmaStatusWordPending = "FlemmaStatusPending",
  FlemmaStatusWordApproved = "FlemmaStatusApproved",
  FlemmaStatusWordRejected = "FlemmaStatusRejected",
  FlemmaStatusWordDenied = "FlemmaStatusDenied",
  FlemmaStatusWordAborted = "FlemmaStatusAborted",
  FlemmaThinking = "Comment",
  FlemmaThinkingTag = "SpecialComment",
  FlemmaAborted = "WarningMsg",
  FlemmaSummary = "Special",
  FlemmaEscape = "NonText",
  FlemmaFrontmatter = "Normal",
  FlemmaFrontmatterFence = "PreProc",
}

local function highlights()
  for name, to in pairs(links) do
    if to == "DiagnosticOk" and vim.fn.hlexists("DiagnosticOk") == 0 then
      to = "String"
    end
    vim.cmd("highlight default link " .. name .. " " .. to)
  end
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
