-- Buffer access for the host: one snapshot call to read, one apply call to
-- write. apply() checks changedtick so the host never writes stale lines.
-- What it remembers of a buffer is in flemma.state (tracker, our_tick).
local notify = require("flemma.notify")
local state = require("flemma.state")
local trust = require("flemma.trust")
local M = {}

local ns_diag = vim.api.nvim_create_namespace("flemma.diagnostics")
local ns_marks = vim.api.nvim_create_namespace("flemma.marks")
local ns_lock = vim.api.nvim_create_namespace("flemma.lock")
local ns_progress = vim.api.nvim_create_namespace("flemma.progress")

-- The text width of the first window showing bufnr (sign, number and fold
-- columns excluded), or 80 when it is not shown.
local function text_width(bufnr)
  local win = vim.fn.win_findbuf(bufnr)[1]
  if not win then
    return 80
  end
  local info = vim.fn.getwininfo(win)[1]
  return math.max(1, info.width - (info.textoff or 0))
end

local function eol_char()
  local ok, lc = pcall(function()
    return vim.opt.listchars:get()
  end)
  if ok and type(lc) == "table" and type(lc.eol) == "string" and lc.eol ~= "" then
    return lc.eol
  end
  return "↵"
end

-- The host mirrors each buffer it works on. A tracker records, since the
-- last sync at tick `base`, the lowest changed line (`first`, 0-based) and
-- how many lines at the end are untouched (`tail`): every change lies in
-- between, so that window is all the host needs to catch up. It is kept as
-- state.buffer(bufnr).tracker = { base, first, tail }.
local function tracker(bufnr)
  local b = state.buffers[bufnr]
  return b and b.tracker
end

local function track(bufnr)
  local b = state.buffer(bufnr)
  if b.tracker then
    return b.tracker
  end
  local t = { base = -1, first = 0, tail = 0 }
  b.tracker = t
  local ok = vim.api.nvim_buf_attach(bufnr, false, {
    on_lines = function(_, buf, _, first, _, last_new)
      local tr = tracker(buf)
      if tr ~= t then
        return true -- detach (forgotten, or tracked anew)
      end
      local count = vim.api.nvim_buf_line_count(buf)
      tr.first = math.min(tr.first, first)
      tr.tail = math.max(0, math.min(tr.tail, count - last_new))
    end,
    on_reload = function(_, buf)
      if tracker(buf) == t then
        t.base = -1
      end
      -- Reloaded from disk: the text is the buffer's new origin.
      pcall(trust.reread, buf)
    end,
    on_detach = function(_, buf)
      local bs = state.buffers[buf]
      if bs and bs.tracker == t then
        bs.tracker = nil
      end
    end,
  })
  if not ok then
    b.tracker = nil
    return nil
  end
  return t
end

-- After a sync the host holds the buffer as it is now.
local function synced(bufnr)
  local t = tracker(bufnr)
  if t then
    t.base = vim.api.nvim_buf_get_changedtick(bufnr)
    t.first = math.huge
    t.tail = math.huge
  end
end

--- Everything the host needs to parse a buffer, in one round trip. When the
--- host holds the buffer as of tick `have`, only the changed window is sent:
--- { delta = true, first, tail, count, lines = lines[first, count - tail) }.
function M.snapshot(bufnr, have)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return { valid = false }
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local count = vim.api.nvim_buf_line_count(bufnr)
  local t = track(bufnr)
  local delta, first, tail = false, 0, 0
  local lines
  if t and have and have >= 0 and have == t.base then
    delta = true
    first = math.min(t.first, count)
    tail = math.min(t.tail, count - first)
    lines = vim.api.nvim_buf_get_lines(bufnr, first, count - tail, false)
  else
    lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  end
  synced(bufnr)
  local tr = trust.get(bufnr)
  return {
    valid = true,
    trust_gen = tr.gen,
    trusted = tr.trusted,
    trust_vouch = tr.vouch or 0,
    tick = tick,
    delta = delta,
    first = first,
    tail = tail,
    count = count,
    lines = lines,
    name = name,
    cwd = vim.fn.getcwd(),
    modifiable = vim.bo[bufnr].modifiable,
    width = text_width(bufnr),
    eol = eol_char(),
    ambiwidth = vim.o.ambiwidth,
  }
