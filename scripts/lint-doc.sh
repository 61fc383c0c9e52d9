#!/usr/bin/env bash
# lint-doc.sh — doc/flemma.txt, with the newest provisioned Neovim:
# :helptags accepts it (no duplicate tag), every |link| names a tag of the
# file or of Neovim's own help, and every option of the defaults
# (lua/flemma/schema.lua, through flemma.config) is documented (its dotted path appears in the file), and so is
# every highlight group plugin/flemma.lua links.
set -euo pipefail
cd "$(dirname "$0")/.."

nvim=$(scripts/provision-nvim.sh 2>/dev/null | tail -1 || true)
if [[ -z $nvim ]]; then
  echo "lint-doc: no Neovim to check doc/flemma.txt with: run scripts/provision-nvim.sh" >&2
  [[ -n ${CI:-} ]] && exit 1
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp doc/flemma.txt "$tmp/"
out=$("$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$PWD" -c "lua
  local problems = {}
  local ok, err = pcall(vim.cmd, 'helptags $tmp')
  if not ok then table.insert(problems, 'helptags: ' .. tostring(err)) end
  local tags = {}
  for _, f in ipairs({ '$tmp/tags', vim.env.VIMRUNTIME .. '/doc/tags' }) do
    for _, l in ipairs(vim.fn.readfile(f)) do tags[l:match('^[^\t]+')] = true end
  end
  local text = table.concat(vim.fn.readfile('doc/flemma.txt'), '\n')
  for link in text:gmatch('|([^|%s]+)|') do
    if not tags[link] then table.insert(problems, 'link to a missing tag: |' .. link .. '|') end
  end
  local defaults = dofile('lua/flemma/config.lua').defaults
  local function walk(t, path)
    for k, v in pairs(t) do
      local p = path == '' and k or (path .. '.' .. k)
      local is_list = type(v) == 'table' and (next(v) == nil or #v > 0)
      if type(v) == 'table' and not is_list then
        walk(v, p)
      elseif not text:find(p, 1, true) then
        table.insert(problems, 'option not documented: ' .. p)
      end
    end
  end
  walk(defaults, '')
  -- every group plugin/flemma.lua links
  for _, l in ipairs(vim.fn.readfile('plugin/flemma.lua')) do
    local name = l:match('^%s*(Flemma%w+) = ')
    if name and not text:find(name:gsub('Word%u%l+$', 'Word'), 1, true) then
      table.insert(problems, 'highlight group not documented: ' .. name)
    end
  end
  table.sort(problems)
  io.stdout:write(table.concat(problems, '\n'))
" -c "qa!" 2>&1)
if [[ -n $out ]]; then
  echo "lint-doc: doc/flemma.txt:" >&2
  echo "$out" >&2
  exit 1
fi
