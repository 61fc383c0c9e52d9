-- The plugin's build step: installs the host (bin/flemma-host) as
-- lua/flemma/install.lua says — the release's binary of this version and
-- platform, checksum verified, else `go build`. lazy.nvim runs this file
-- after installing or updating the plugin; other managers run
-- `:Flemma install`, which does the same.
local dir = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local ok, msg = dofile(dir .. "/lua/flemma/install.lua").run()
if not ok then
  error(msg, 0)
end
print(msg)
