-- The editor's knowledge for the host's read-only tools (diagnostics, lsp,
-- buffers) and for the diagnostics after an edit. The host asks with
-- query(token, q); Neovim never waits: a question that needs a language
-- server starts its requests and returns { status = "started" }, and the
-- answer goes back as the notification flemma.editor_done(token, answer).
-- Every question ends by itself within q.timeout_ms (a timer), and the host
-- may end it sooner with cancel(token).
--
-- The host has checked the path it asks about (deny_read) and filters what
-- comes back (locations in files tools may not read are dropped there): this
-- module answers what Neovim knows, bounded in size (q.max items).
--
-- A file no window shows may still be asked about: it is loaded into a
-- hidden, unlisted buffer with every autocommand ignored (no ftplugin, no
-- syntax, no swap file, none of the user's BufRead/FileType/LspAttach
-- handlers) and attached to the language servers already running for its
-- filetype and root (flemma never starts a server); the buffer is wiped when
-- the question ends, unless the user opened it meanwhile, in which case it is
-- read again as an ordinary :edit would and kept.
local P = require("flemma.protocol")
local channel = require("flemma.channel")

local M = {}

local uv = vim.loop
local pending = {} -- token -> { cancel = fn }
local temp = {} -- bufnr -> true: hidden buffers this module loaded

local severities = { "error", "warning", "info", "hint" }
local severity_of = { error = 1, warning = 2, info = 3, hint = 4 }

-- The LSP client API of this Neovim (0.7: get_active_clients; 0.10:
-- get_clients). nil when vim.lsp was never loaded: then no client runs, and
-- asking does not load it.
local function clients()
  local lsp = package.loaded["vim.lsp"]
  if not lsp then
    return {}
  end
  local list = lsp.get_clients and lsp.get_clients() or lsp.get_active_clients()
  local out = {}
  for _, c in ipairs(list) do
    if not (c.is_stopped and c.is_stopped()) then
      table.insert(out, c)
    end
  end
  return out
end

local function without_events(fn)
  local ei = vim.o.eventignore
  vim.o.eventignore = "all"
  local ok, a, b = pcall(fn)
  vim.o.eventignore = ei
  if not ok then
    error(a, 0)
  end
  return a, b
end

local function realpath(p)
  return (p and p ~= "" and uv.fs_realpath(p)) or p
end

