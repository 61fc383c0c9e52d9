-- The one way flemma speaks to the user: vim.notify with a "(flemma) "
-- prefix. Modules take a notifier with their own default level; one that is
-- called from callbacks of the host's channel or of jobs (where vim.notify
-- may not run) schedules its messages.
local M = {}

local prefix = "(flemma) "

-- While a caller waits for the host (flemma.channel.wait runs the event
-- loop), other answers and the host's own notices arrive: they are held
-- and shown once the wait is over, on the main loop. Shown in the middle,
-- an error would land in the waiting caller's context — inside
-- :checkhealth's try, it became the health check's own failure.
local held = { depth = 0, queue = {} }

--- Hold messages until release() (calls nest).
function M.hold()
  held.depth = held.depth + 1
end

--- Stop holding; what was held is shown on the main loop, in order.
function M.release()
  held.depth = math.max(0, held.depth - 1)
  if held.depth == 0 and #held.queue > 0 then
    local queue = held.queue
    held.queue = {}
    vim.schedule(function()
      for _, m in ipairs(queue) do
        vim.notify(m[1], m[2])
      end
    end)
  end
end

--- Show msg now (level: vim.log.levels, INFO by default).
function M.now(msg, level)
  if held.depth > 0 then
    table.insert(held.queue, { prefix .. msg, level or vim.log.levels.INFO })
    return
  end
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