end

-- The part of an edit that changes something: lines equal at its start and
-- at its end are left in place, so their extmarks, folds and highlighting
-- stay and the redraw after it covers only the lines that differ (a stream
-- flush rewrites the whole response, of which only the end is new).
-- Also returns the first old line the narrowed edit replaces (nil when it
-- replaces none).
local function narrow(bufnr, e, follow)
  local new = e.lines or {}
  local start, stop = e.start, e.stop
  if stop <= start or #new == 0 then
    return start, stop, new
  end
  local old = vim.api.nvim_buf_get_lines(bufnr, start, stop, false)
  local p, max = 0, math.min(#old, #new)
  while p < max and old[p + 1] == new[p + 1] do
    p = p + 1
  end
  local q = 0
  while q < max - p and old[#old - q] == new[#new - q] do
    q = q + 1
  end
  -- A stream's write (follow) left inserting lines before the buffer's last
  -- line (a paragraph break) replaces that line too: an append to it
  -- (write_lines) carries the marks at the end of the buffer along, where
  -- lines inserted above them made Neovim 0.7 redraw the whole window.
  local at_end = follow and stop == vim.api.nvim_buf_line_count(bufnr)
  if at_end and q > 0 and p + q == #old then
    q = q - 1
  end
  if p == 0 and q == 0 then
    return start, stop, new, old[1]
  end
  local mid = {}
  for i = p + 1, #new - q do
    mid[#mid + 1] = new[i]
  end
  return start + p, stop - q, mid, stop - q > start + p and old[p + 1] or nil
end

-- Write lines[start, stop) (narrowed). An edit that replaces one line by
-- lines of which the first starts with it (a stream flush: the answer's last
-- line grows and lines follow it) is made as an insertion at that line's
-- end: the same text and undo step, and an extmark at the end of the line
-- (the progress note) is carried to the end of the insertion by the edit
-- itself, so it need not be set again (render_progress: on Neovim 0.7 a mark
-- set or cleared in the same redraw as inserted lines makes it redraw the
-- whole window instead of the changed lines). Only a stream's write
-- (follow) is made so: the insertion carries a cursor just past the line's
-- end along too ('virtualedit', Insert mode), which a window on the last line
-- does anyway while it follows the answer, but a window flemma may not move
-- must keep (TestWriteLeavesOtherCursors).
local function write_lines(bufnr, start, stop, lines, old, follow)
  if follow and stop == start + 1 and old and #lines > 0 and lines[1]:sub(1, #old) == old then
    local rest = { lines[1]:sub(#old + 1) }
    for i = 2, #lines do
      rest[i] = lines[i]
    end
    vim.api.nvim_buf_set_text(bufnr, start, #old, start, #old, rest)
  else
    vim.api.nvim_buf_set_lines(bufnr, start, stop, false, lines)
  end
end

-- The cursor (docs/design.md, "flemma never takes the cursor"): flemma
-- moves a window's cursor only while it is where the user's last action in
-- that window (a press, a command) or flemma's last move left it, kept as
-- an extmark that moves with the text; once the user moves it, it is theirs
-- until their next action there. A window whose cursor is on the last line
-- follows a streaming answer (opts.follow), whoever put it there.
local ns_cursor = vim.api.nvim_create_namespace("flemma.cursor")

local function set_anchor(bufnr, win)
  local b = state.buffer(bufnr)
  b.anchors = b.anchors or {}
  local pos = vim.api.nvim_win_get_cursor(win)
  local ok, id = pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_cursor, pos[1] - 1, pos[2], { id = b.anchors[win] })
  b.anchors[win] = ok and id or nil
end

--- The user acted in window win (default: the current one) on bufnr:
--- flemma may move that window's cursor until the user moves it.
function M.anchor(bufnr, win)
  win = (win == nil or win == 0) and vim.api.nvim_get_current_win() or win
  if vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == bufnr then
    set_anchor(bufnr, win)
  end
end

-- Whether win's cursor is still where the anchor says.
local function anchored(bufnr, win)
  local b = state.buffers[bufnr]
  local id = b and b.anchors and b.anchors[win]
  if not id then
    return false
  end
  local ok, pos = pcall(vim.api.nvim_buf_get_extmark_by_id, bufnr, ns_cursor, id, {})
  if not ok or not pos[1] then
    return false
  end
  -- The line only: leaving Insert mode (a <C-]> typed there) moves the
  -- column, and a column is no place in the conversation.
  return vim.api.nvim_win_get_cursor(win)[1] - 1 == pos[1]
end

-- Before a write: the windows showing bufnr, whether flemma may move their
-- cursor (anchored) and whether it is on the last line (at_end).
local function cursor_windows(bufnr)
  local out = {}
  local count = vim.api.nvim_buf_line_count(bufnr)
  local b = state.buffers[bufnr]
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    local w = { win = win, anchored = anchored(bufnr, win), at_end = vim.api.nvim_win_get_cursor(win)[1] == count }
    if not w.anchored and b and b.anchors and b.anchors[win] then
      pcall(vim.api.nvim_buf_del_extmark, bufnr, ns_cursor, b.anchors[win])
      b.anchors[win] = nil -- the user moved it: theirs until their next action
    end
    out[#out + 1] = w
  end
  return out
end

-- After a write: the cursor of the windows flemma may move goes to line
-- (and col, 0-based), a following window's to the last line.
local function move_cursors(bufnr, wins, line, col, follow)
  local count = vim.api.nvim_buf_line_count(bufnr)
  for _, w in ipairs(wins) do
    if vim.api.nvim_win_is_valid(w.win) and vim.api.nvim_win_get_buf(w.win) == bufnr then
      local target
      if follow and w.at_end then
        target = { count, 0 }
      elseif line and w.anchored then
        target = { math.max(1, math.min(line, count)), col or 0 }
      end
      if target then
        pcall(vim.api.nvim_win_set_cursor, w.win, target)
      end
      if target or w.anchored then
        set_anchor(bufnr, w.win)
      end
    end
  end
end

--- Apply all edits of one step at once. edits: list of {start, stop, lines}
--- (0-based, end-exclusive, over the lines of snapshot `tick`), applied
--- bottom-up. opts: cursor (1-based line; cursor_col: 0-based byte column)
--- where the windows flemma may move go, follow (windows on the last line
--- stay on it), modifiable (bool), join (undojoin
--- with our previous write), diagnostics (list or false to keep), marks,
--- records (the host's records of the calls this step decided, kept by
--- flemma.trust together with the edit).
--- Returns {ok = true, tick = n, seq = the undo state after the write} or
--- {ok = false, stale = true, tick = n}.
function M.apply(bufnr, tick, edits, opts)
  opts = opts or {}
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return { ok = false, err = "buffer " .. bufnr .. " is no longer valid" }
  end
  local now = vim.api.nvim_buf_get_changedtick(bufnr)
  if tick ~= now then
    return { ok = false, stale = true, tick = now }
  end
  -- Bottom-up, in the host's order: later start first, and for the same
  -- start the longer range first (buffer.Apply does the same).
  table.sort(edits, function(a, b)
    if a.start ~= b.start then
      return a.start > b.start
    end
    return a.stop > b.stop
  end)
  local was_modifiable = vim.bo[bufnr].modifiable
  local wins = cursor_windows(bufnr)
  if opts.undo_break then
    -- A new phase starts a new undo step: setting 'undolevels' syncs undo.
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd("let &undolevels = &undolevels")
    end)
  end
  local ok, err = true, nil
  if #edits > 0 then
    ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
      if opts.join and state.buffer(bufnr).our_tick == now then
        pcall(vim.cmd, "undojoin")
      end
      vim.bo[bufnr].modifiable = true
      for _, e in ipairs(edits) do
        local start, stop, lines, old = narrow(bufnr, e, opts.follow == true)
        if stop > start or #lines > 0 then
          write_lines(bufnr, start, stop, lines, old, opts.follow == true)
        end
      end
    end)
  end
  -- 'modifiable' is restored (or set as asked) even when an edit failed.
  if opts.modifiable ~= nil and opts.modifiable ~= vim.NIL then
    M.lock(bufnr, not opts.modifiable)
  else
    vim.bo[bufnr].modifiable = was_modifiable
  end
  if not ok then
    return { ok = false, err = "applying the edit failed: " .. tostring(err) }
  end
  local line = opts.cursor ~= vim.NIL and opts.cursor or nil
  local col = opts.cursor_col ~= vim.NIL and opts.cursor_col or nil
  move_cursors(bufnr, wins, line, col, opts.follow == true)
  if opts.diagnostics and opts.diagnostics ~= vim.NIL then
    M.set_diagnostics(bufnr, opts.diagnostics)
  end
  if opts.marks and opts.marks ~= vim.NIL then
    M.set_marks(bufnr, opts.marks)
  end
  if opts.records and opts.records ~= vim.NIL then
    trust.record(bufnr, opts.records)
  end
  -- The progress note stays after the last line, whatever the edit moved.
  local b = state.buffers[bufnr]
  if #edits > 0 and b and b.progress then
    M.render_progress(bufnr)
  end
  local tick_now = vim.api.nvim_buf_get_changedtick(bufnr)
  -- The previews of this text are the ones just set: the TextChanged that
  -- follows this write need not ask the host for them again.
  state.buffer(bufnr).marks_tick = (opts.marks and opts.marks ~= vim.NIL) and tick_now or nil
  synced(bufnr) -- the host computed the new text itself
  if #edits > 0 then
    state.buffer(bufnr).our_tick = tick_now
  elseif opts.undo_break then
    state.buffer(bufnr).our_tick = nil -- the next write of this phase starts its undo step
  end
  -- The undo state of this write, for the decisions it carries (their
  -- records were stamped with it above); 0 when it carried none.
  local seq = 0
  if opts.records and opts.records ~= vim.NIL and #opts.records > 0 then
    seq = trust.seq(bufnr)
  end
  return { ok = true, tick = tick_now, seq = seq }
end

--- Replace flemma's diagnostics of a buffer. items: {lnum (1-based), col
--- (1-based, 0 = unknown), severity ("error"|"warning"|"info"), message}.
function M.set_diagnostics(bufnr, items)
  -- Nothing to set and nothing to clear: vim.diagnostic.set is not free
  -- even for an empty list (0.7–0.8 ms a call on 0.10, which runs its
  -- handlers and DiagnosticChanged; its first call loads the module, ~4 ms),
  -- and most presses and every stream write have no diagnostic.
  if
    #items == 0
    and (package.loaded["vim.diagnostic"] == nil or #vim.diagnostic.get(bufnr, { namespace = ns_diag }) == 0)
  then
    return
  end
  local sev = { error = vim.diagnostic.severity.ERROR, warning = vim.diagnostic.severity.WARN }
  local out = {}
  for _, d in ipairs(items) do
    table.insert(out, {
      lnum = math.max(0, d.lnum - 1),
      col = math.max(0, (d.col or 1) - 1),
      severity = sev[d.severity] or vim.diagnostic.severity.INFO,
      message = d.message,
      source = "flemma",
    })
  end
  vim.diagnostic.set(ns_diag, bufnr, out)
end

--- Replace flemma's extmarks (previews, running indicators). items: {line
--- (0-based), text, hl, kind = "preview" (a virtual line below) | "status"
--- (virtual text at the end of the line)}; a preview's lines ({text, hl}
--- each: a write/edit's diff) are more virtual lines under it.
function M.set_marks(bufnr, items)
  vim.api.nvim_buf_clear_namespace(bufnr, ns_marks, 0, -1)
  for _, m in ipairs(items) do
    local o = {}
    if m.kind == "preview" then
      o.virt_lines = { { { m.text, m.hl } } }
      if type(m.lines) == "table" then
        for _, l in ipairs(m.lines) do
          table.insert(o.virt_lines, { { l.text, l.hl } })
        end
      end
    else
      o.virt_text = { { m.text, m.hl } }
      o.virt_text_pos = "eol"
    end
    pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_marks, m.line, 0, o)
  end
end

function M.namespaces()
  return { diagnostics = ns_diag, marks = ns_marks, lock = ns_lock, progress = ns_progress }
end

local spinner = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }

