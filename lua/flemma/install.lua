-- Installs the host into <plugin>/bin/flemma-host, the plugin's build step
-- (build.lua, `:Flemma install`): the prebuilt binary of the plugin's own
-- version and platform from the release, checked against the release's
-- SHA256SUMS; when that fails (offline, no binary for this platform, a
-- checksum that does not match) `go build`, when Go is installed; otherwise
-- a message saying what to do. The binary only ever appears whole and
-- checked: it is downloaded beside the target and renamed over it at the
-- end, and every failure removes the partial file.
--
-- This file requires nothing of flemma (lazy.nvim runs build.lua before the
-- plugin is on 'runtimepath'): it finds the plugin from its own path.
-- FLEMMA_DOWNLOAD_BASE replaces the release URL's base (a mirror, the tests'
-- local server): <base>/v<version>/SHA256SUMS and
-- <base>/v<version>/flemma-host-<os>-<arch>[.exe].
local M = {}

M.default_base = "https://github.com/flemma-dev/flemma/releases/download"

local uv = vim.loop
local is_windows = vim.fn.has("win32") == 1

--- The plugin's folder (the one holding lua/, plugin/, bin/).
function M.root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h")
end

local function read_first_line(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local line = f:read("*l")
  f:close()
  return line and vim.trim(line) or nil
end

--- The plugin's version (lua/flemma/VERSION).
function M.version(root)
  return read_first_line((root or M.root()) .. "/lua/flemma/VERSION") or "unknown"
end

--- os and arch as Go names them, or nil and why.
function M.platform()
  local u = uv.os_uname()
  local os_name = ({ Linux = "linux", Darwin = "darwin", Windows_NT = "windows" })[u.sysname]
  local arch = ({ x86_64 = "amd64", amd64 = "amd64", AMD64 = "amd64", aarch64 = "arm64", arm64 = "arm64" })[u.machine]
  if not os_name or not arch then
    return nil, nil, string.format("%s/%s", u.sysname, u.machine)
  end
  return os_name, arch
end

local function run(cmd)
  local ok, out = pcall(vim.fn.system, cmd)
  if not ok then
    return nil, tostring(out)
  end
  if vim.v.shell_error ~= 0 then
    return nil, vim.trim(out)
  end
  return out
end

local function executable(name)
  return vim.fn.executable(name) == 1
end

-- Downloads url to path (curl, else wget). Bounded: 10 s to connect, 300 s
-- in all.
local function fetch(url, path)
  local cmd
  if executable("curl") then
    cmd = { "curl", "--fail", "--silent", "--show-error", "--location", "--connect-timeout", "10", "--max-time", "300" }
    cmd = vim.list_extend(cmd, { "--output", path, url })
  elseif executable("wget") then
    cmd = { "wget", "--quiet", "--timeout=10", "--tries=1", "--output-document=" .. path, url }
  else
    return nil, "neither curl nor wget is installed"
  end
  local _, err = run(cmd)
  if err then
    os.remove(path)
    return nil, (err ~= "" and err or "download failed")
  end
  return true
end

-- The SHA-256 of a file, in hex (sha256sum, shasum or certutil).
local function sha256(path)
  local out
  if executable("sha256sum") then
    out = run({ "sha256sum", path })
  elseif executable("shasum") then
    out = run({ "shasum", "-a", "256", path })
  elseif is_windows and executable("certutil") then
    out = run({ "certutil", "-hashfile", path, "SHA256" })
    out = out and out:match("\n(%x[%x ]+)\r?\n")
    out = out and out:gsub(" ", "")
  end
  return out and out:match("^(%x+)") and out:match("^(%x+)"):lower() or nil
end

-- The checksum SHA256SUMS gives asset, or nil.
local function listed_sum(sums, asset)
  for line in sums:gmatch("[^\r\n]+") do
    local hex, name = line:match("^(%x+)%s+%*?(%S+)$")
    if name == asset then
      return hex:lower()
    end
  end
end

local function host_version(bin)
  local out = run({ bin, "-version" })
  return out and out:match("flemma%-host%s+(%S+)")
end

-- The release's binary for this platform, checked, at target. Returns true,
-- or nil and why (a checksum mismatch says so: it is never installed).
local function download(version, target)
  local os_name, arch, unknown = M.platform()
  if not os_name then
    return nil, "no prebuilt host for this platform (" .. unknown .. ")"
  end
  local asset = "flemma-host-" .. os_name .. "-" .. arch .. (os_name == "windows" and ".exe" or "")
  local base = vim.env.FLEMMA_DOWNLOAD_BASE
  if base == nil or base == "" then
    base = M.default_base
  end
  base = base:gsub("/+$", "") .. "/v" .. version
  local tmp = string.format("%s.download-%d", target, uv.os_getpid())
  local sums_path = tmp .. ".sums"
  local ok, err = fetch(base .. "/SHA256SUMS", sums_path)
  if not ok then
    return nil, "could not download " .. base .. "/SHA256SUMS: " .. err
  end
  local f = io.open(sums_path, "r")
  local sums = f and f:read("*a") or ""
  if f then
    f:close()
  end
  os.remove(sums_path)
  local want = listed_sum(sums, asset)
  if not want then
    return nil, string.format("release v%s has no prebuilt host for %s/%s (%s)", version, os_name, arch, asset)
  end
  ok, err = fetch(base .. "/" .. asset, tmp)
  if not ok then
    os.remove(tmp)
    return nil, "could not download " .. asset .. ": " .. err
  end
  local got = sha256(tmp)
  if not got then
    os.remove(tmp)
    return nil, "cannot check the download: no sha256sum, shasum or certutil found"
  end
  if got ~= want then
    os.remove(tmp)
    return nil,
      string.format(
        "checksum mismatch for %s: SHA256SUMS says %s, the download is %s; it was deleted, not installed",
        asset,
        want,
        got
      ),
      "mismatch"
  end
  if not is_windows then
    uv.fs_chmod(tmp, 493) -- 0755
  end
  local v = host_version(tmp)
  if v ~= version then
    os.remove(tmp)
    return nil,
      string.format("the downloaded %s reports version %s, not %s; not installed", asset, tostring(v), version)
  end
  local renamed, rerr = os.rename(tmp, target)
  if not renamed then
    os.remove(tmp)
    return nil, "could not install " .. target .. ": " .. tostring(rerr)
  end
  return true, "downloaded " .. asset .. " (v" .. version .. ", checksum verified)"
end

-- go build into target (through a temp file: the old binary stays until the
-- new one is whole).
local function go_build(root, target)
  if not executable("go") then
    return nil, "Go is not installed"
  end
  local tmp = string.format("%s.build-%d", target, uv.os_getpid())
  local _, err = run({ "go", "-C", root, "build", "-o", tmp, "./cmd/flemma-host" })
  if err then
    -- go -C needs Go 1.20; older ones build from the plugin folder.
    local cwd = uv.cwd()
    uv.chdir(root)
    _, err = run({ "go", "build", "-o", tmp, "./cmd/flemma-host" })
    uv.chdir(cwd)
  end
  if err then
    os.remove(tmp)
    return nil, "go build failed: " .. err
  end
  local ok, rerr = os.rename(tmp, target)
  if not ok then
    os.remove(tmp)
    return nil, "could not install " .. target .. ": " .. tostring(rerr)
  end
  return true, "built with go build"
end

--- Installs the host. opts.force: replace a host of the right version too.
--- Returns true and what was done, or false and a message saying what to
--- do.
function M.run(opts)
  opts = opts or {}
  local root = M.root()
  local version = M.version(root)
  local bin = root .. "/bin"
  local target = bin .. "/flemma-host" .. (is_windows and ".exe" or "")
  vim.fn.mkdir(bin, "p")
  if not opts.force and vim.fn.executable(target) == 1 and host_version(target) == version then
    return true, "flemma-host " .. version .. " is already installed at " .. target
  end
  local ok, what, kind = download(version, target)
  if ok then
    return true, "flemma-host " .. version .. ": " .. what .. " into " .. target
  end
  local why = what
  local built, berr = go_build(root, target)
  if built then
    return true, string.format("flemma-host %s: %s; %s into %s", version, why, berr, target)
  end
  local msg = string.format(
    "(flemma) the host is not installed: %s, and %s. Install Go (1.25 or newer, https://go.dev/dl) and run :Flemma install "
      .. "(or `make build` in %s), or put a flemma-host of version %s on $PATH.",
    why,
    berr,
    root,
    version
  )
  if kind == "mismatch" then
    msg = msg .. " The checksum mismatch may mean the download was tampered with."
  end
  return false, msg
end

return M
