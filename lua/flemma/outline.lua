-- The structure of a chat buffer, kept up to date change by change: for
-- every line, the scanner's state after it, its fold level and what starts
-- on it (a message, the frontmatter, a thinking block, a tool use, a tool
-- result or a compaction summary). Folding, navigation, the fold texts and the rulers read it; it
-- never changes the text. It follows the host's parser (buffer/lex.go) where
-- it matters for display: role markers and tool headers inside a code fence
-- are content, a tool header counts only in its role's message (Tool Use in
-- @Assistant:, Tool Result in @You:).
--
-- Incremental: a change re-scans its own lines, then goes on only while the
-- state after a line differs from what it was before the change (a fence
-- opened or closed, a role line typed): typing in a line re-scans that line.
-- The whole buffer is scanned once, when the model is first built.
--
-- Every line's level depends on the lines above it only (never on a line
-- below, so Neovim's fold update, which re-evaluates the changed lines and
-- what follows, is never left with a stale line above the change): a block
-- starts at its header, <thinking> or summary marker line and goes on until
-- its fence, </thinking> or closing marker closes it, or a role line
-- (thinking, summary) ends it; a tool header that is not followed by its
-- fence is a block of its own blank lines.
local state = require("flemma.state")

local M = {}

-- The state after a line, one number:
--   role (0 no message yet, 1 You, 2 Assistant, 3 System, 4 another)
--   + 5 * in frontmatter + 10 * the open fence is a tool block's
--   + 20 * header waiting for its fence (1 use, 2 result)
--   + 60 * in thinking (in @Assistant:) or in a compaction summary (in
--   @You:) + 120 * backticks of the open fence (0: none).
local roles = { You = 1, Assistant = 2, System = 3 }

local function decode(s)
  local fence = math.floor(s / 120)
  s = s - fence * 120
  local think = math.floor(s / 60)
  s = s - think * 60
  local hdr = math.floor(s / 20)
  s = s - hdr * 20
  local fblk = math.floor(s / 10)
  s = s - fblk * 10
  local fm = math.floor(s / 5)
  return s - fm * 5, fm, fblk, hdr, think, fence
end

local function encode(role, fm, fblk, hdr, think, fence)
  return role + 5 * fm + 10 * fblk + 20 * hdr + 60 * think + 120 * math.min(fence, 1000)
end

local function is_blank(s)
  return s:find("^%s*$") ~= nil
end

local function thinking_open(s)
  return s == "<thinking>" or s:find("^<thinking%s+redacted>$") or s:find('^<thinking%s+%w+:signature="[^"]*"%s*>$')
end

-- The markers of a compaction summary (buffer/lex.go summaryOpen,
-- summaryEnd): <!-- flemma:summary[: NOTE] --> and <!-- /flemma:summary -->.
local function summary_open(s)
  local rest = s:match("^<!%-%-%s*flemma:summary(.-)%-%->$")
  return rest ~= nil and (rest:find("^%s*$") ~= nil or rest:sub(1, 1) == ":")
end

local function summary_close(s)
  return s:find("^<!%-%-%s*/flemma:summary%s*%-%->$") ~= nil
end

