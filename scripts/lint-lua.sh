#!/usr/bin/env bash
# lint-lua.sh — the plugin's Lua: luacheck (apt package lua-check) and StyLua
# formatting (the WASM build on npm, @johnnymorganz/stylua, run by node:
# scripts/stylua.cjs; its CLI package downloads a binary from GitHub, which
# not every machine reaches). Installs what is missing when it can (apt as
# root, npm into .cache/stylua); otherwise says how, and with CI set a
# missing tool is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

files=$(find lua plugin testdata/lua -name '*.lua' | sort)
stylua_version=2.5.2
fail=0

need() { # need <what> <how>
  local msg="lint-lua: $1 is missing: $2"
  if [[ -n ${CI:-} ]]; then
    echo "$msg" >&2
    exit 1
  fi
  echo "$msg (skipped)" >&2
}

if ! command -v luacheck >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "lint-lua: installing lua-check with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua-check >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua-check >/dev/null; } || true
fi
if command -v luacheck >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  luacheck --quiet --no-color $files || fail=1
else
  need luacheck "install it with 'sudo apt-get install lua-check' (or 'luarocks install luacheck')"
fi

lib=.cache/stylua/node_modules/@johnnymorganz/stylua/package.json
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  if [[ ! -f $lib ]] || ! grep -q "\"version\": \"$stylua_version\"" "$lib"; then
    echo "lint-lua: installing @johnnymorganz/stylua@$stylua_version with npm into .cache/stylua" >&2
    npm install --silent --no-audit --no-fund --prefix .cache/stylua "@johnnymorganz/stylua@$stylua_version" >/dev/null
  fi
  # shellcheck disable=SC2086
  node scripts/stylua.cjs $files || fail=1
else
  need "node/npm (for StyLua)" "install Node.js 18 or newer ('sudo apt-get install nodejs npm')"
fi
exit $fail