--- "1,204": n with a comma every three digits.
local function thousands(n)
  local s = tostring(math.floor(n))
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end
M.thousands = thousands

--- The words of a request's progress, and its spinner frame.
function M.progress_text(p, now)
  local elapsed = math.max(0, (now - p.t0) / 1000)
  local frame = spinner[math.floor(elapsed * 10) % #spinner + 1]
  local what
  if p.phase == "thinking" then
    what = string.format("thinking… %s chars", thousands(p.thinking_chars or 0))
  elseif p.phase == "answering" then
    what = "answering…"
  else
    what = "waiting for " .. (p.provider ~= "" and p.provider or "the model")
  end
  return string.format("%s %s  %ds", frame, what, math.floor(elapsed))
end

local progress_timer

-- The rulers' namespace (flemma.chatbuf draws them): the line that carries
-- the progress note has none, or the note would come after 240 columns of
-- ruler, out of the window (it blinked as the two marks swapped places).
local ns_rulers = vim.api.nvim_create_namespace("flemma.rulers")

-- The note is one extmark at the end of the buffer's last line. Neovim 0.7
-- redraws a whole window, not its changed lines, when between two redraws
-- lines were inserted or deleted and an extmark with virtual text was set or
-- cleared in it (win_update: "both inserted/deleted lines and specific
-- lines to be redrawn"): every line of the answer on the screen, again at
-- each stream flush. So a write does not set it: the flush's insertion at
-- the end of the last line carries it along (write_lines), and its words
-- (spinner, seconds, counts) are set by the timer and the host's progress
-- reports, not while a change of the buffer waits for its redraw (at most
-- two ticks in a row: a buffer not redrawn still gets its words).
vim.api.nvim_set_decoration_provider(ns_progress, {
  -- Called in a redraw for a buffer changed since the one before.
  on_buf = function(_, bufnr)
    local b = state.buffers[bufnr]
    if b and b.progress then
      b.note_drawn = vim.api.nvim_buf_get_changedtick(bufnr)
    end
  end,
})

local function note_opts(words, id)
  return { id = id, virt_text = { { words, "FlemmaProgress" } }, virt_text_pos = "eol" }
end

-- The note's words, unless a change of the buffer waits for its redraw.
local function note_words(bufnr, b, pos, words)
  if words == b.note_text then
    return
  end
  local pending = b.note_drawn ~= nil and b.note_drawn ~= vim.api.nvim_buf_get_changedtick(bufnr)
  if pending and (b.note_skips or 0) < 2 then
    b.note_skips = (b.note_skips or 0) + 1
    return
  end
  pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_progress, pos[1], pos[2], note_opts(words, b.progress_mark))
  b.note_text, b.note_skips = words, 0
end

-- Show p's note on the last line (words: its words are due too, else it
-- only has to be there), or clear it (p nil).
local function render_progress(bufnr, p, now, words)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local b = state.buffers[bufnr]
  local old = b and b.progress_line
  local chatbuf = package.loaded["flemma.chatbuf"]
  if not p or not b then
    vim.api.nvim_buf_clear_namespace(bufnr, ns_progress, 0, -1)
    if b then
      b.progress_line, b.progress_mark, b.note_text, b.note_drawn = nil, nil, nil, nil
    end
    if old and chatbuf then
      chatbuf.draw_rulers(bufnr, old + 1, old + 1)
    end
    return
  end
  local last = vim.api.nvim_buf_line_count(bufnr) - 1
  local ok, pos = pcall(vim.api.nvim_buf_get_extmark_by_id, bufnr, ns_progress, b.progress_mark or -1, {})
  if ok and pos[1] == last then
    if words then
      note_words(bufnr, b, pos, M.progress_text(p, now))
    end
  else
    vim.api.nvim_buf_clear_namespace(bufnr, ns_progress, 0, -1)
    local text = M.progress_text(p, now)
    local col = #(vim.api.nvim_buf_get_lines(bufnr, last, last + 1, false)[1] or "")
    local set, id = pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_progress, last, col, note_opts(text))
    b.progress_mark, b.note_text, b.note_skips = set and id or nil, text, 0
  end
  vim.api.nvim_buf_clear_namespace(bufnr, ns_rulers, last, last + 1)
  b.progress_line = last
  if old and old ~= last and chatbuf then
    chatbuf.draw_rulers(bufnr, old + 1, old + 1)
  end
