-- The host's methods: every name the plugin calls (cycle/protocol.go in the
-- host declares the same; a test checks that they agree). Replies are
-- tables: a user's action answers { phase, message?, level?, text? }, the
-- others as cycle/protocol.go describes.
return {
  version = "flemma.version",
  ping = "flemma.ping",
  setup = "flemma.setup", -- one argument: the configuration as JSON
  health = "flemma.health",
  async = "flemma.async", -- notification (id, method, args); answered by flemma.host._reply
  cycle = "flemma.cycle",
  send = "flemma.send",
  compact = "flemma.compact", -- async (bufnr): summarize the conversation into a summary block
  estimate = "flemma.estimate", -- async (bufnr): { tokens, window, provider, model, threshold, summary_line?, omitted?, whole_tokens? }
  execute_at = "flemma.execute_at",
  set_status = "flemma.set_status",
  set_result = "flemma.set_result",
  cancel = "flemma.cancel",
  cancel_at = "flemma.cancel_at",
  resume = "flemma.resume",
  discard = "flemma.discard",
  undo = "flemma.undo",
  attach_allow = "flemma.attach_allow", -- (bufnr): the user allows the files the last send asked about
  diff = "flemma.diff", -- { id, tool, path, exists, old, new } of the write/edit under the cursor
  review = "flemma.review", -- (bufnr, id, lines): the reviewed version, approved by the user
  set_status_id = "flemma.set_status_id",
  tool_list = "flemma.tool_list",
  tools = "flemma.tools",
  mcp = "flemma.mcp",
  status = "flemma.status",
  journal_log = "flemma.journal_log",
  sandbox_status = "flemma.sandbox_status",
  switch = "flemma.switch",
  models = "flemma.models", -- { providers, models = { [provider] = { id… } }, listed = { [provider] = bool } }: :Flemma switch
  discover = "flemma.discover", -- async (provider): ask its server for its models; FlemmaModels brings them
  login = "flemma.login", -- async (provider): a sign-in; the reply carries url and code
  autopilot = "flemma.autopilot",
  sandbox_writable = "flemma.sandbox_writable",
  sandbox_wrap = "flemma.sandbox_wrap",
  truncate = "flemma.truncate",
  format_size = "flemma.format_size",
  forget = "flemma.forget",
  refresh = "flemma.refresh",
  define_tools = "flemma.define_tools", -- one argument: the definitions as JSON
  define_chains = "flemma.define_chains", -- one argument: the tool chains as JSON
  approval_register = "flemma.approval_register",
  approval_unregister = "flemma.approval_unregister",
  approval_list = "flemma.approval_list",
  tool_done = "flemma.tool_done",
  editor_done = "flemma.editor_done", -- notification (token, answer): lua/flemma/editor.lua
  sources_pending = "flemma.sources_pending", -- (n): async tool sources still resolving; steps wait for 0
  set_status_all = "flemma.set_status_all", -- (bufnr, line, status, message): every waiting call of the message
  allow_always = "flemma.allow_always", -- (bufnr, line): :Flemma tool:allow-always on the call under the cursor
}
