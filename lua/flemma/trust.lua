-- What flemma knows of a chat buffer that only this editor session can know:
-- the text it held when it was loaded (its origin: nobody in this session
-- wrote it), whether the user trusts it, and the host's records of its tool
-- calls (received from the provider, decided, started). The host keeps the
-- records; this module holds a copy so that a restarted host still knows
-- what happened in this session.
--
-- Trust works like `direnv allow`, for a buffer's frontmatter: it is trusted
-- (it may approve tools, enable them, raise limits) when the buffer was empty
-- when flemma attached to it, when the user ran :Flemma trust, or when its
-- file is byte for byte what the user last saved from a trusted buffer (a
-- store of path -> sha256 under stdpath("state")). A :read that changes the
-- frontmatter of a trusted buffer makes it untrusted again.
--
-- Tool calls are judged one by one, never by the buffer: a call the provider
-- did not send in this session asks, in any buffer, unless the user vouched
-- for it. :Flemma trust vouches for the calls the buffer holds at that
-- moment (the host digests them from the lines kept here); a call read,
-- pasted or typed in later is not covered.
--
-- What it knows is kept in flemma.state: per buffer (state.buffer(b).trust,
-- dropped when the buffer is wiped) and the store it read.
local config = require("flemma.config")
local state = require("flemma.state")
local M = {}

local max_entries = 1000

local notify = require("flemma.notify").new(vim.log.levels.INFO)

function M.store_path()
  return config.state_dir() .. "/trust.json"
end

-- path -> { sha256, time }, read on first use.
local function read_store()
  if state.trust_store then
    return state.trust_store
  end
  local store = {}
  state.trust_store = store
  local path = M.store_path()
  if vim.fn.filereadable(path) == 1 then
    local ok, data = pcall(function()
      return vim.fn.json_decode(table.concat(vim.fn.readfile(path), "\n"))
    end)
    if ok and type(data) == "table" and type(data.files) == "table" then
      for k, v in pairs(data.files) do
        if type(k) == "string" and type(v) == "table" and type(v.sha256) == "string" then
          store[k] = { sha256 = v.sha256, time = tonumber(v.time) or 0 }
        end
      end
    end
  end
  return store
end

