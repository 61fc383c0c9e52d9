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

local show -- (text, level): below

-- seq counts the messages shown; last is the latest one's text.
M.seq = 0
M.last = nil

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
        show(m[1], m[2])
      end
    end)
  end
end

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

-- show puts text (prefix included) in front of the user. A one-line
-- message never blocks: with Neovim's own vim.notify, one too wide for the
-- message area is shown cut to fit and kept whole in :messages.
show = function(text, level)
  M.seq = M.seq + 1
  M.last = text
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

--- Take back the latest message when it was shown after message number
--- since and is still what the message area shows (nothing was said
--- since: it is the last line of :messages, which keeps it). Only with
--- Neovim's own vim.notify: a notification plugin's messages go away by
--- themselves. For a message that says flemma waits for the user, once
--- the wait is over.
function M.take_back(since)
  if M.seq <= since or not M.last or not builtin_notify() then
    return
  end
  local history = vim.split(vim.fn.execute("messages"), "\n", { trimempty = true })
  local shown = vim.split(M.last, "\n", { trimempty = true })
  if #history > 0 and #shown > 0 and history[#history] == shown[#shown] then
    vim.cmd('echo ""')
  end
end

--- Show msg now (level: vim.log.levels, INFO by default); see show.
function M.now(msg, level)
  level = level or vim.log.levels.INFO
  if held.depth > 0 then
    table.insert(held.queue, { prefix .. msg, level })
    return
  end
  show(prefix .. msg, level)
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
