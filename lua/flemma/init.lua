-- flemma: chat with language models in .chat buffers; the Go host does the
-- work, this module wires keys and configuration to it. It is the plugin's
-- entry point: only plugin/flemma.lua and the user require it, no module of
-- the plugin does (their shared state is flemma.state).
local P = require("flemma.protocol")
local actions = require("flemma.actions")
local buf = require("flemma.buf")
local channel = require("flemma.channel")
local chatbuf = require("flemma.chatbuf")
local config = require("flemma.config")
local host = require("flemma.host")
local state = require("flemma.state")
local trust = require("flemma.trust")
local usage = require("flemma.usage")
local M = {}

local notify = require("flemma.notify").new(vim.log.levels.INFO)

--- Optional: merge and validate options, and send them to the host if it is
--- already running (otherwise they go with the first start). Never waits
--- for the host.
function M.setup(opts)
  local resolved, errors, warnings = config.resolve(opts)
  state.cfg = resolved
  -- Each wrong value once, where the user looks (and in :checkhealth);
  -- every other key applies.
  state.setup_errors = errors
  if #errors == 1 then
    notify("setup " .. errors[1], vim.log.levels.WARN)
  elseif #errors > 1 then
    notify("setup: wrong values replaced:\n" .. table.concat(errors, "\n"), vim.log.levels.WARN)
  end
  if warnings and #warnings > 0 then
    notify(table.concat(warnings, "\n"), vim.log.levels.WARN)
  end
  M.apply_highlights()
  if host.running() then
    local ok, js = pcall(host.config_json)
    if not ok then
      notify("the configuration cannot be sent to the host: " .. tostring(js), vim.log.levels.ERROR)
      return
    end
    -- Without waiting: a hung host must not hold the editor (a late
    -- answer is reported like any other). The host applies it before
    -- anything sent after it.
    host.request_async(P.setup, { js }, function(_, err)
      if err then
        notify("setup (host): " .. err, vim.log.levels.WARN)
      end
    end, false, true)
    host.refresh_catalogue()
  end
end

--- highlights.tool_preview: a highlight group to link FlemmaToolPreview to
--- ("Comment", the default link plugin/flemma.lua sets), a "#rrggbb" colour,
--- or a table of attributes for nvim_set_hl. Applied at setup() and, by
--- plugin/flemma.lua's ColorScheme autocommand, after every :colorscheme.
function M.apply_highlights()
  local hl = (state.config().highlights or {}).tool_preview
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
M.state_dir = config.state_dir

--- The effective configuration (the defaults until setup()).
M.config = state.config

--- The configuration as the host takes it: JSON (flemma.setup).
M.host_config = host.config_json

--- Call the host without waiting and show the message of its answer.
M.call = actions.call

--- Run the next phase of the cycle for a buffer (<C-]>).
M.cycle = actions.cycle

--- Execute or resolve the tool block under the cursor (<M-CR>).
M.execute_at_cursor = actions.execute_at_cursor

--- Cancel running tools of a buffer (<C-c>).
M.cancel = actions.cancel

--- Buffer-local keymaps for a chat buffer.
--- "12.3k": a token count for the statusline.
local function short(n)
  if n >= 1000000 then
    return string.format("%.1fM", n / 1000000)
  elseif n >= 1000 then
    return string.format("%.1fk", n / 1000)
  end
  return tostring(n)
end

--- A statusline component: in a chat buffer, the provider and model (the
--- one its last request went to, frontmatter included, while setup and
--- :Flemma switch stay as they were; else as set up or switched, the
--- provider's default by name once the host runs), what a
--- request in progress is doing, how many tools run, and the tokens of
--- this session's responses; "" elsewhere. Cheap: it reads what flemma's
--- events left in flemma.state, never the buffer or the host.
---   statusline = { lualine_x = { require("flemma").statusline } }
---   vim.o.statusline = "%f %= %{v:lua.require'flemma'.statusline()}"
function M.statusline(bufnr)
  bufnr = (type(bufnr) == "number" and bufnr ~= 0) and bufnr or vim.api.nvim_get_current_buf()
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].filetype ~= "chat" then
    return ""
  end
  local cfg = state.config()
  local provider, model = cfg.provider, cfg.model
  local switch = state.host.runtime.switch
  if type(switch) == "string" then
    local words = vim.split(switch, "%s+", { trimempty = true })
    if words[1] and not words[1]:find("=", 1, true) then
      provider, model = words[1], nil
      if words[2] and not words[2]:find("=", 1, true) then
        model = words[2]
      end
    end
  end
  local b = state.buffers[bufnr] or {}
  local used = b.used
  if
    used
    and used.from[1] == cfg.provider
    and used.from[2] == cfg.model
    and used.from[3] == state.host.runtime.switch
  then
    -- What this buffer's last request went to, as long as the choices it
    -- came from stay: it has the buffer's frontmatter in it.
    provider, model = used.provider, used.model
  elseif not model then
    local cat = state.host.catalogue
    model = cat and type(cat.defaults) == "table" and cat.defaults[provider] or nil
  end
  local parts = { model and (provider .. " " .. model) or tostring(provider) }
  if b.progress then
    table.insert(parts, buf.progress_text(b.progress, vim.loop.now()))
  end
  local running = 0
  for _ in pairs(b.running or {}) do
    running = running + 1
  end
  if running > 0 then
    table.insert(parts, running .. " running")
  end
  local u = state.usage
  if u.responses > 0 then
    table.insert(
      parts,
      string.format("%s in · %s out", short(u.input_tokens + u.cache_read_tokens), short(u.output_tokens))
    )
  end
  if u.cache_read_tokens > 0 then
    local prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
    table.insert(parts, string.format("%d%% cached", math.floor(u.cache_read_tokens * 100 / prompt + 0.5)))
  end
  if u.cost_usd > 0 then
    table.insert(parts, string.format(u.cost_usd < 1 and "$%.4f" or "$%.2f", u.cost_usd))
  end
  return table.concat(parts, " · ")