local function write_store()
  local entries = {}
  for k, v in pairs(read_store()) do
    table.insert(entries, { k, v })
  end
  table.sort(entries, function(a, b)
    return a[2].time > b[2].time
  end)
  local files = vim.empty_dict()
  for i = 1, math.min(#entries, max_entries) do
    files[entries[i][1]] = entries[i][2]
  end
  vim.fn.mkdir(config.state_dir(), "p", 448) -- 0700
  local path = M.store_path()
  local tmp = path .. ".tmp" .. vim.loop.getpid()
  local ok, err = pcall(function()
    if vim.fn.writefile({ vim.fn.json_encode({ version = 1, files = files }) }, tmp) ~= 0 then
      error("could not write " .. tmp)
    end
    vim.loop.fs_chmod(tmp, 384) -- 0600
    assert(vim.loop.fs_rename(tmp, path))
  end)
  if not ok then
    pcall(vim.loop.fs_unlink, tmp)
    notify("could not save the trust store: " .. tostring(err), vim.log.levels.WARN)
  end
end

local function key(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return nil
  end
  return vim.fn.resolve(vim.fn.fnamemodify(name, ":p"))
end

local function content_hash(lines)
  return vim.fn.sha256(table.concat(lines, "\n"))
end

local function blank(lines)
  for _, l in ipairs(lines) do
    if l:find("%S") then
      return false
    end
  end
  return true
end

-- The buffer's undo state: Neovim's changenr() is undotree().seq_cur, the
-- state the text is in. The host records the state of each of its writes;
-- whether the text descends from it is asked of the undo tree (ancestry).
local function in_buf(bufnr, fn)
  if bufnr == vim.api.nvim_get_current_buf() then
    return fn()
  end
  return vim.api.nvim_buf_call(bufnr, fn)
end

--- The buffer's current undo state (0 when unknown).
function M.seq(bufnr)
  local ok, n = pcall(in_buf, bufnr, vim.fn.changenr)
  return ok and type(n) == "number" and n or 0
end

--- Which of `seqs` (undo states) the buffer's text descends from: each
--- state on the path from the root of the undo tree to the current one. A
--- text reached by undoing past a state and editing anew sits on a branch
--- beside it, not below. Answers { stale = true } when the buffer is no
--- longer at changedtick `tick` (the host's plan is stale anyway).
function M.ancestry(bufnr, tick, seqs)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
    return { stale = true }
  end
  local ok, tree = pcall(in_buf, bufnr, vim.fn.undotree)
  if not ok or type(tree) ~= "table" then
    return { stale = false, ["in"] = {} }
  end
  -- entries is the chain of states from the oldest kept one; an entry's
  -- alt list is a branch beside it, starting from the same parent.
  local parent = {}
  local function walk(list, p)
    local prev = p
    for _, e in ipairs(list or {}) do
      parent[e.seq] = prev
      if e.alt then
        walk(e.alt, prev)
      end
      prev = e.seq
    end
  end
  walk(tree.entries, 0)
  local above = { [0] = true }
  local s = tree.seq_cur
  while s and s ~= 0 and not above[s] do
    above[s] = true
    s = parent[s]
  end
  local out = {}
  for _, q in ipairs(seqs or {}) do
    if above[q] then
      table.insert(out, q)
    end
  end
  return { stale = false, ["in"] = out }
end

-- The frontmatter of lines (the fenced block the buffer starts with), or "".
local function frontmatter(lines)
  local first = lines[1]
  if not first or not first:match("^%s*```") then
    return ""
  end
  for i = 2, #lines do
    if lines[i]:match("^%s*```%s*$") then
      return table.concat(lines, "\n", 1, i)
    end
  end
  return table.concat(lines, "\n")
end

--- The buffer was attached or (re)loaded from disk: its text now is its
--- origin, and its trust is recomputed (a session's :Flemma trust does not
--- survive a reload: the new text may come from anyone).
function M.loaded(bufnr)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local b = state.buffer(bufnr)
  local st = b.trust or { gen = 0, records = {}, tombs = {} }
  st.gen = st.gen + 1
  st.origin, st.digest = lines, nil
  st.load_seq = M.seq(bufnr)
  -- What the user vouched for was the text of the previous load.
  st.vouch, st.vouch_lines, st.vouched = 0, nil, {}
  local k = key(bufnr)
  local known = k and read_store()[k]
  st.trusted = blank(lines) or (known ~= nil and known.sha256 == content_hash(lines))
  b.trust = st
end

--- A buffer was read from disk: when flemma knows it, the text read is its
--- new origin (BufReadPost of :e, :e!, a 'autoread' reload).
function M.reread(bufnr)
  if state.buffers[bufnr] and state.buffers[bufnr].trust then
    M.loaded(bufnr)
  end
end

--- The buffer's state, loading it on first use.
function M.get(bufnr)
  local st = state.buffer(bufnr).trust
  if not st then
    M.loaded(bufnr)
    st = state.buffers[bufnr].trust
  end
  return st
end

-- The buffer's trust state if flemma knows the buffer, else nil.
local function trust_of(bufnr)
  local b = state.buffers[bufnr]
  return b and b.trust
end

--- The buffer was written: a trusted buffer's file is remembered as trusted.
function M.written(bufnr)
  local st = trust_of(bufnr)
  local k = key(bufnr)
  if not st or not st.trusted or not k then
    return
  end
  read_store()[k] = { sha256 = content_hash(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)), time = os.time() }
  write_store()
end

--- :Flemma trust — the user vouches for the buffer as it is: its
--- frontmatter, and the tool calls it holds now.
function M.trust(bufnr)
  local st = M.get(bufnr)
  st.trusted = true
  st.vouch = (st.vouch or 0) + 1
  st.vouch_lines, st.vouched = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), nil
  if not vim.bo[bufnr].modified then
    M.written(bufnr)
  end
  notify(
    "This buffer is trusted: its frontmatter may approve tools, and the tool calls in it now are decided by your policy "
      .. "(calls added later, or in the file when you reopen it, still ask). Saving it keeps its frontmatter trusted; "
      .. ":Flemma untrust undoes this."
  )
end

--- :Flemma untrust
function M.untrust(bufnr)
  local st = M.get(bufnr)
  st.trusted = false
  st.vouch = (st.vouch or 0) + 1
  st.vouch_lines, st.vouched = nil, {}
  local k = key(bufnr)
  if k and read_store()[k] then
    read_store()[k] = nil
    write_store()
  end
  notify("This buffer is not trusted: its frontmatter cannot approve, and calls that were in the file ask first.")
end

--- Before a :read into the buffer: remember its frontmatter.
function M.before_read(bufnr)
  local st = trust_of(bufnr)
  if st then
    st.fm_before = frontmatter(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  end
end

--- After a :read into the buffer: text from a file that changed the
--- frontmatter of a trusted buffer is not the user's word (a buffer started
--- empty and filled by :0read shared.chat): the buffer is not trusted any
--- more. The calls read in ask either way (they were neither received nor
--- vouched for).
function M.after_read(bufnr)
  local st = trust_of(bufnr)
  if not st then
    return
  end
  local before = st.fm_before
  st.fm_before = nil
  if st.trusted and before ~= nil and frontmatter(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) ~= before then
    st.trusted = false
    notify(
      "The text read into this buffer changed its frontmatter: the buffer is not trusted any more "
        .. "(its frontmatter cannot approve). :Flemma trust if the text is yours.",
      vim.log.levels.WARN
    )
  end
end

--- For the host: everything it needs to rebuild its view of the buffer.
function M.pull(bufnr)
  local st = M.get(bufnr)
  local recs = {}
  for _, r in pairs(st.records) do
    table.insert(recs, r)
  end
  return {
    gen = st.gen,
    trusted = st.trusted,
    load_seq = st.load_seq or 0,
    origin = st.digest == nil and st.origin or vim.NIL,
    digest = st.digest or vim.NIL,
    records = recs,
    vouch = st.vouch or 0,
    vouch_lines = st.vouched == nil and st.vouch_lines or vim.NIL,
    vouched = st.vouched or vim.NIL,
    tombs = table.concat(st.tombs or {}),
    always = st.always or vim.NIL,
  }
end

--- Keep the user's "always allow" grants of the buffer ({ tools, commands }),
--- which only the host gives after the user's :Flemma tool:allow-always;
--- in memory only, with the records, so a restarted host has them again.
function M.grant(bufnr, grants)
  M.get(bufnr).always = grants
end

--- The host digested the origin of load `gen`: the lines are not needed any more.
function M.set_digest(bufnr, gen, digest)
  local st = trust_of(bufnr)
  if st and st.gen == gen then
    st.digest, st.origin = digest, nil
  end
end

--- The host digested the lines of :Flemma trust number `vouch` of load `gen`
--- into the calls they held.
function M.set_vouched(bufnr, gen, vouch, calls)
  local st = trust_of(bufnr)
  if st and st.gen == gen and (st.vouch or 0) == vouch then
    st.vouched, st.vouch_lines = calls or {}, nil
  end
end

--- Keep the host's records (a list of { id, received, status, by, hash,
--- ran, wrote, withheld, seq }). A seq of -1 is the undo state now: the
--- records travel with the write that carries their decision.
function M.record(bufnr, recs)
  local st = M.get(bufnr)
  local now
  for _, r in ipairs(recs or {}) do
    if r.seq == -1 then
      now = now or M.seq(bufnr)
      r.seq = now
    end
    st.records[r.id] = r
  end
end

--- The host is done with these calls (their results are in the buffer, or
--- they left it): their records go; tombs (16 hex digits per call that ran
--- or whose result was written) keep what is still needed of them.
function M.prune(bufnr, ids, tombs)
  local st = trust_of(bufnr)
  if not st then
    return
  end
  for _, id in ipairs(ids or {}) do
    st.records[id] = nil
  end
  if type(tombs) == "string" and tombs ~= "" then
    -- In chunks of about 4 KiB: an append copies one chunk, not them all.
    local chunks = st.tombs
    local last = #chunks
    if last > 0 and #chunks[last] < 4096 then
      chunks[last] = chunks[last] .. tombs
    else
      table.insert(chunks, tombs)
    end
  end
end

return M
