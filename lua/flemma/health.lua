-- :checkhealth flemma (works with 0.7's require("health") and 0.10's vim.health).
local P = require("flemma.protocol")
local host = require("flemma.host")
local state = require("flemma.state")
local M = {}

local h = vim.health or require("health")
local start = h.start or h.report_start
local ok = h.ok or h.report_ok
local warn = h.warn or h.report_warn
local err = h.error or h.report_error
local info = h.info or h.report_info

function M.check()
  start("flemma")
  local v = vim.version()
  local vs = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.7.2") == 1 then
    ok("Neovim " .. vs)
  else
    err("Neovim " .. vs .. " is too old: flemma needs 0.7.2 or newer")
  end

  local cfg = state.config()
  if #state.setup_errors == 0 then
    ok("setup: every option has a value it takes")
  end
  for _, e in ipairs(state.setup_errors) do
    warn("setup " .. e)
  end
  local argv, ferr = host.find(cfg)
  if not argv then
    err(ferr)
    return
  end
  ok("host binary: " .. argv[1])
  local res, rerr = host.request(P.health)
  if not res then
    err("host does not answer: " .. tostring(rerr) .. " (log: " .. host.log_file(cfg) .. ")")
    return
  end
  local want = require("flemma.version")
  if res.version == want then
    ok("host version " .. res.version .. " (matches the plugin)")
  else
    warn(string.format("host version %s, plugin expects %s: run :Flemma install", tostring(res.version), want))
  end
  info("host log: " .. host.log_file(cfg))
  for _, line in ipairs(res.lines or {}) do
    if line.level == "ok" then
      ok(line.text)
    elseif line.level == "warn" then
      warn(line.text)
    elseif line.level == "error" then
      err(line.text)
    else
      info(line.text)
    end
  end
end

return M