-- The loaded or unloaded buffer whose file is path (resolved), or nil.
local function find_buf(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= "" and (name == path or realpath(name) == path) then
      return b
    end
  end
end

local function within(path, root)
  if type(root) ~= "string" or root == "" then
    return false
  end
  root = realpath(root):gsub("/$", "")
  return path == root or path:sub(1, #root + 1) == root .. "/"
end

-- The client's roots: its root_dir and workspace folders, as paths.
local function roots(c)
  local out = {}
  if c.config and c.config.root_dir then
    table.insert(out, c.config.root_dir)
  end
  for _, f in ipairs(c.workspace_folders or {}) do
    if f.uri then
      table.insert(out, vim.uri_to_fname(f.uri))
    elseif f.name then
      table.insert(out, f.name)
    end
  end
  return out
end

local function client_buffers(c)
  local out = {}
  for b in pairs(c.attached_buffers or {}) do
    if vim.api.nvim_buf_is_valid(b) then
      table.insert(out, b)
    end
  end
  return out
end

-- Does client c serve files of filetype ft? Its configured filetypes say
-- so, or, when it has none, the buffers it already serves.
local function serves(c, ft)
  if ft == nil or ft == "" then
    return false
  end
  local fts = c.config and c.config.filetypes
  if type(fts) == "table" and #fts > 0 then
    return vim.tbl_contains(fts, ft)
  end
  for _, b in ipairs(client_buffers(c)) do
    if vim.bo[b].filetype == ft then
      return true
    end
  end
  return false
end

-- The running clients that may serve path (filetype ft): they serve ft and
-- one of their roots holds the file. A client without a root (single-file
-- mode) is not given other files.
local function attachable(path, ft)
  local out = {}
  for _, c in ipairs(clients()) do
    if serves(c, ft) then
      for _, r in ipairs(roots(c)) do
        if within(path, r) then
          table.insert(out, c)
          break
        end
      end
    end
  end
  return out
end

local function attached(b)
  local out = {}
  for _, c in ipairs(clients()) do
    if c.attached_buffers and c.attached_buffers[b] then
      table.insert(out, c)
    end
  end
  return out
end

-- The filetype the running language servers' buffers with the same
-- extension as path have (a fallback when detection says nothing), or nil.
local function ft_of_same_extension(path)
  local ext = path:match("%.([^./]+)$")
  if not ext then
    return nil
  end
  for _, c in ipairs(clients()) do
    for _, ob in ipairs(client_buffers(c)) do
      if vim.api.nvim_buf_get_name(ob):match("%.([^./]+)$") == ext and vim.bo[ob].filetype ~= "" then
        return vim.bo[ob].filetype
      end
    end
  end
  return nil
end

-- The filetype Neovim would give path, without running autocommands (else
-- that of the servers' buffers with its extension).
local function detect_ft(path, b)
  if vim.filetype and vim.filetype.match then
    local ok, ft = pcall(vim.filetype.match, { filename = path, buf = b })
    if ok and type(ft) == "string" and ft ~= "" then
      return ft
    end
    -- 0.7: match(name, bufnr) sets the option itself.
    ok = pcall(without_events, function()
      vim.filetype.match(path, b)
    end)
    if ok and vim.bo[b].filetype ~= "" then
      return vim.bo[b].filetype
    end
  end
  return ft_of_same_extension(path)
end

-- When the user opens a hidden buffer of ours in a window, it becomes
-- theirs: read it again as :edit would (their ftplugin, syntax, language
-- servers) and keep it.
local function adopt(b)
  if not temp[b] then
    return
  end
  temp[b] = nil
  vim.schedule(function()
    if vim.api.nvim_buf_is_valid(b) and not vim.bo[b].modified then
      vim.bo[b].buflisted = true
      vim.bo[b].swapfile = vim.o.swapfile
      pcall(vim.api.nvim_buf_call, b, function()
        vim.cmd("silent edit")
      end)
    end
  end)
end

local function wipe(b)
  if not temp[b] or not vim.api.nvim_buf_is_valid(b) then
    return
  end
  local how = temp[b]
  temp[b] = nil
  for _, c in ipairs(attached(b)) do
    pcall(vim.lsp.buf_detach_client, b, c.id)
  end
  pcall(without_events, function()
    -- A buffer of the user's that was not loaded is unloaded again, never
    -- deleted; one this module made is wiped.
    vim.api.nvim_buf_delete(b, { force = true, unload = how == "unload" })
  end)
end

-- A buffer holding path, loaded: { bufnr, temp = true when loaded here }.
-- With lsp, the running servers that may serve it are attached (a buffer of
-- the user's keeps the servers it has; it gets those it lacks).
local function open(path, lsp)
  local b = find_buf(path)
  if b and vim.api.nvim_buf_is_loaded(b) then
    return { bufnr = b }
  end
  if vim.fn.filereadable(path) ~= 1 then
    return nil, "file not found"
  end
  local created = b == nil
  b = without_events(function()
    local nb = b or vim.fn.bufadd(path)
    vim.bo[nb].swapfile = false
    vim.fn.bufload(nb)
    if created then
      vim.bo[nb].buflisted = false
      vim.bo[nb].bufhidden = "hide"
    end
    return nb
  end)
  temp[b] = created and "wipe" or "unload"
  local ft = detect_ft(path, b)
  if ft then
    without_events(function()
      vim.bo[b].filetype = ft
    end)
  end
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = b,
    once = true,
    desc = "flemma: a hidden buffer the user opened becomes theirs",
    callback = function()
      adopt(b)
    end,
  })
  if lsp then
    for _, c in ipairs(attachable(path, ft)) do
      without_events(function()
        vim.lsp.buf_attach_client(b, c.id)
      end)
    end
  end
  return { bufnr = b, temp = true }
end

-- The clients serving buffer b for path: those attached, plus the running
-- ones that may serve it (attached now).
local function serving(b, path)
  local have = attached(b)
  local seen = {}
  for _, c in ipairs(have) do
    seen[c.id] = true
  end
  for _, c in ipairs(attachable(path, vim.bo[b].filetype)) do
    if not seen[c.id] then
      without_events(function()
        vim.lsp.buf_attach_client(b, c.id)
      end)
      table.insert(have, c)
    end
  end
  return have
end

local function names(cs)
  local out = {}
  for _, c in ipairs(cs) do
    table.insert(out, c.name)
  end
  return out
end

local function line_text(b, lnum)
  return vim.api.nvim_buf_get_lines(b, lnum, lnum + 1, false)[1]
end

-- Byte column of an LSP character offset in line (enc: the client's).
local function byte_col(line, character, enc)
  if enc == "utf-8" then
    return math.min(character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, character, enc ~= "utf-32")
  if ok then
    return col
  end
  return #line
end

local function character(line, col, enc)
  col = math.min(col, #line)
  if enc == "utf-8" then
    return col
  end
  local ok, u32, u16 = pcall(vim.str_utfindex, line, col)
  if not ok then
    return col
  end
  return enc == "utf-32" and u32 or u16
end

-- A position the model named: line (1-based) and a column (1-based byte)
-- or the first whole-word occurrence of symbol on that line. 0-based.
local function position(b, q)
  local lnum = (q.line or 1) - 1
  local count = vim.api.nvim_buf_line_count(b)
  if lnum < 0 or lnum >= count then
    return nil, string.format("line %d is outside the file (%d lines)", q.line or 0, count)
  end
  local text = line_text(b, lnum)
  if q.symbol and q.symbol ~= "" then
    local s = q.symbol
    local from = 1
    local found
    while true do
      local i, j = text:find(s, from, true)
      if not i then
        break
      end
      local before, after = text:sub(i - 1, i - 1), text:sub(j + 1, j + 1)
      if not before:match("[%w_]") and not after:match("[%w_]") then
        found = i
        break
      end
      found = found or i
      from = i + 1
    end
    if not found then
      return nil, string.format("%q does not occur on line %d", s, q.line)
    end
    return { lnum = lnum, col = found - 1, text = text }
  end
  local col = math.max((q.column or 1) - 1, 0)
  if col > #text then
    return nil, string.format("column %d is past the end of line %d (%d bytes)", q.column, q.line, #text)
  end
  return { lnum = lnum, col = col, text = text }
end

-- A Location or LocationLink as the host wants it: the file, the 0-based
-- line, the byte column when the file is loaded here (else the character
-- offset and its encoding, which the host converts from the file's text).
local function location(loc, enc)
  local uri = loc.targetUri or loc.uri
  local range = loc.targetSelectionRange or loc.targetRange or loc.range
  if type(uri) ~= "string" or type(range) ~= "table" or not range.start then
    return nil
  end
  local ok, path = pcall(vim.uri_to_fname, uri)
  if not ok or not uri:match("^file:") then
    return nil
  end
  local out = {
    path = path,
    line = range.start.line,
    character = range.start.character,
    encoding = enc,
  }
  local b = find_buf(path)
  if b and vim.api.nvim_buf_is_loaded(b) then
    local text = line_text(b, range.start.line)
    if text then
      out.col = byte_col(text, range.start.character, enc)
      out.text = text
    end
  end
  return out
end

local function hover_text(result)
  local c = result and result.contents
  if type(c) == "string" then
    return c
  elseif type(c) == "table" then
    if c.value then
      return c.value
    end
    local parts = {}
    for _, p in ipairs(c) do
      table.insert(parts, type(p) == "string" and p or p.value or "")
    end
    return table.concat(parts, "\n\n")
  end
  return ""
end

local kinds = {
  "File",
  "Module",
  "Namespace",
  "Package",
  "Class",
  "Method",
  "Property",
  "Field",
  "Constructor",
  "Enum",
  "Interface",
  "Function",
  "Variable",
  "Constant",
  "String",
  "Number",
  "Boolean",
  "Array",
  "Object",
  "Key",
  "Null",
  "EnumMember",
  "Struct",
  "Event",
  "Operator",
  "TypeParameter",
}

-- Flattens DocumentSymbol[] (with containers) or SymbolInformation[].
local function symbols(result, path, enc, out, container, max, dropped)
  for _, s in ipairs(result or {}) do
    if #out >= max then
      dropped[1] = dropped[1] + 1
    else
      local item
      if s.location then
        item = location(s.location, enc)
      elseif s.selectionRange or s.range then
        item = location({ uri = vim.uri_from_fname(path), range = s.selectionRange or s.range }, enc)
      end
      if item then
        item.name = s.name
        item.kind = kinds[s.kind] or tostring(s.kind)
        item.container = s.containerName or container
        item.detail = s.detail
        table.insert(out, item)
      end
    end
    if s.children then
      symbols(s.children, path, enc, out, s.name, max, dropped)
    end
  end
end

local function lsp_ns(c)
  local ok, ns = pcall(vim.lsp.diagnostic.get_namespace, c.id)
  return ok and ns or nil
end

local function diag(path, d, source)
  return {
    path = path,
    lnum = d.lnum + 1,
    col = d.col + 1,
    end_lnum = (d.end_lnum or d.lnum) + 1,
    end_col = (d.end_col or d.col) + 1,
    severity = severities[d.severity] or "error",
    message = d.message,
    source = d.source or source,
    code = d.code ~= nil and tostring(d.code) or nil,
  }
end

local function ns_name(ns)
  local ok, n = pcall(vim.diagnostic.get_namespace, ns)
  return ok and n and n.name or nil
end

-- Diagnostics of buffer b: of every namespace but flemma's own (only those
-- of the clients cs when given), at least min severity.
local function buf_diagnostics(b, path, min, cs, out, max, dropped)
  local want = {}
  if cs then
    for _, c in ipairs(cs) do
      local ns = lsp_ns(c)
      if ns then
        want[ns] = c.name
      end
    end
  end
  local ds = vim.diagnostic.get(b)
  table.sort(ds, function(x, y)
    if x.lnum ~= y.lnum then
      return x.lnum < y.lnum
    end
    return x.col < y.col
  end)
  for _, d in ipairs(ds) do
    local name = ns_name(d.namespace)
    local keep = d.severity <= (severity_of[min] or 4) and not (name and name:match("^flemma"))
    if cs then
      keep = keep and want[d.namespace] ~= nil
    end
    if keep then
      if #out >= max then
        dropped[1] = dropped[1] + 1
      else
        table.insert(out, diag(path, d, want[d.namespace] or name))
      end
    end
  end
end

-- Starts an answer that waits: returns finish(answer) (the first call
-- wins), and registers the cleanup that runs whatever ends it.
local function waiting(token, q, cleanup)
  local done = false
  local timer = uv.new_timer()
  local function finish(answer)
    if done then
      return
    end
    done = true
    pending[token] = nil
    timer:stop()
    timer:close()
    pcall(cleanup)
    channel.notify(P.editor_done, token, answer)
  end
  pending[token] = {
    cancel = function()
      if done then
        return
      end
      done = true
      pending[token] = nil
      timer:stop()
      timer:close()
      pcall(cleanup)
    end,
  }
  timer:start(
    q.timeout_ms or 10000,
    0,
    vim.schedule_wrap(function()
      finish({ error = string.format("no answer within %.1f s", (q.timeout_ms or 10000) / 1000), timed_out = true })
    end)
  )
  return finish
end

-- Sends method to every client in cs; calls done(results) with one entry
-- per client ({ client, err, result }) once all answered. The requests are
-- cancelled with the question.
local function request_all(cs, b, method, params_for, reqs, done)
  local left = 0
  local results = {}
  for _, c in ipairs(cs) do
    local params = params_for(c)
    if params then
      local ok, id = c.request(method, params, function(err, result)
        table.insert(results, { client = c, err = err, result = result })
        left = left - 1
        if left == 0 then
          done(results)
        end
      end, b)
      if ok then
        left = left + 1
        table.insert(reqs, { client = c, id = id })
      end
    end
  end
  if left == 0 then
    done(results)
  end
end

local function supports(c, method)
  if c.supports_method then
    local ok, yes = pcall(c.supports_method, method)
    if ok then
      return yes
    end
  end
  return true
end

local function enc_of(c)
  return c.offset_encoding or "utf-16"
end

-- Waits for the first diagnostics of one of cs on b after now, then a short
-- settling time (servers publish in stages); calls done(). The autocommand
-- is removed by the returned function.
local function on_published(b, cs, settle_ms, done)
  local ns = {}
  for _, c in ipairs(cs) do
    local n = lsp_ns(c)
    if n then
      ns[n] = true
    end
  end
  local timer
  local id = vim.api.nvim_create_autocmd("DiagnosticChanged", {
    buffer = b,
    desc = "flemma: diagnostics after an edit",
    callback = function(ev)
      local d = ev.data and ev.data.diagnostics
      if d and #d > 0 and not ns[d[1].namespace] then
        return
      end
      if not timer then
        timer = vim.defer_fn(done, settle_ms)
      end
    end,
  })
  return function()
    pcall(vim.api.nvim_del_autocmd, id)
  end
end

-- The filetype of a file not loaded (a scratch lookup: no buffer made).
local function detect_ft_for(path)
  if vim.filetype and vim.filetype.match then
    local ok, ft = pcall(vim.filetype.match, { filename = path })
    if ok and type(ft) == "string" and ft ~= "" then
      return ft
    end
  end
  return ft_of_same_extension(path)
end

local ops = {}

function ops.buffers(_, q)
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if
      name ~= ""
      and vim.bo[b].buflisted
      and vim.bo[b].buftype == ""
      and not temp[b]
      and vim.bo[b].filetype ~= "chat"
    then
      if #out < (q.max or 200) then
        local loaded = vim.api.nvim_buf_is_loaded(b)
        table.insert(out, {
          path = realpath(name),
          bufnr = b,
          modified = vim.bo[b].modified,
          loaded = loaded,
          visible = vim.fn.bufwinid(b) ~= -1,
          current = b == vim.api.nvim_get_current_buf(),
          lines = loaded and vim.api.nvim_buf_line_count(b) or nil,
          filetype = vim.bo[b].filetype,
          clients = names(attached(b)),
        })
      end
    end
  end
  return { status = "done", answer = { buffers = out } }
end

-- diagnostics of one file (q.path), or of every loaded buffer under q.under.
function ops.diagnostics(token, q)
  local max, dropped, out = q.max or 200, { 0 }, {}
  if not q.path or q.path == "" then
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local name = vim.api.nvim_buf_get_name(b)
      if vim.api.nvim_buf_is_loaded(b) and name ~= "" and vim.bo[b].buftype == "" and not temp[b] then
        local path = realpath(name)
        if within(path, q.under) then
          buf_diagnostics(b, path, q.severity, nil, out, max, dropped)
        end
      end
    end
    return { status = "done", answer = { diagnostics = out, dropped = dropped[1] } }
  end
  local loaded = find_buf(q.path)
  if loaded and vim.api.nvim_buf_is_loaded(loaded) then
    buf_diagnostics(loaded, q.path, q.severity, nil, out, max, dropped)
    return { status = "done", answer = { diagnostics = out, dropped = dropped[1], clients = names(attached(loaded)) } }
  end
  -- Not open: only a language server can say; load it for one, wait for
  -- its first report.
  if #attachable(q.path, detect_ft_for(q.path)) == 0 then
    return { status = "done", answer = { unavailable = "not_open" } }
  end
  return M._after_edit(token, q)
end

-- The language servers' diagnostics of q.path once they have seen its
-- content on disk: a buffer of the user's that is unmodified is read again
-- (as 'autoread' would), a file no buffer holds is loaded hidden; a buffer
-- with unsaved changes is left alone (its diagnostics are of other text).
function M._after_edit(token, q)
  local b = find_buf(q.path)
  local user = b and vim.api.nvim_buf_is_loaded(b) and not temp[b]
  if user and vim.bo[b].modified then
    return { status = "done", answer = { unavailable = "modified" } }
  end
  if user then
    -- Read it again only as 'autoread' would: without it :checktime asks
    -- the user (a prompt), which a tool must never cause.
    local ar = vim.fn.getbufvar(b, "&autoread")
    if ar == -1 or ar == "" then
      ar = vim.o.autoread and 1 or 0
    end
    if ar == 0 or ar == false then
      return { status = "done", answer = { unavailable = "noautoread" } }
    end
  end
  if not user then
    local ft = detect_ft_for(q.path)
    if #attachable(q.path, ft) == 0 then
      return { status = "done", answer = { unavailable = "no_client" } }
    end
  elseif #attached(b) == 0 and #attachable(q.path, vim.bo[b].filetype) == 0 then
    return { status = "done", answer = { unavailable = "no_client" } }
  end
  local h
  if not user then
    local err
    h, err = open(q.path, true)
    if not h then
      return { status = "done", answer = { error = err } }
    end
    b = h.bufnr
  end
  local cs = serving(b, q.path)
  if #cs == 0 then
    if h and h.temp then
      wipe(b)
    end
    return { status = "done", answer = { unavailable = "no_client" } }
  end
  local unwatch
  local finish = waiting(token, q, function()
    if unwatch then
      unwatch()
    end
    if h and h.temp then
      wipe(b)
    end
  end)
  local function report()
    local out, dropped = {}, { 0 }
    buf_diagnostics(b, q.path, q.severity, cs, out, q.max or 200, dropped)
    finish({ diagnostics = out, dropped = dropped[1], clients = names(cs) })
  end
  unwatch = on_published(b, cs, q.settle_ms or 300, report)
  if user then
    -- The file changed on disk: read it again, as 'autoread' does for an
    -- unmodified buffer (the servers get the new text from the reload).
    local ok = pcall(vim.api.nvim_buf_call, b, function()
      vim.cmd("silent checktime " .. b)
    end)
    if not ok then
      finish({ error = "the buffer could not be read again" })
    end
  end
  return { status = "started" }
end

function ops.after_edit(token, q)
  return M._after_edit(token, q)
end

-- lsp: definition, references, hover, document_symbols on q.path (at
-- q.line and q.symbol or q.column), workspace_symbols for q.query.
function ops.lsp(token, q)
  local max = q.max or 200
  if q.method == "workspace_symbols" then
    local cs = {}
    for _, c in ipairs(clients()) do
      local ok = false
      for _, r in ipairs(roots(c)) do
        if within(realpath(r), q.under) or within(q.under, r) then
          ok = true
        end
      end
      if ok and supports(c, "workspace/symbol") then
        table.insert(cs, c)
      end
    end
    if #cs == 0 then
      return { status = "done", answer = { unavailable = "no_client" } }
    end
    local reqs = {}
    local finish = waiting(token, q, function()
      for _, r in ipairs(reqs) do
        pcall(r.client.cancel_request, r.id)
      end
    end)
    request_all(
      cs,
      nil,
      "workspace/symbol",
      function()
        return { query = q.query or "" }
      end,
      reqs,
      function(results)
        local out, dropped, errs = {}, { 0 }, {}
        for _, r in ipairs(results) do
          if r.err then
            table.insert(errs, r.client.name .. ": " .. tostring(r.err.message or r.err))
          else
            symbols(r.result, nil, enc_of(r.client), out, nil, max, dropped)
          end
        end
        finish({ symbols = out, dropped = dropped[1], clients = names(cs), errors = errs })
      end
    )
    return { status = "started" }
  end

  local h, err = open(q.path, true)
  if not h then
    return { status = "done", answer = { error = err } }
  end
  local b = h.bufnr
  local cleanup_buf = function()
    if h.temp then
      wipe(b)
    end
  end
  local methods = {
    definition = { "textDocument/definition" },
    references = { "textDocument/references" },
    hover = { "textDocument/hover", "textDocument/definition", "textDocument/typeDefinition" },
    document_symbols = { "textDocument/documentSymbol" },
  }
  local want = methods[q.method]
  if not want then
    cleanup_buf()
    return { status = "done", answer = { error = "unknown operation " .. tostring(q.method) } }
  end
  local cs = {}
  for _, c in ipairs(serving(b, q.path)) do
    if supports(c, want[1]) then
      table.insert(cs, c)
    end
  end
  if #cs == 0 then
    cleanup_buf()
    return { status = "done", answer = { unavailable = "no_client" } }
  end
  local pos
  if q.method ~= "document_symbols" then
    local perr
    pos, perr = position(b, q)
    if not pos then
      cleanup_buf()
      return { status = "done", answer = { error = perr } }
    end
  end
  local uri = vim.uri_from_bufnr(b)
  local reqs = {}
  local finish = waiting(token, q, function()
    for _, r in ipairs(reqs) do
      pcall(r.client.cancel_request, r.id)
    end
    cleanup_buf()
  end)
  local function params(c)
    local p = { textDocument = { uri = uri } }
    if pos then
      p.position = { line = pos.lnum, character = character(pos.text, pos.col, enc_of(c)) }
    end
    if q.method == "references" then
      p.context = { includeDeclaration = true }
    end
    return p
  end
  local answer = { clients = names(cs), locations = {}, definitions = {}, symbols = {}, errors = {} }
  local dropped = { 0 }
  local left = #want
  local function one(method, results)
    for _, r in ipairs(results) do
      local enc = enc_of(r.client)
      if r.err then
        table.insert(answer.errors, r.client.name .. ": " .. tostring(r.err.message or r.err))
      elseif method == "textDocument/hover" then
        local t = hover_text(r.result)
        if t ~= "" then
          answer.hover = (answer.hover and answer.hover .. "\n\n" or "") .. t:sub(1, q.max_bytes or 20000)
        end
      elseif method == "textDocument/documentSymbol" then
        symbols(r.result, q.path, enc, answer.symbols, nil, max, dropped)
      else
        local res = r.result
        if type(res) == "table" and (res.uri or res.targetUri) then
          res = { res }
        end
        local into = (q.method == "hover") and answer.definitions or answer.locations
        for _, l in ipairs(res or {}) do
          if #into >= max then
            dropped[1] = dropped[1] + 1
          else
            local loc = location(l, enc)
            if loc then
              table.insert(into, loc)
            end
          end
        end
      end
    end
    left = left - 1
    if left == 0 then
      answer.dropped = dropped[1]
      finish(answer)
    end
  end
  for _, method in ipairs(want) do
    local cm = {}
    for _, c in ipairs(cs) do
      if method == want[1] or supports(c, method) then
        table.insert(cm, c)
      end
    end
    request_all(cm, b, method, params, reqs, function(results)
      one(method, results)
    end)
  end
  return { status = "started" }
end

--- Called by the host: answer q now ({ status = "done", answer }) or later
--- ({ status = "started" }, then flemma.editor_done(token, answer)).
function M.query(token, q)
  local op = ops[q.op]
  if not op then
    return { status = "done", answer = { error = "unknown question " .. tostring(q.op) } }
  end
  local ok, res = pcall(op, token, q)
  if not ok then
    if pending[token] then
      pending[token].cancel()
    end
    return { status = "done", answer = { error = tostring(res), internal = true } }
  end
  return res
end

--- Called by the host when it stops waiting (its bound, a cancelled call).
function M.cancel(token)
  local p = pending[token]
  if p then
    p.cancel()
  end
end

--- What the editor can answer now: lsp is true when a language server runs.
function M.caps()
  return { lsp = #clients() > 0 }
end

--- For tests: how many questions wait, how many hidden buffers exist.
function M._stats()
  local n, t = 0, 0
  for _ in pairs(pending) do
    n = n + 1
  end
  for _ in pairs(temp) do
    t = t + 1
  end
  return { pending = n, temp = t }
end

return M
