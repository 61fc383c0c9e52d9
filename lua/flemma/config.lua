-- The defaults table is the one source of truth for flemma's options; setup()
-- merges the user's table over it and validates the result. Pure: it
-- requires no other module (flemma.state keeps the resolved config).
local M = {}

---@class flemma.Config
-- The lists below are grouped by kind, several per line.
-- stylua: ignore
M.defaults = {
  provider = "anthropic", -- :Flemma switch changes it at runtime
  model = nil,
  parameters = {
    max_tokens = nil,
    temperature = nil,
    thinking = nil,
    cache_retention = nil,
    anthropic = {},
    openai = {},
    vertex = {},
  },
  -- What flemma takes a model for, over its built-in catalogue (provider/models.go), by model id or
  -- prefix: ["my-model"] = { max_output_tokens = 32000, context_window = 128000,
  -- thinking = "adaptive" | "budget" | "effort" | "none", input_price = 1, output_price = 4,
  -- cache_read_price = 0.1, cache_write_price = 1.25 } (prices in USD per million tokens).
  models = {},
  -- base_url per provider (proxies, gateways, local servers); replay = { file = "script.sse" }
  -- answers from a recorded script instead of a network (demos, tests). Any other name is a
  -- named provider (provider = "ollama", :Flemma switch ollama), e.g.
  --   ollama = { wire = "chat_completions", base_url = "http://localhost:11434/v1", model = "qwen3" }
  -- Keys of an entry (see provider_keys below): wire, base_url, model, api_key_env (a variable
  -- name, a list, or false for none), api_key_cmd (argv, no shell), api_key_cache (seconds),
  -- api_key_timeout (seconds), api_key_header, headers, extra_body, reasoning ("reasoning_content"
  -- or "none": how a chat_completions server gets its reasoning back; unset = what its host
  -- documents); project, location, file; copilot: github_url, github_api_url (GitHub Enterprise).
  providers = { anthropic = {}, openai = {}, vertex = {}, gemini = {}, copilot = {}, replay = {} },
  -- MCP servers whose tools the model may call, as mcp__<server>__<tool> (approve them with
  -- patterns: tools.auto_approve = { "mcp__github__*" }). Setup only: a .chat file can neither add
  -- nor start one. A server is a command spoken to over stdio, started with a scrubbed environment
  -- (sandbox.env_deny) plus its env, or the URL of a streamable HTTP server, e.g.
  --   github = { command = "github-mcp-server", args = { "stdio" }, env = { GITHUB_PERSONAL_ACCESS_TOKEN = "…" } },
  --   docs = { url = "https://example.com/mcp", headers = { Authorization = "Bearer …" } },
  -- Servers start at the first request that needs the tool list; :Flemma mcp lists them.
  mcp_servers = {},
  -- Sending a request. A request that fails before any of its answer arrives
  -- with 429, 529, a 5xx or an overload/rate-limit error in the stream is sent
  -- again after a wait (the server's retry-after, else retry_delay doubling
  -- each time, with jitter, at most retry_max_delay); <C-c> ends the wait.
  -- Seconds; a timeout of 0 = no limit.
  send = {
    retries = 4, -- 0 = never retry
    retry_delay = 2, -- the first wait
    retry_max_delay = 60, -- the longest wait; a longer retry-after is not waited for
    timeouts = {
      first_byte = 120, -- from sending the request to the first byte of the answer
      idle = 120, -- silence between two pieces of a streaming answer
      total = 600, -- one whole request
    },
    -- A send that would fill this share of the model's context window (when
    -- it is known) is held once and offers :Flemma compact; pressing again
    -- sends as it is. 0 = never offer.
    compact_threshold = 0.8,
    -- One budget per send for what it evaluates, checked before reading:
    -- exceeded, nothing is sent and a diagnostic says which.
    budget = {
      template_ms = 1000, -- all {{ }} of the send together
      template_bytes = 1048576, -- what they write together (1 MiB)
      references = 100, -- @./file references
      attachment_bytes = 33554432, -- the files attached, each counted once (32 MiB)
    },
  },
  host = {
    cmd = nil, -- default: <plugin>/bin/flemma-host, then flemma-host on $PATH
    log_file = nil, -- default: stdpath("state")/flemma/host.log (stdpath("data") on Neovim 0.7)
    -- Seconds an answer of the host may take before flemma says it may be
    -- hung and offers :Flemma host:restart. Keys never wait for it; what
    -- needs an answer (:checkhealth, a tool's registration, a Lua tool's
    -- context) waits at most this long.
    timeout = 10,
  },
  tools = {
    mode = "enabled", -- "enabled" | "parse_only" | "disabled"
    require_approval = true,
    auto_approve = { "$default" }, -- list | function(tool_name, input, ctx) | "module.path"
    auto_approve_sandboxed = true,
    -- Calls that were already in a file when it was opened (or were read or pasted into a buffer)
    -- are never approved by the policy: they ask until you approve them or :Flemma trust the file.
    -- true lets the policy decide them too, as if every file were trusted.
    auto_approve_file_calls = false,
    presets = {}, -- ["$name"] = { approve = {...}, deny = {...} }
    autopilot = { enabled = true, max_turns = 100 }, -- a boolean is shorthand for { enabled = b }
    max_concurrent = 2, -- 0 = unlimited
    -- The calls of one response that run; the later ones get an error result saying so (0 = no limit).
    max_calls_per_response = 32,
    default_timeout = 30, -- seconds: the "default" class of timeouts (timeouts.default wins when set)
    -- Time limits by class, in seconds: a tool's name, a tag (a class of tools: "filesystem",
    -- "shell", "mcp", your tools' tags) or "default". A tool's name beats its tags, its tags its own
    -- timeout (a definition's), and that the default. bash takes its limit as its default and as
    -- the cap of the timeout the model asks for.
    timeouts = { bash = 300 },
    cursor_after_result = "result", -- "result" | "stay" | "next"
    modules = {},
    truncate = { max_lines = 2000, max_bytes = 51200 },
    bash = { shell = "bash", env = {} },
    -- The fetch tool: an HTTP GET from the host (not bash's sandbox), the page as Markdown. Off
    -- until enabled; its calls ask unless approved by name or host: "fetch(docs.python.org)",
    -- "fetch(*.golang.org)" in auto_approve. Private, loopback and link-local addresses are
    -- refused unless allow_private.
    fetch = { enabled = false, allow_private = false, max_bytes = 2097152, timeout = 30, max_redirects = 5 },
    -- The provider's own web tools, run on its side and billed by it: Anthropic's web_search and
    -- web_fetch, OpenAI's web_search, Gemini's Google Search grounding. The searches and the
    -- sources found and cited are written into the answer. A buffer may turn them off
    -- (flemma.opt.tools.web_search = false); only a trusted one may turn them on.
    web_search = { enabled = false, max_uses = 5 },
    web_fetch = { enabled = false, max_uses = 5 },
    -- The editor's tools (diagnostics, lsp, buffers) ask Neovim; each
    -- question is bounded in time and size.
    editor = {
      timeout = 10, -- seconds an lsp or diagnostics question may take
      max_results = 100, -- locations, symbols or diagnostics per answer
      -- write and edit results carry the language servers' errors and
      -- warnings for the new text, waiting at most diagnostics_wait seconds
      diagnostics_after_edit = true,
      diagnostics_wait = 3,
    },
  },
  sandbox = {
    enabled = true,
    backend = "auto", -- "auto" | "bwrap" | "none"
    -- Roots write/edit (and bash under bubblewrap) may change. "/" and $HOME
    -- themselves, and their ancestors, are never roots.
    writable = { "urn:flemma:cwd", "urn:flemma:buffer:path", "${TMPDIR:-/tmp}" },
    -- Roots besides the writable ones where read, grep, find and ls run by policy (same forms as
    -- writable). A read anywhere else asks first, naming the path; { "/" } reads everywhere by
    -- policy, as flemma did before this rule. deny_read is refused everywhere.
    readable = {},
    -- Never read by any tool, and hidden from bash under bubblewrap. "!glob"
    -- keeps a base name readable (templates of .env files).
    deny_read = {
      -- keys and certificates, anywhere
      "**/.ssh/**", "**/.gnupg/**",
      "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
      "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.jks", "**/*.keystore",
      "!**/cacert.pem",
      -- environment files, anywhere
      "**/.env", "**/.env.*", "**/.envrc",
      "!**/.env.example", "!**/.env.sample", "!**/.env.template", "!**/.env.dist", "!**/.env.defaults",
      -- credential stores in the home directory
      "~/.aws/**", "~/.azure/**", "~/.config/gcloud/**", "~/.kube/**", "~/.docker/**",
      "~/.config/gh/**", "~/.config/hub", "~/.config/glab-cli/**", "~/.config/git/credentials",
      "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.yarnrc.yml", "~/.pypirc", "~/.pgpass", "~/.my.cnf",
      "~/.cargo/credentials*", "~/.gem/credentials", "~/.vault-token", "~/.terraform.d/credentials*",
      "~/.password-store/**", "~/.local/share/keyrings/**", "~/.config/op/**", "~/.config/rclone/**",
      "~/.config/github-copilot/**", "~/.claude/.credentials.json", "~/.codex/auth.json",
      -- shell histories
      "~/.*_history", "~/.local/share/fish/fish_history",
    },
    -- bash gets no network unless you opt in.
    network = false,
    -- No unix socket can be created by bash (a seccomp filter), so none of
    -- yours is reachable, wherever it lies. true allows them, for test
    -- suites that start a unix-socket server of their own; then only the
    -- sockets flemma finds are hidden.
    unix_sockets = false,
    -- Limits of each command (bash): processes at once, memory in MiB or
    -- "N%" of this machine's (each process, and the tree together), the
    -- largest file in MiB, open files, seconds of processor time per
    -- process. 0 = no limit.
    limits = { processes = 1024, memory = "50%", file_size = 4096, open_files = 8192, cpu = 600 },
    -- Variables never passed to commands (and redacted from output). The
    -- sockets of Neovim, ssh-agent, D-Bus, X11, tmux … are always dropped.
    env_deny = {
      "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_CREDS",
      "*API_KEY*", "*APIKEY*", "*PRIVATE_KEY*", "*_KEY", "*_KEY_*", "*_PAT", "*_PASS", "*_PWD",
      "*_AUTH", "*_COOKIE", "*_SALT", "*WEBHOOK*", "*_DSN",
      "*DATABASE_URL*", "*_DB_URL", "*_DB_URI", "*CONNECTION_STRING*", "*_CONN_STR*",
      "*MONGO*_URI*", "*MONGO*_URL*", "*REDIS*_URL*", "*POSTGRES*_URL*", "*MYSQL*_URL*", "*AMQP*_URL*", "*RABBITMQ*_URL*",
      "NPM_CONFIG__AUTH*", "NPM_CONFIG_//*", "SSH_AUTH_SOCK", "BW_SESSION", "OP_SESSION_*", "KRB5CCNAME",
      "AWS_*", "ANTHROPIC_*", "OPENAI_*",
    },
  },
  -- Buffer-local keys of chat buffers; false (or "") leaves a key unmapped.
  keymaps = {
    send = "<C-]>", tool_execute = "<M-CR>", cancel = "<C-c>",
    -- every call of the message under the cursor that waits for a decision (unmapped by default)
    tool_approve_all = false, tool_reject_all = false,
    tool_diff = "<CR>", -- on a pending write/edit: its diff in a new tab (elsewhere <CR> stays <CR>)
    next_message = "]m", prev_message = "[m", -- motions (normal, visual, operator-pending)
    next_tool = "]t", prev_tool = "[t", -- Tool Use and Tool Result blocks
    message_inner = "im", message_around = "am", -- text objects (visual, operator-pending)
    tool_inner = "iT", tool_around = "aT", -- (it/at stay Vim's tag objects: <thinking>)
  },
  highlights = { tool_preview = "Comment" },
  chat = {
    template = "@You:\n", -- what a new, empty chat buffer starts with ("" : nothing)
    markdown = "auto", -- "auto" (treesitter where Neovim has the parser, else syntax) | "treesitter" | "syntax" | "none"
    conceal_fences = false, -- hide the backticks of code fences (conceallevel=2 in chat windows)
    rulers = true, -- a line after each @You: / @Assistant: / @System: (highlight FlemmaRuler)
  },
  fold = {
    enabled = true, -- 'foldmethod' expr in chat windows: messages, thinking, tool blocks
    thinking = true, -- thinking blocks start folded
    result_lines = 10, -- tool results longer than this many lines start folded (0: none)
    input_chars = 500, -- tool inputs longer than this many characters start folded (0: none)
  },
}

--- A table whose keys are exactly 1..n (an empty table counts).
function M.is_list(t)
  if type(t) ~= "table" then
    return false
  end
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n == #t
end
local is_list = M.is_list

-- Keys whose value is a list: a user list replaces the default instead of
-- being merged into it index by index.
local list_keys = {
  ["tools.auto_approve"] = true,
  ["tools.modules"] = true,
  ["sandbox.writable"] = true,
  ["sandbox.readable"] = true,
  ["sandbox.deny_read"] = true,
  ["sandbox.env_deny"] = true,
}

local function merge(base, over, path)
  local out = vim.deepcopy(base)
  for k, v in pairs(over) do
    local key = path == "" and k or (path .. "." .. k)
    if type(v) == "table" and type(out[k]) == "table" and not list_keys[key] and not is_list(v) then
      out[k] = merge(out[k], v, key)
    else
      out[k] = v
    end
  end
  return out
end

local checks = {
  ["provider"] = { "string" },
  ["tools.mode"] = { "string", one_of = { "enabled", "parse_only", "disabled" } },
  ["tools.require_approval"] = { "boolean" },
  ["tools.auto_approve"] = { "table", "function", "string" },
  ["tools.auto_approve_sandboxed"] = { "boolean" },
  ["tools.auto_approve_file_calls"] = { "boolean" },
  ["tools.presets"] = { "table" },
  ["tools.autopilot"] = { "table", "boolean" },
  ["tools.max_concurrent"] = { "number" },
  ["tools.max_calls_per_response"] = { "number" },
  ["tools.default_timeout"] = { "number" },
  ["tools.cursor_after_result"] = { "string", one_of = { "result", "stay", "next" } },
  ["tools.modules"] = { "table" },
  ["tools.web_search.enabled"] = { "boolean" },
  ["tools.web_search.max_uses"] = { "number" },
  ["tools.web_fetch.enabled"] = { "boolean" },
  ["tools.web_fetch.max_uses"] = { "number" },
  ["tools.fetch.enabled"] = { "boolean" },
  ["tools.fetch.allow_private"] = { "boolean" },
  ["tools.fetch.max_bytes"] = { "number" },
  ["tools.fetch.timeout"] = { "number" },
  ["tools.fetch.max_redirects"] = { "number" },
  ["tools.editor.timeout"] = { "number" },
  ["tools.editor.max_results"] = { "number" },
  ["tools.editor.diagnostics_after_edit"] = { "boolean" },
  ["tools.editor.diagnostics_wait"] = { "number" },
  ["sandbox.enabled"] = { "boolean" },
  ["sandbox.backend"] = { "string", one_of = { "auto", "bwrap", "none" } },
  ["sandbox.network"] = { "boolean" },
  ["sandbox.unix_sockets"] = { "boolean" },
  ["sandbox.limits.memory"] = { "number", "string" },
  ["host.cmd"] = { "string", "table", "nil" },
  ["host.log_file"] = { "string", "nil" },
  ["host.timeout"] = { "number" },
  ["send.compact_threshold"] = { "number" },
  ["send.budget.template_ms"] = { "number" },
  ["send.budget.template_bytes"] = { "number" },
  ["send.budget.references"] = { "number" },
  ["send.budget.attachment_bytes"] = { "number" },
  ["highlights.tool_preview"] = { "string", "table" },
  ["model"] = { "string", "nil" },
  ["keymaps.send"] = { "string", "boolean" }, -- false: no key
  ["keymaps.tool_execute"] = { "string", "boolean" },
  ["keymaps.cancel"] = { "string", "boolean" },
  ["keymaps.tool_diff"] = { "string", "boolean" },
  ["keymaps.tool_approve_all"] = { "string", "boolean" },
  ["keymaps.tool_reject_all"] = { "string", "boolean" },
  ["keymaps.next_message"] = { "string", "boolean" },
  ["keymaps.prev_message"] = { "string", "boolean" },
  ["keymaps.next_tool"] = { "string", "boolean" },
  ["keymaps.prev_tool"] = { "string", "boolean" },
  ["keymaps.message_inner"] = { "string", "boolean" },
  ["keymaps.message_around"] = { "string", "boolean" },
  ["keymaps.tool_inner"] = { "string", "boolean" },
  ["keymaps.tool_around"] = { "string", "boolean" },
  ["chat.template"] = { "string", "boolean" }, -- false: no template
  ["chat.markdown"] = { "string", one_of = { "auto", "treesitter", "syntax", "none" } },
  ["chat.conceal_fences"] = { "boolean" },
  ["fold.enabled"] = { "boolean" },
  ["fold.thinking"] = { "boolean" },
  ["fold.result_lines"] = { "number" },
  ["fold.input_chars"] = { "number" },
  ["parameters.max_tokens"] = { "number", "nil" },
  ["parameters.temperature"] = { "number", "nil" },
  ["parameters.thinking"] = { "string", "number", "boolean", "nil" },
  ["parameters.cache_retention"] = { "string", "nil", one_of = { "short", "long", "none" } },
}

-- The keys of a providers.<name> entry and their types.
local provider_keys = {
  base_url = { "string" },
  file = { "string" },
  project = { "string" },
  location = { "string" },
  wire = { "string", one_of = { "chat_completions", "openai", "responses", "anthropic", "vertex", "gemini" } },
  model = { "string" },
  api_key_env = { "string", "table", "boolean" },
  api_key_cmd = { "table" },
  api_key_cache = { "number" },
  api_key_timeout = { "number" },
  api_key_header = { "string" },
  headers = { "table" },
  extra_body = { "table" },
  reasoning = { "string", one_of = { "reasoning_content", "none" } },
  github_url = { "string" },
  github_api_url = { "string" },
}
M.provider_keys = provider_keys

-- The keys of an mcp_servers.<name> entry and their types.
local mcp_keys = {
  command = "string",
  args = "list",
  env = "map",
  url = "string",
  headers = "map",
}

local function set(t, path, value)
  local parts = vim.split(path, ".", { plain = true })
  for i = 1, #parts - 1 do
    t = t[parts[i]]
  end
  t[parts[#parts]] = value
end

local function get(t, path)
  for part in path:gmatch("[^.]+") do
    if type(t) ~= "table" then
      return nil
    end
    t = t[part]
  end
  return t
end

-- Options whose default is nil (so they are not keys of M.defaults): the
-- checks that allow nil.
local nil_defaults = {}
for path, spec in pairs(checks) do
  for _, ty in ipairs(spec) do
    if ty == "nil" then
      nil_defaults[path] = true
    end
  end
end

-- Tables whose keys are the user's own: names of presets, providers,
-- provider parameters, environment variables.
local open_maps = {
  ["tools.presets"] = true,
  ["tools.bash.env"] = true,
  ["tools.timeouts"] = true,
  ["parameters.anthropic"] = true,
  ["parameters.openai"] = true,
  ["parameters.vertex"] = true,
  ["providers"] = true,
  ["models"] = true,
  ["mcp_servers"] = true,
}

-- The fields of one models = { [id] = {…} } entry and their types.
local model_fields = {
  max_output_tokens = "number",
  context_window = "number",
  thinking = "string",
  input_price = "number",
  output_price = "number",
  cache_read_price = "number",
  cache_write_price = "number",
}
local thinking_forms = { "adaptive", "budget", "effort", "none" }

local function distance(a, b)
  if math.abs(#a - #b) > 2 then
    return 3
  end
  local prev = {}
  for j = 0, #b do
    prev[j] = j
  end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

--- The name among names (a list, or the keys of a table) closest to k, when
--- one is within two edits (a typo such as auto_aprove); nil otherwise.
local function closest(k, names)
  local best, best_d = nil, 3
  local list = is_list(names) and names or vim.tbl_keys(names)
  for _, c in ipairs(list) do
    local d = distance(tostring(k), tostring(c))
    if d < best_d then
      best, best_d = c, d
    end
  end
  return best
end

--- v is a list of strings (an argv: no shell).
local function string_list(v)
  for i, x in pairs(v) do
    if type(i) ~= "number" or type(x) ~= "string" then
      return false
    end
  end
  return true
end

--- v maps names to strings (headers, environment variables).
local function string_map(v)
  for k, x in pairs(v) do
    if type(k) ~= "string" or type(x) ~= "string" then
      return false
    end
  end
  return true
end

--- Warnings for keys of user that flemma does not know, with the closest
--- known key when one is near (a typo such as auto_aprove).
local function unknown_keys(user, defaults, path, out)
  if type(user) ~= "table" or is_list(user) or open_maps[path] or list_keys[path] then
    return out
  end
  for k, v in pairs(user) do
    local key = path == "" and tostring(k) or (path .. "." .. tostring(k))
    local known = type(defaults) == "table" and defaults[k] ~= nil or nil_defaults[key]
    if not known then
      local candidates = {}
      for dk in pairs(type(defaults) == "table" and defaults or {}) do
        candidates[#candidates + 1] = tostring(dk)
      end
      for nk in pairs(nil_defaults) do
        local parent, name = nk:match("^(.-)%.?([^.]+)$")
        if parent == path then
          candidates[#candidates + 1] = name
        end
      end
      local best = closest(k, candidates)
      if path == "tools" and type(v) == "table" and not best then
        -- tools.<name> = { … } is a tool's own configuration (ctx:get_config()).
        goto continue
      end
      local hint = best and string.format(" (did you mean %s?)", path == "" and best or (path .. "." .. best)) or ""
      table.insert(out, string.format("unknown option %s%s: it is ignored", key, hint))
    elseif type(defaults) == "table" then
      unknown_keys(v, defaults[k], key, out)
    end
    ::continue::
  end
  return out
end

-- providers.<name>: every key known and of its type; a wrong value is
-- dropped with an error, an unknown key warned about (did you mean).
local function check_providers(cfg, errors, warnings)
  if type(cfg.providers) ~= "table" then
    table.insert(errors, "providers: expected table, got " .. type(cfg.providers) .. " (the default is used)")
    cfg.providers = vim.deepcopy(M.defaults.providers)
    return
  end
  for name, entry in pairs(cfg.providers) do
    local base = "providers." .. tostring(name)
    if type(entry) ~= "table" then
      table.insert(errors, string.format("%s: expected table, got %s (ignored)", base, type(entry)))
      cfg.providers[name] = nil
    else
      for k, v in pairs(entry) do
        local key = base .. "." .. tostring(k)
        local spec = provider_keys[k]
        if not spec then
          local best = closest(k, provider_keys)
          local hint = best and string.format(" (did you mean %s.%s?)", base, best) or ""
          table.insert(warnings, string.format("unknown option %s%s: it is ignored", key, hint))
          entry[k] = nil
        else
          local ok = vim.tbl_contains(spec, type(v))
          local why = string.format("expected %s, got %s", table.concat(spec, " or "), type(v))
          if ok and spec.one_of and not vim.tbl_contains(spec.one_of, v) then
            ok, why = false, string.format("expected one of %s, got %q", table.concat(spec.one_of, ", "), tostring(v))
          elseif ok and k == "api_key_env" and v == true then
            ok, why = false, "expected a variable name, a list of names, or false (no key)"
          elseif ok and (k == "api_key_cmd" or k == "api_key_env") and type(v) == "table" and not string_list(v) then
            ok, why = false, "expected a list of strings (argv: no shell)"
          elseif ok and k == "headers" and not string_map(v) then
            ok, why = false, "expected a table of header names to string values"
          elseif ok and k == "extra_body" and next(v) ~= nil and is_list(v) then
            ok, why = false, "expected a table of body fields, got a list"
          end
          if not ok then
            table.insert(errors, string.format("%s: %s (ignored)", key, why))
            entry[k] = nil
          end
        end
      end
    end
  end
end

-- models = { [id] = { … } }: each entry's fields; a wrong one is reported and
-- dropped, the rest of the entry applies.
local function check_models(cfg, errors, warnings)
  if type(cfg.models) == "table" then
    for id, entry in pairs(cfg.models) do
      local key = "models[" .. string.format("%q", tostring(id)) .. "]"
      if type(id) ~= "string" or type(entry) ~= "table" then
        table.insert(errors, key .. ": expected a table of model settings (the entry is ignored)")
        cfg.models[id] = nil
      else
        for field, v in pairs(entry) do
          local want = model_fields[field]
          if not want then
            local best = closest(field, model_fields)
            table.insert(
              warnings,
              string.format(
                "unknown option %s.%s%s: it is ignored",
                key,
                tostring(field),
                best and (" (did you mean " .. best .. "?)") or ""
              )
            )
            entry[field] = nil
          elseif type(v) ~= want or (field == "thinking" and not vim.tbl_contains(thinking_forms, v)) then
            local what = field == "thinking" and ("one of " .. table.concat(thinking_forms, ", ")) or want
            table.insert(
              errors,
              string.format("%s.%s: expected %s, got %s (it is ignored)", key, field, what, vim.inspect(v))
            )
            entry[field] = nil
          end
        end
      end
    end
  end
end

-- mcp_servers = { [name] = { command, args, env } | { url, headers } }: a
-- wrong entry is reported and dropped (the other servers still start).
local function check_mcp_servers(cfg, errors, warnings)
  if type(cfg.mcp_servers) ~= "table" then
    return -- reported by the type check of the default
  end
  for name, entry in pairs(cfg.mcp_servers) do
    local key = "mcp_servers." .. tostring(name)
    local why
    if
      type(name) ~= "string"
      or not name:match("^[a-z0-9][a-z0-9_]*$")
      or name:find("__", 1, true)
      or name:sub(-1) == "_"
    then
      why = "a server name is lower-case letters and digits, words joined by one _ (its tools are mcp__<name>__<tool>)"
    elseif type(entry) ~= "table" then
      why = "expected a table { command = …, args = {…}, env = {…} } or { url = …, headers = {…} }"
    else
      for k, v in pairs(entry) do
        local want = mcp_keys[k]
        if not want then
          table.insert(warnings, string.format("unknown option %s.%s: it is ignored", key, tostring(k)))
          entry[k] = nil
        elseif want == "string" and type(v) ~= "string" then
          why = string.format("%s: expected string, got %s", k, type(v))
        elseif want == "list" and type(v) ~= "table" then
          why = string.format("%s: expected a list of strings, got %s", k, type(v))
        elseif want == "list" and not string_list(v) then
          why = k .. ": expected a list of strings (argv: no shell)"
        elseif want == "map" and type(v) ~= "table" then
          why = string.format("%s: expected a table of names to strings, got %s", k, type(v))
        elseif want == "map" and not string_map(v) then
          why = k .. ": expected a table of names to string values"
        end
      end
      if not why and (entry.command == nil) == (entry.url == nil) then
        why = "set command (a stdio server) or url (a streamable HTTP server), one of the two"
      end
    end
    if why then
      table.insert(errors, string.format("%s: %s (the server is ignored)", key, why))
      cfg.mcp_servers[name] = nil
    end
  end
end

-- sandbox.limits: whole numbers, 0 or more; memory also "N%" (1 to 100). A
-- wrong value is reported and the default is used.
local function check_limits(cfg, errors)
  local l = type(cfg.sandbox) == "table" and cfg.sandbox.limits
  if type(l) ~= "table" then
    return
  end
  for k, v in pairs(l) do
    local ok = type(v) == "number" and v >= 0 and v == math.floor(v)
    if k == "memory" and type(v) == "string" then
      local pct = tonumber(v:match("^(%d+)%%$"))
      ok = pct ~= nil and pct >= 1 and pct <= 100
    end
    if not ok and M.defaults.sandbox.limits[k] ~= nil then
      local want = k == "memory" and 'a whole number of MiB (0 = none) or "N%" of the memory'
        or "a whole number, 0 or more (0 = none)"
      table.insert(
        errors,
        string.format("sandbox.limits.%s: expected %s, got %s (the default is used)", k, want, vim.inspect(v))
      )
      l[k] = M.defaults.sandbox.limits[k]
    end
  end
end

--- Merge user options over the defaults and validate them.
---@return table config, string[] errors, string[] warnings
function M.resolve(user)
  local errors = {}
  if user ~= nil and type(user) ~= "table" then
    return vim.deepcopy(M.defaults), { "setup() expects a table, got " .. type(user) }, {}
  end
  local warnings = unknown_keys(user or {}, M.defaults, "", {})
  table.sort(warnings)
  local cfg = merge(M.defaults, user or {}, "")
  -- Every other key has the type of its default.
  local function same_type(def, path)
    for k, d in pairs(def) do
      local key = path == "" and k or (path .. "." .. k)
      if not checks[key] and not open_maps[key] then
        local v = get(cfg, key)
        if type(d) == "table" and not is_list(d) and type(v) == "table" then
          same_type(d, key)
        elseif v ~= nil and type(v) ~= type(d) then
          table.insert(errors, string.format("%s: expected %s, got %s (the default is used)", key, type(d), type(v)))
          set(cfg, key, vim.deepcopy(d))
        end
      end
    end
  end
  same_type(M.defaults, "")
  for path, spec in pairs(checks) do
    local v = get(cfg, path)
    local ok = false
    for _, ty in ipairs(spec) do
      if type(v) == ty then
        ok = true
      end
    end
    if not ok then
      table.insert(errors, string.format("%s: expected %s, got %s", path, table.concat(spec, " or "), type(v)))
    elseif spec.one_of and v ~= nil and not vim.tbl_contains(spec.one_of, v) then
      table.insert(
        errors,
        string.format("%s: expected one of %s, got %q", path, table.concat(spec.one_of, ", "), tostring(v))
      )
    end
  end
  check_providers(cfg, errors, warnings)
  check_models(cfg, errors, warnings)
  check_mcp_servers(cfg, errors, warnings)
  check_limits(cfg, errors)
  if type(cfg.tools.timeouts) == "table" then
    for k, v in pairs(cfg.tools.timeouts) do
      if type(k) ~= "string" or type(v) ~= "number" or v <= 0 then
        table.insert(
          errors,
          string.format(
            "tools.timeouts.%s: expected a number of seconds > 0, got %s (ignored)",
            tostring(k),
            vim.inspect(v)
          )
        )
        cfg.tools.timeouts[k] = nil
      end
    end
  end
  if type(cfg.tools.autopilot) == "boolean" then
    cfg.tools.autopilot = { enabled = cfg.tools.autopilot, max_turns = M.defaults.tools.autopilot.max_turns }
  end
  table.sort(errors)
  return cfg, errors, warnings
end

--- flemma's state directory: stdpath("state")/flemma, or stdpath("data")/flemma
--- on Neovim versions without a "state" stdpath (0.7).
function M.state_dir()
  local ok, dir = pcall(vim.fn.stdpath, "state")
  if not ok or type(dir) ~= "string" or dir == "" then
    dir = vim.fn.stdpath("data")
  end
  return dir .. "/flemma"
end

--- Where Neovim keeps what it knows of the user's files and sessions:
--- its state folder (shada, undo, swap, logs; 0.8 and later), its data
--- folder (plugins' data; 0.7's shada, undo, swap), the folders
--- 'undodir', 'directory' and 'backupdir' name (not "." and other relative
--- ones: those are the edited file's own folder), the shada file's folder,
--- and flemma's log file. Tools never read them and sandboxed commands
--- never see them, like flemma's state folder.
function M.private_paths(cfg)
  local out, seen = {}, {}
  local function add(p)
    if type(p) ~= "string" or p == "" then
      return
    end
    p = vim.fn.fnamemodify(vim.fn.expand(p), ":p"):gsub("/+$", "")
    if p ~= "" and p:sub(1, 1) == "/" and not seen[p] then
      seen[p] = true
      table.insert(out, p)
    end
  end
  local ok, state = pcall(vim.fn.stdpath, "state")
  if ok and type(state) == "string" then
    add(state)
  end
  -- Plugins keep their data here: sessions, histories, other assistants'
  -- conversations (and Neovim 0.7 its shada, undo and swap files).
  add(vim.fn.stdpath("data"))
  for _, opt in ipairs({ "undodir", "directory", "backupdir" }) do
    for _, d in ipairs(vim.split(vim.o[opt] or "", ",", { plain = true })) do
      d = d:gsub("/+$", "")
      if d:sub(1, 1) == "/" or d:sub(1, 1) == "~" or d:sub(1, 1) == "$" then
        add(d)
      end
    end
  end
  local shada = vim.o.shadafile
  if shada == "" then
    add(vim.fn.stdpath("data") .. "/shada")
  elseif shada ~= "NONE" then
    add(vim.fn.fnamemodify(vim.fn.expand(shada), ":h"))
  end
  if cfg and cfg.host and type(cfg.host.log_file) == "string" then
    add(cfg.host.log_file)
  end
  return out
end

--- The part of the config the host needs, in a shape msgpack can carry:
--- functions are replaced by a marker (the host calls them back in Neovim).
function M.for_host(cfg)
  local function strip(v)
    if type(v) == "function" then
      return { __lua_function = true }
    elseif type(v) == "table" then
      local out = {}
      for k, x in pairs(v) do
        out[k] = strip(x)
      end
      if next(out) == nil and not is_list(v) then
        return vim.empty_dict()
      end
      return out
    end
    return v
  end
  return strip({
    paths = {
      state = M.state_dir(),
      config = vim.fn.stdpath("config"),
      data = vim.fn.stdpath("data") .. "/flemma",
      private = M.private_paths(cfg),
    },
    provider = cfg.provider,
    model = cfg.model,
    models = cfg.models,
    parameters = cfg.parameters,
    providers = cfg.providers,
    mcp_servers = cfg.mcp_servers,
    send = cfg.send,
    tools = cfg.tools,
    sandbox = cfg.sandbox,
  })
end

return M