--- One line: the state before it, its text and number -> the state after
--- it, its fold level (0, 1, 2, ">1", ">2") and what starts on it (or false).
function M.step(prev, s, lnum)
  local role, fm, fblk, hdr, think, fence = decode(prev)
  local c = s:byte(1)
  if fm == 1 then
    if s:find("^```%s*$") then
      fm = 0
    end
    return encode(role, fm, fblk, hdr, think, fence), 1, false
  end
  if lnum == 1 and c == 96 and s:find("^```%w+%s*$") then
    return encode(role, 1, 0, 0, 0, 0), ">1", "frontmatter"
  end
  local inner = (fblk == 1 or hdr > 0 or think == 1) and 2 or (role > 0 and 1 or 0)
  if fence > 0 then
    if c == 96 then
      local ticks = s:match("^`+")
      if #ticks >= fence and is_blank(s:sub(#ticks + 1)) then
        return encode(role, 0, 0, hdr, think, 0), inner, false
      end
    end
    return prev, inner, false
  end
  if c == 64 and s:find("^@%w+:%s*$") then
    return encode(roles[s:match("^@(%w+):")] or 4, 0, 0, 0, 0, 0), ">1", "message"
  end
  if c == 96 then
    local ticks = s:match("^`+")
    if #ticks >= 3 and not s:find("`", #ticks + 1, true) then
      if hdr > 0 then
        return encode(role, 0, 1, 0, think, #ticks), 2, false
      end
      return encode(role, 0, 0, 0, think, #ticks), inner, false
    end
    if hdr > 0 then
      return encode(role, 0, 0, 0, think, 0), think == 1 and 2 or 1, false
    end
    return prev, inner, false
  end
  if role == 2 and c == 42 and think == 0 and s:find("^%*%*Tool Use:%*%*") then
    if s:find("^%*%*Tool Use:%*%*%s*`[^`]+`%s*%(`[^)]+`%)") then
      return encode(role, 0, 0, 1, think, 0), ">2", "tool_use"
    end
    return encode(role, 0, 0, 0, think, 0), inner == 2 and think == 0 and 1 or inner, false
  end
  if role == 1 and c == 60 then -- <: a compaction summary opens or closes
    if think == 1 and summary_close(s) then
      return encode(role, 0, 0, 0, 0, 0), 2, false
    elseif think == 0 and summary_open(s) then
      return encode(role, 0, 0, 0, 1, 0), ">2", "summary"
    end
  end
  if role == 1 and c == 42 and think == 0 and s:find("^%*%*Tool Result:%*%*") then
    if s:find("^%*%*Tool Result:%*%*%s*`[^`]+`") then
      return encode(role, 0, 0, 2, think, 0), ">2", "tool_result"
    end
    return encode(role, 0, 0, 0, think, 0), think == 1 and 2 or 1, false
  end
  if role == 2 and c == 60 then -- <
    if think == 1 then
      if s == "</thinking>" then
        return encode(role, 0, 0, 0, 0, 0), 2, false
      end
      return encode(role, 0, 0, 0, 1, 0), 2, false
    elseif thinking_open(s) then
      return encode(role, 0, 0, 0, 1, 0), ">2", "thinking"
    end
    return encode(role, 0, 0, 0, 0, 0), 1, false
  end
  if hdr > 0 and not is_blank(s) then
    return encode(role, 0, 0, 0, think, 0), think == 1 and 2 or 1, false
  end
  return prev, inner, false
end

local step = M.step

--- Scan lines (a list of strings) from the start: { st, lv, kd } (the
--- state after, fold level and start kind of every line; st[0] is the
--- state before line 1).
function M.scan(lines)
  local st, lv, kd = { [0] = 0 }, {}, {}
  local s = 0
  for l = 1, #lines do
    local level, kind
    s, level, kind = step(s, lines[l], l)
    st[l], lv[l], kd[l] = s, level, kind
  end
  return { st = st, lv = lv, kd = kd, n = #lines }
end

local CHUNK = 200

-- Re-scan from line `from` (1-based) with the state before it, at least
-- through line `must`, then on while the state after a line differs from
-- the one stored for it. Returns the last line scanned.
local function rescan(bufnr, m, from, must)
  local n = m.n
  local st, lv, kd = m.st, m.lv, m.kd
  local s = st[from - 1] or 0
  local l = from
  while l <= n do
    local last = math.min(n, math.max(must, l + CHUNK - 1))
    local lines = vim.api.nvim_buf_get_lines(bufnr, l - 1, last, false)
    for i = 1, #lines do
      local level, kind
      local old = st[l]
      s, level, kind = step(s, lines[i], l)
      st[l], lv[l], kd[l] = s, level, kind
      if l > must and s == old then
        return l
      end
      l = l + 1
    end
  end
  return n
end

-- A consumer's dirty range [a, b] (1-based) after a change of old lines
-- first+1..last_old into first+1..last_new, merged with the lines re-scanned.
local function shift_dirty(d, first, last_old, last_new, stop)
  local delta = last_new - last_old
  local function move(x)
    if x > last_old then
      return x + delta
    elseif x > first then
      return math.max(first + 1, last_new)
    end
    return x
  end
  if d.a then
    d.a, d.b = math.min(move(d.a), first + 1), math.max(move(d.b), stop)
  else
    d.a, d.b = first + 1, stop
  end
end

local function on_lines(m, bufnr, tick, first, last_old, last_new)
  if m.tick and tick and tick <= m.tick then
    return -- built after this change already
  end
  local st, lv, kd = m.st, m.lv, m.kd
  local n_old = m.n
  local delta = last_new - last_old
  if delta ~= 0 then
    local n_new = n_old + delta
    if n_old > last_old then
      table.move(st, last_old + 1, n_old, last_new + 1)
      table.move(lv, last_old + 1, n_old, last_new + 1)
      table.move(kd, last_old + 1, n_old, last_new + 1)
    end
    for l = n_new + 1, n_old do
      st[l], lv[l], kd[l] = nil, nil, nil
    end
    m.n = n_new
  end
  -- The new lines have no state of their own yet: a value no scan makes,
  -- so the re-scan goes on through them.
  for l = first + 1, last_new do
    st[l] = -1
  end
  local stop = first + 1 <= m.n and rescan(bufnr, m, first + 1, last_new) or m.n
  stop = math.max(stop, math.min(first + 1, m.n))
  for _, d in pairs(m.dirty) do
    shift_dirty(d, first, last_old, last_new, stop)
  end
  m.tick = tick or vim.api.nvim_buf_get_changedtick(bufnr)
  m.pending = nil
  if m.listener then
    m.listener(bufnr)
  end
end

local function build(bufnr)
  local b = state.buffer(bufnr)
  local m = M.scan(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  m.bufnr = bufnr
  m.tick = vim.api.nvim_buf_get_changedtick(bufnr)
  m.dirty = (b.outline and b.outline.dirty) or {}
  m.listener = b.outline and b.outline.listener
  for _, d in pairs(m.dirty) do
    d.a, d.b = 1, m.n -- everything is new to them
  end
  b.outline = m
  if not b.outline_attached then
    b.outline_attached = true
    local ok = vim.api.nvim_buf_attach(bufnr, false, {
      on_lines = function(_, buf, tick, first, last_old, last_new)
        local bs = state.buffers[buf]
        if not bs or not bs.outline then
          if bs then
            bs.outline_attached = false
          end
          return true -- forgotten: detach
        end
        on_lines(bs.outline, buf, tick, first, last_old, last_new)
      end,
      on_changedtick = function(_, buf, tick)
        local bs = state.buffers[buf]
        if bs and bs.outline and bs.outline.tick and tick > bs.outline.tick then
          bs.outline.tick = tick
        end
      end,
      on_reload = function(_, buf)
        local bs = state.buffers[buf]
        if bs and bs.outline then
          bs.outline.tick = -1 -- built again on the next read
        end
      end,
      on_detach = function(_, buf)
        local bs = state.buffers[buf]
        if bs then
          bs.outline_attached = false
          if bs.outline then
            bs.outline.tick = -1
          end
        end
      end,
    })
    if not ok then
      b.outline_attached = false
    end
  end
  if m.listener then
    m.listener(bufnr)
  end
  return m
end

--- The model of a buffer: { bufnr, n, st, lv, kd, tick }, built on first
--- use and kept current by the buffer's changes. During a change, before
--- its on_lines (Neovim updates folds first), `tick` is behind the buffer's:
--- see M.level.
function M.get(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local b = state.buffer(bufnr)
  local m = b.outline
  if not m or m.tick == -1 or not b.outline_attached then
    m = build(bufnr)
  end
  return m
end

--- The fold level of line lnum (for 'foldexpr'). While a change is being
--- made Neovim asks for the levels of the changed lines before the change
--- is reported: the lines above the first line asked are unchanged, so the
--- levels from there are scanned from the buffer as asked (no more).
function M.level(bufnr, lnum)
  local m = M.get(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  if m.tick == tick then
    return m.lv[lnum] or 0
  end
  local p = m.pending
  if not p or p.tick ~= tick or lnum < p.from then
    p = { tick = tick, from = lnum, upto = lnum - 1, s = m.st[lnum - 1] or 0, lv = {} }
    m.pending = p
  end
  if lnum > p.upto then
    local lines = vim.api.nvim_buf_get_lines(bufnr, p.upto, lnum, false)
    local s = p.s
    for i, text in ipairs(lines) do
      local l = p.upto + i
      local level
      s, level = step(s, text, l)
      p.lv[l] = level
    end
    p.s, p.upto = s, p.upto + #lines
  end
  return p.lv[lnum] or 0
end

--- Register a consumer of changed regions: M.take(m, name) returns the
--- lines that changed (and were re-scanned) since its last call, as first,
--- last (1-based), or nil. listener(bufnr), when set, runs after each change.
function M.track(bufnr, name, listener)
  local m = M.get(bufnr)
  if not m.dirty[name] then
    m.dirty[name] = { a = 1, b = m.n }
  end
  if listener then
    m.listener = listener
  end
  return m
end

function M.take(m, name)
  local d = m.dirty[name]
  if not d or not d.a then
    return nil
  end
  local a, b = d.a, math.min(d.b, m.n)
  d.a, d.b = nil, nil
  if a > b then
    return nil
  end
  return a, b
end

local block_kinds = { thinking = true, tool_use = true, tool_result = true, summary = true }
M.block_kinds = block_kinds

--- The last line of the message or block starting at `first`.
function M.last_of(m, first)
  local lv, n = m.lv, m.n
  local l = first + 1
  if block_kinds[m.kd[first]] then
    while l <= n and lv[l] == 2 do
      l = l + 1
    end
  else
    while l <= n and lv[l] ~= ">1" do
      l = l + 1
    end
  end
  return l - 1
end

--- Whether the block starting at first (ending at last) is closed: its
--- fence or </thinking> seen (a block cut by the end of its message or of
--- the buffer is still being written).
function M.complete(m, first, last)
  local _, _, fblk, hdr, think, fence = decode(m.st[last] or 0)
  if m.kd[first] == "thinking" or m.kd[first] == "summary" then
    return think == 0
  end
  return fblk == 0 and hdr == 0 and fence == 0 and last > first
end

--- The message containing lnum: { role, first, last }, nil before the
--- first one.
function M.message_at(m, lnum)
  local kd = m.kd
  local l = math.min(lnum, m.n)
  while l >= 1 and kd[l] ~= "message" do
    l = l - 1
  end
  if l < 1 then
    return nil
  end
  local line = vim.api.nvim_buf_get_lines(m.bufnr, l - 1, l, false)[1] or ""
  return { kind = "message", role = line:match("^@(%w+):") or "", first = l, last = M.last_of(m, l) }
end

-- Where a block's fence body is: the first line after its header that
-- opens a fence, and the line before its closing fence.
local function fence_body(lines, first, last)
  for i = 2, #lines do
    if lines[i]:find("^```") then
      local info = lines[i]:match("^`+(.*)$")
      return first + i, last - 1, info
    end
  end
  return first + 1, first, nil
end

--- The block starting at first, with what the fold texts and the text
--- objects need: { kind, first, last, body_first, body_last, id, name, info,
--- suffix }. lines, when given, are the block's lines.
function M.block(m, first, lines)
  local kind = m.kd[first]
  if not block_kinds[kind] then
    return nil
  end
  local last = M.last_of(m, first)
  lines = lines or vim.api.nvim_buf_get_lines(m.bufnr, first - 1, last, false)
  local b = { kind = kind, first = first, last = last }
  if kind == "thinking" or kind == "summary" then
    b.body_first, b.body_last = first + 1, M.complete(m, first, last) and last - 1 or last
    return b
  end
  local head = lines[1] or ""
  if kind == "tool_use" then
    b.name, b.id = head:match("^%*%*Tool Use:%*%*%s*`([^`]+)`%s*%(`([^)]+)`%)")
  else
    b.id, b.suffix = head:match("^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$")
  end
  b.body_first, b.body_last, b.info = fence_body(lines, first, last)
  if not M.complete(m, first, last) then
    b.body_last = last
  end
  return b
end

--- The thinking or tool block containing lnum, if any (of kinds, when
--- given).
function M.block_at(m, lnum, kinds)
  local lv, kd = m.lv, m.kd
  local l = math.min(lnum, m.n)
  while l >= 1 and lv[l] == 2 and not kd[l] do
    l = l - 1
  end
  if l < 1 or not block_kinds[kd[l]] or (kinds and not kinds[kd[l]]) then
    return nil
  end
  local b = M.block(m, l)
  if b and lnum <= b.last then
    return b
  end
  return nil
end

--- The tool use with this id, looked for upwards from line `before`
--- (the call precedes its result), at most `limit` lines.
function M.tool_use(m, id, before, limit)
  local kd = m.kd
  local stop = math.max(1, before - (limit or 5000))
  for l = before, stop, -1 do
    if kd[l] == "tool_use" then
      local head = vim.api.nvim_buf_get_lines(m.bufnr, l - 1, l, false)[1] or ""
      if head:match("^%*%*Tool Use:%*%*%s*`[^`]+`%s*%(`([^)]+)`%)") == id then
        return M.block(m, l)
      end
    end
  end
  return nil
end

--- The next (dir = 1) or previous (dir = -1) line after/before lnum where
--- one of kinds starts, or nil.
function M.find(m, lnum, dir, kinds)
  local kd = m.kd
  local l = lnum + dir
  while l >= 1 and l <= m.n do
    if kd[l] and kinds[kd[l]] then
      return l
    end
    l = l + dir
  end
  return nil
end

--- The status of a tool result block: its flemma:tool placeholder status,
--- a legacy header suffix such as (pending), "error", or nil for a result.
function M.result_status(b)
  local st = b.info and b.info:match("^flemma:tool.-status=(%a+)")
  if st then
    return st
  end
  local suffix = b.suffix and b.suffix:match("^%s*%((.*)%)%s*$")
  if suffix then
    for word in suffix:gmatch("[%w_=]+") do
      local w = word:match("^status=(%a+)$") or word
      if w == "pending" or w == "approved" or w == "rejected" or w == "denied" or w == "aborted" or w == "error" then
        return w
      end
    end
  end
  return nil
end

return M
