-- The plugin's version, which the host must report in the handshake. It is
-- written once, in the file VERSION next to this module; the host embeds the
-- same file (version.go at the repository root), so the two cannot drift.
local function first_line(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local line = f:read("*l")
  f:close()
  line = line and vim.trim(line)
  return line ~= "" and line or nil
end

local source = debug.getinfo(1, "S").source
local version = source:sub(1, 1) == "@" and first_line(source:sub(2):gsub("[^/\\]*$", "") .. "VERSION") or nil
if not version then
  -- Loaded some other way (a bundled copy, a string chunk): the runtimepath's.
  for _, path in ipairs(vim.api.nvim_get_runtime_file("lua/flemma/VERSION", true)) do
    version = version or first_line(path)
  end
end
return version or "unknown"
