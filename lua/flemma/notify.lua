-- The one way flemma speaks to the user: vim.notify with a "(flemma) "
-- prefix. Modules take a notifier with their own default level; one that is
-- called from callbacks of the host's channel or of jobs (where vim.notify
-- may not run) schedules its messages.
local M = {}

local prefix = "(flemma) "

--- Show msg now (level: vim.log.levels, INFO by default).
function M.now(msg, level)
  vim.notify(prefix .. msg, level or vim.log.levels.INFO)
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