end

--- Draw a buffer's progress note again (after an edit moved its line).
function M.render_progress(bufnr)
  local b = state.buffers[bufnr]
  render_progress(bufnr, b and b.progress, vim.loop.now())
end

-- Statuslines are drawn again after flemma's events and while a request
-- is in progress (the spinner, the seconds), at most every 100 ms: Neovim
-- redraws a status line only when something of its own changes.
local status_due = false

function M.redraw_status()
  if status_due then
    return
  end
  status_due = true
  vim.defer_fn(function()
    status_due = false
    pcall(vim.cmd, "redrawstatus!")
  end, 100)
end

local function tick_progress()
  local now = vim.loop.now()
  local any = false
  for bufnr, b in pairs(state.buffers) do
    if b.progress then
      any = true
      render_progress(bufnr, b.progress, now, true)
    end
  end
  if any then
    M.redraw_status()
  end
  if not any and progress_timer then
    progress_timer:stop()
    progress_timer:close()
    progress_timer = nil
  end
end

--- Show what a request in progress is doing after the buffer's last line
--- (virtual text: a spinner, the phase, the time since it was sent), or
--- clear it (p.phase == ""). The host sends a change of phase or of the
--- counts; a timer animates the spinner and the time in between.
function M.progress(bufnr, p)
  local b = state.buffer(bufnr)
  local now = vim.loop.now()
  M.redraw_status()
  if p and type(p.model) == "string" and p.model ~= "" then
    -- The model this buffer's request went to (its frontmatter and the
    -- provider's default resolved by the host), valid for the statusline
    -- while the choices it came from stay (flemma.statusline).
    local cfg = state.config()
    b.used = {
      provider = p.provider,
      model = p.model,
      from = { cfg.provider, cfg.model, state.host.runtime.switch },
    }
  end
  if not p or p.phase == nil or p.phase == "" then
    b.progress = nil
    render_progress(bufnr, nil, now)
    return
  end
  p.t0 = now - (p.elapsed_ms or 0)
  if b.progress and b.progress.t0 < p.t0 then
    p.t0 = b.progress.t0 -- the first report started the clock
  end
  if not b.progress then
    -- A request starts: the garbage of what came before it (a big chat
    -- opened and scanned, the host's first read of it) is collected now,
    -- while the model is waited for, rather than by the incremental
    -- collector in the middle of the answer, where one of its steps took
    -- 20+ ms of a single write (docs/design.md, "Garbage before a stream").
    -- Not in a heap over 64 MB (other plugins'), where it would take long.
    vim.schedule(function()
      if collectgarbage("count") < 64 * 1024 then
        collectgarbage("collect")
      end
    end)
  end
  b.progress = p
  render_progress(bufnr, p, now, true)
  if not progress_timer then
    progress_timer = vim.loop.new_timer()
    progress_timer:start(100, 100, vim.schedule_wrap(tick_progress))
  end
end

--- What flemma's events tell the statusline: running tools per buffer,
--- the session's token totals.
local function observe(pattern, data)
  if type(data) ~= "table" or not data.bufnr then
    return
  end
  local b = state.buffer(data.bufnr)
  M.redraw_status()
  if pattern == "FlemmaApprovalPending" then
    -- The notice that follows ("Autopilot paused: … waits for your
    -- approval") goes once the wait is over: a call runs, or a request
    -- starts.
    b.awaiting = notify.seq
  elseif b.awaiting and (pattern == "FlemmaToolExecuting" or pattern == "FlemmaRequestStart") then
    notify.take_back(b.awaiting)
    b.awaiting = nil
  end
  if pattern == "FlemmaToolExecuting" then
    b.running = b.running or {}
    b.running[data.tool_id or ""] = true
  elseif pattern == "FlemmaToolFinished" and b.running then
    b.running[data.tool_id or ""] = nil
  end
  if pattern == "FlemmaRequestEnd" and (data.status == "ok" or data.status == "cut") then
    -- On the main loop: the host's write of the answer is in.
    vim.schedule(function()
      require("flemma.autowrite").after_response(data.bufnr)
    end)
  end
  if pattern == "FlemmaRequestEnd" and type(data.usage) == "table" then
    local total = state.usage
    total.responses = total.responses + 1
    for _, k in ipairs({
      "input_tokens",
      "output_tokens",
      "cache_read_tokens",
      "cache_write_tokens",
      "reasoning_tokens",
    }) do
      total[k] = total[k] + (tonumber(data.usage[k]) or 0)
    end
    if tonumber(data.cost_usd) then
      total.cost_usd = total.cost_usd + tonumber(data.cost_usd)
    end
  end
  if pattern == "FlemmaRequestEnd" and M.on_request_end and vim.api.nvim_buf_is_valid(data.bufnr) then
    M.on_request_end(data.bufnr)
  end
end

--- Fire a User autocmd with data. Before 0.8 autocmds carry no data: it is
--- then readable from require("flemma.buf").last_event.
function M.event(pattern, data)
  observe(pattern, data)
  M.last_event = data
  if vim.fn.has("nvim-0.8") == 1 then
    vim.api.nvim_exec_autocmds("User", { pattern = pattern, data = data, modeline = false })
  else
    vim.cmd("doautocmd <nomodeline> User " .. pattern)
  end
end

function M.notify(msg, level)
  notify.now(msg, level)
end

M.lock_text = "flemma is working: read-only until done (i types a draft, <C-c> cancels)"

--- Mark a buffer locked or not: 'modifiable', and a note after its last
--- line that says why typing gives E21.
function M.lock(bufnr, on)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if vim.bo[bufnr].modifiable == on then
    vim.bo[bufnr].modifiable = not on
  end
  require("flemma.draft").locked(bufnr, on)
  local last = vim.api.nvim_buf_line_count(bufnr) - 1
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, ns_lock, 0, -1, {})
  -- Already under the last line (a stream write's insertion at the end of
  -- that line carries it, see write_lines): not set again, which on Neovim
  -- 0.7 would redraw the whole window (render_progress).
  if on and #marks == 1 and marks[1][2] == last then
    return
  end
  if #marks > 0 then
    vim.api.nvim_buf_clear_namespace(bufnr, ns_lock, 0, -1)
  end
  if on then
    local col = #(vim.api.nvim_buf_get_lines(bufnr, last, last + 1, false)[1] or "")
    pcall(vim.api.nvim_buf_set_extmark, bufnr, ns_lock, last, col, {
      virt_lines = { { { M.lock_text, "FlemmaLocked" } } },
      right_gravity = true,
    })
  end
end

--- Set 'modifiable' (the host locks the buffer while tools run).
function M.set_modifiable(bufnr, on)
  M.lock(bufnr, not on)
end

return M
