-- What flemma knows of a chat buffer that only this editor session can know:
-- the text it held when it was loaded (its origin: nobody in this session
-- wrote it), whether the user trusts it, and the host's records of its tool
-- calls (received from the provider, decided, started). The host keeps the
-- records; this module holds a copy so that a restarted host still knows
-- what happened in this session.
--
-- Trust works like `direnv allow`: a buffer is trusted when it was empty when
-- flemma attached to it (everything in it was written in this session), when
-- the user ran :Flemma trust, or when its file is byte for byte what the user
-- last saved from a trusted buffer (a store of path -> sha256 under
-- stdpath("state")). A trusted buffer's frontmatter may approve tools and the
-- tool calls already in it are decided by the user's policy; in any other
-- buffer they ask.
--
-- What it knows is kept in flemma.state: per buffer (state.buffer(b).trust
-- and .undo, dropped when the buffer is wiped) and the store it read.
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

-- Steps back in each buffer's undo history. Text that undo brings back was
-- not typed now: a status the host withheld and an undo restored is not the
-- user's approval (see trust.Record.Withheld in the host). changenr() only
-- goes down when the buffer moves back in its undo history (u, g-, :undo N);
-- it is observed after every change (TextChanged), read and write; kept as
-- state.buffer(bufnr).undo = { seen = changenr last observed, count = steps back seen }.

local function changenr(bufnr)
  if bufnr == vim.api.nvim_get_current_buf() then
    return vim.fn.changenr()
  end
  return vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.changenr()
  end)
end

--- Observe the buffer's place in its undo history; returns the steps back seen.
function M.undos(bufnr)
  local b = state.buffer(bufnr)
  local u = b.undo
  if not u then
    u = { seen = -1, count = 0 }
    b.undo = u
  end
  local ok, n = pcall(changenr, bufnr)
  if ok and type(n) == "number" then
    if n < u.seen then
      u.count = u.count + 1
    end
    u.seen = n
  end
  return u.count
end

--- The buffer was attached or (re)loaded from disk: its text now is its
--- origin, and its trust is recomputed (a session's :Flemma trust does not
--- survive a reload: the new text may come from anyone).
function M.loaded(bufnr)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local b = state.buffer(bufnr)
  local st = b.trust or { gen = 0, records = {} }
  st.gen = st.gen + 1
  st.origin, st.digest = lines, nil
  st.load_undos = M.undos(bufnr)
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

--- :Flemma trust — the user vouches for the buffer as it is.
function M.trust(bufnr)
  local st = M.get(bufnr)
  st.trusted = true
  if not vim.bo[bufnr].modified then
    M.written(bufnr)
  end
  notify(
    "This buffer is trusted: its frontmatter may approve tools, and the tool calls already in it are decided by your policy. "
      .. "Saving it keeps it trusted; :Flemma untrust undoes this."
  )
end

--- :Flemma untrust
function M.untrust(bufnr)
  local st = M.get(bufnr)
  st.trusted = false
  local k = key(bufnr)
  if k and read_store()[k] then
    read_store()[k] = nil
    write_store()
  end
  notify("This buffer is not trusted: its frontmatter cannot approve, and calls that were in the file ask first.")
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
    load_undos = st.load_undos or 0,
    origin = st.digest == nil and st.origin or vim.NIL,
    digest = st.digest or vim.NIL,
    records = recs,
  }
end

--- The host digested the origin of load `gen`: the lines are not needed any more.
function M.set_digest(bufnr, gen, digest)
  local st = trust_of(bufnr)
  if st and st.gen == gen then
    st.digest, st.origin = digest, nil
  end
end

--- Keep the host's records (a list of { id, received, status, by, hash, ran }).
function M.record(bufnr, recs)
  local st = M.get(bufnr)
  for _, r in ipairs(recs or {}) do
    st.records[r.id] = r
  end
end

return M
