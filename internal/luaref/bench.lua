-- Loads the Lua Flemma's parser from the folder REF (first argument) and
-- the lines of the .chat file CHAT (second), parses them once, warms the
-- parser up, and defines _G.flemma_luaref_time(n): the mean time of one
-- parse_lines over n, in nanoseconds, timed with vim.loop.hrtime.
local ref, chat = ...
package.path = ref .. "/lua/?.lua;" .. ref .. "/lua/?/init.lua;" .. package.path
-- Required at load but not used by parse_lines (the buffer cache; the
-- frontmatter operators, only with a buffer number).
package.preload["flemma.state"] = function()
  return {}
end
package.preload["flemma.config"] = function()
  return {}
end
local parser = require("flemma.parser")
local lines = vim.fn.readfile(chat)
local hrtime = vim.loop.hrtime

function _G.flemma_luaref_time(n)
  local s = hrtime()
  for _ = 1, n do
    parser.parse_lines(lines)
  end
  return (hrtime() - s) / n
end

local doc = parser.parse_lines(lines)
local uses, results = 0, 0
for _, m in ipairs(doc.messages) do
  for _, s in ipairs(m.segments) do
    if s.kind == "tool_use" then
      uses = uses + 1
    elseif s.kind == "tool_result" then
      results = results + 1
    end
  end
end

-- Warm up: the JIT compiles the hot loops.
local t0 = hrtime()
while hrtime() - t0 < 300e6 do
  parser.parse_lines(lines)
end

return {
  messages = #doc.messages,
  tool_uses = uses,
  tool_results = results,
  errors = #doc.errors,
  jit = (jit and jit.version or "none") .. (jit and jit.status() and " on" or " off"),
}
