-- The one way flemma speaks to the user: vim.notify with a "(flemma) "
-- prefix. Modules take a notifier with their own default level; one that is
-- called from callbacks of the host's channel or of jobs (where vim.notify
-- may not run) schedules its messages.
local M = {}

local prefix = "(flemma) "

-- Whether vim.notify is Neovim's own (it echoes; a long message then stops
-- everything at a hit-enter prompt) rather than a notification plugin's.
local function builtin_notify()
  local ok, info = pcall(debug.getinfo, vim.notify, "S")
  return ok and info and info.source == "@vim/_editor.lua"
end

local highlight = {
  [vim.log.levels.ERROR] = "ErrorMsg",
  [vim.log.levels.WARN] = "WarningMsg",
}

-- A one-line message wider than the message area: the whole of it goes to
-- :messages (echomsg through execute(), which keeps it in the history
-- without scrolling the screen), and the message area shows as much of it
-- as fits, pointing to the rest. Nothing waits for Enter (docs/design.md,
-- "No message blocks").
local function echo_fitted(text, level, room)
  local hl = highlight[level] or "None"
  vim.fn.execute(("echohl %s | echomsg %s | echohl None"):format(hl, vim.fn.string(text)), "")
  local more = " … :messages"
  local chars = math.min(vim.fn.strchars(text), room)
  local shown = vim.fn.strcharpart(text, 0, chars)
  while chars > 0 and vim.fn.strdisplaywidth(shown .. more) > room do
    chars = chars - 1
    shown = vim.fn.strcharpart(text, 0, chars)
  end
  vim.api.nvim_echo({ { shown .. more, highlight[level] } }, false, {})
end

--- Show msg now (level: vim.log.levels, INFO by default). A one-line
--- message never blocks: with Neovim's own vim.notify, one too wide for the
--- message area is shown cut to fit and kept whole in :messages.
function M.now(msg, level)
  level = level or vim.log.levels.INFO
  local text = prefix .. msg
  if not text:find("\n") and builtin_notify() then
    local room = vim.v.echospace
    if room > 20 and vim.fn.strdisplaywidth(text) > room then
      -- On the main loop: from inside a command the echoes would each
      -- start a line of their own (and the two lines wait for Enter).
      vim.schedule(function()
        echo_fitted(text, level, room)
      end)
      return
    end
  end
  vim.notify(text, level)
end

--- Show msg on the main loop.
function M.later(msg, level)
  vim.schedule(function()
    M.now(msg, level)
  end)
end

--- A notifier whose level defaults to `level`; `scheduled` makes it
--- always go through vim.schedule.
function M.new(level, scheduled)
  return function(msg, lvl)
    (scheduled and M.later or M.now)(msg, lvl or level)
  end
end

return M
