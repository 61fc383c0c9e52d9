-- The size of the next send against the model's context window: asked of
-- the host (flemma.estimate: about 4 bytes of text a token, an image about
-- 1,600) on :Flemma usage:estimate and after each response, never while
-- typing; the statusline component only reads what was asked last.
local P = require("flemma.protocol")
local state = require("flemma.state")
local M = {}

--- "62k", "1.2k", "1.1M": a token count, short.
function M.short(n)
  n = tonumber(n) or 0
  if n >= 1000000 then
    return string.format("%.1fM", n / 1000000)
  elseif n >= 10000 then
    return string.format("%dk", math.floor(n / 1000 + 0.5))
  elseif n >= 1000 then
    return string.format("%.1fk", n / 1000)
  end
  return tostring(math.floor(n))
end

local function window_of(e)
  local w = tonumber(e.window) or 0
  return w > 0 and w or nil
end

--- What :Flemma usage:estimate says of an estimate (the host's reply).
function M.describe(e)
  local tokens = tonumber(e.tokens) or 0
  local model = type(e.model) == "string" and e.model ~= "" and e.model or tostring(e.provider or "?")
  local w = window_of(e)
  if not w then
    return string.format(
      '≈ %s tokens for %s, whose context window flemma does not know (models = { ["%s"] = { context_window = … } } in setup() sets it). An estimate: about 4 bytes of text a token.',
      M.short(tokens),
      model,
      model
    )
  end
  local msg = string.format(
    "≈ %s tokens, %d%% of the %s window of %s (an estimate: about 4 bytes of text a token).",
    M.short(tokens),
    math.floor(tokens * 100 / w),
    M.short(w),
    model
  )
  if tokens >= w then
    msg = msg
      .. string.format(
        " About %s over the window: :Flemma compact summarizes the conversation, or delete turns, or :Flemma switch to a model with a larger window.",
        M.short(tokens - w)
      )
  end
  return msg
end

--- Ask the host for the buffer's estimate without waiting; keep it for
--- the statusline component and call then_(estimate) (nil on an error,
--- then_(nil, err)).
function M.refresh(bufnr, then_)
  require("flemma.host").request_async(P.estimate, { bufnr }, function(res, err)
    if type(res) == "table" and res.tokens then
      if vim.api.nvim_buf_is_valid(bufnr) then
        state.buffer(bufnr).estimate = res
        require("flemma.buf").redraw_status()
      end
      if then_ then
        then_(res)
      end
    elseif then_ then
      then_(nil, err)
    end
  end)
end

--- A statusline component: "≈62k/200k 31%" — the estimated size of the
--- buffer's next send against its model's window, as last asked (after a
--- response, or :Flemma usage:estimate); "" before that and outside chat
--- buffers. It reads flemma.state only: cheap on every redraw.
function M.component(bufnr)
  bufnr = (type(bufnr) == "number" and bufnr ~= 0) and bufnr or vim.api.nvim_get_current_buf()
  local b = state.buffers[bufnr]
  local e = b and b.estimate
  if not e or not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].filetype ~= "chat" then
    return ""
  end
  local w = window_of(e)
  if not w then
    return "≈" .. M.short(e.tokens)
  end
  return string.format("≈%s/%s %d%%", M.short(e.tokens), M.short(w), math.floor((tonumber(e.tokens) or 0) * 100 / w))
end

return M