end

--- A statusline component: the estimated size of the buffer's next send
--- against its model's context window ("≈62k/200k 31%"), as estimated
--- after the last response or by :Flemma usage:estimate; "" before that
--- and elsewhere. Cheap: it reads flemma.state, never the buffer.
---   lualine_x = { require("flemma").context, require("flemma").statusline }
function M.context(bufnr)
  return usage.component(bufnr)
end

-- The next send's size for context(): asked once a response ends, never
-- while typing (flemma.buf cannot require the host: it is set from here).
buf.on_request_end = function(bufnr)
  usage.refresh(bufnr)
end

--- The chat buffers attached (M.attach), until they are wiped.
local attached = {}
local group_id

--- The one group of every chat buffer's autocommands, made with the three
--- that are not buffer-local: :read fires FileReadPre/Post for the file
--- read (the buffer read into is the current one), and a resize concerns
--- every chat buffer shown.
local function chat_group()
  if group_id then
    return group_id
  end
  group_id = vim.api.nvim_create_augroup("flemma.chat", { clear = true })
  for event, hook in pairs({
    FileReadPre = { "flemma: note the frontmatter before a :read", trust.before_read },
    FileReadPost = { "flemma: a :read that changes a trusted frontmatter untrusts it", trust.after_read },
  }) do
    vim.api.nvim_create_autocmd(event, {
      group = group_id,
      desc = hook[1],
      callback = function()
        local b = vim.api.nvim_get_current_buf()
        if attached[b] then
          hook[2](b)
        end
      end,
    })
  end
  local resize = vim.fn.exists("##WinResized") == 1 and { "VimResized", "WinResized" }
    or { "VimResized", "WinScrolled" }
  vim.api.nvim_create_autocmd(resize, {
    group = group_id,
    desc = "flemma: re-cut tool previews to the window width",
    callback = function()
      for b in pairs(attached) do
        if vim.api.nvim_buf_is_valid(b) and #vim.fn.win_findbuf(b) > 0 then
          channel.notify(P.refresh, b)
        end
      end
    end,
  })
  return group_id
end

function M.attach(bufnr)
  -- The text the buffer holds now is its origin (once: a later FileType
  -- event is not a load; reloads are seen by plugin/flemma.lua).
  trust.get(bufnr)
  local km = state.config().keymaps
  local function map(modes, lhs, fn, desc)
    if type(lhs) == "string" and lhs ~= "" then
      vim.keymap.set(modes, lhs, fn, { buffer = bufnr, silent = true, desc = "flemma: " .. desc })
    end
  end
  map({ "n", "i" }, km.send, function()
    actions.cycle(bufnr)
  end, "run the next step of the tool cycle / send")
  map("n", km.tool_execute, function()
    actions.execute_at_cursor(bufnr)
  end, "execute or resolve the tool block under the cursor")
  map({ "n", "i" }, km.cancel, function()
    actions.cancel(bufnr)
  end, "cancel the running request or tools")
  map("n", km.tool_approve_all, function()
    actions.approve_all(bufnr)
  end, "approve every waiting call of the message under the cursor")
  map("n", km.tool_reject_all, function()
    actions.reject_all(bufnr, "")
  end, "reject every waiting call of the message under the cursor")
  map("n", km.tool_allow_always, function()
    actions.allow_always(bufnr)
  end, "approve the pending call under the cursor and always allow its tool in this chat")
  -- <CR> opens the diff of a pending write/edit; elsewhere it stays <CR>
  -- (and it is not mapped at all when another mapping has it).
  if type(km.tool_diff) == "string" and km.tool_diff ~= "" and vim.fn.maparg(km.tool_diff, "n") == "" then
    local lhs = km.tool_diff
    map("n", lhs, function()
      local count = vim.v.count1
      require("flemma.diffview").at_cursor(bufnr, function()
        vim.cmd("normal! " .. count .. vim.api.nvim_replace_termcodes(lhs, true, false, true))
      end)
    end, "review the diff of the write/edit under the cursor")
  end
  -- Every autocommand of a chat buffer is buffer-local, in the one group
  -- (a FileType event again replaces them); the few that are not are made
  -- once for all chat buffers (chat_group).
  local group = chat_group()
  vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  attached[bufnr] = true
  -- The template of a new chat, folds, Markdown, motions and text objects.
  chatbuf.attach(bufnr, group)

  -- Previews follow the text and the window width. Only a running host is
  -- asked: typing never starts one.
  local function refresh()
    channel.notify(P.refresh, bufnr)
  end
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    desc = "flemma: forget the buffer's host state",
    callback = function()
      -- Its buffer-local autocommands go with the buffer.
      attached[bufnr] = nil
      state.forget_buffer(bufnr)
      channel.notify(P.forget, bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    buffer = bufnr,
    desc = "flemma: remember a trusted buffer's file as trusted",
    callback = function()
      trust.written(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = bufnr,
    desc = "flemma: refresh tool previews",
    callback = function()
      -- Not after the host's own write that carried the previews.
      if state.buffer(bufnr).marks_tick ~= vim.api.nvim_buf_get_changedtick(bufnr) then
        refresh()
      end
    end,
  })
end

return M
