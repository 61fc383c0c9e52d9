#!/usr/bin/env bash
# provision-nvim.sh — make the two Neovim versions flemma's tests run against available.
#
#   * Neovim 0.7.2  : Debian bookworm's package, at /usr/bin/nvim (apt-get install -y neovim).
#   * Neovim 0.10.4 : Debian trixie's packages, downloaded with a private apt configuration and
#                     unpacked into <cache>/nvim-0.10.4 without touching the system; the binary is
#                     <cache>/nvim-0.10.4/bin/nvim (a patchelf'd copy that uses trixie's own loader
#                     and libraries, so v:progpath and $VIMRUNTIME point inside the cache).
#
# stdout: one absolute path per available Neovim (0.7.2 first, then 0.10.4) and nothing else:
#     NVIMS=$(scripts/provision-nvim.sh)
# stderr: progress and errors.
# Exit status: 0 when both are available (with FLEMMA_SKIP_APT=1: when at least one is); non-zero
# otherwise — the paths that ARE available are still printed.
#
# Environment:
#   FLEMMA_NVIM_CACHE    cache dir (default: <repo>/.cache). Everything this script downloads,
#                        including all private apt state (lists, .debs), lives under it.
#   FLEMMA_SKIP_APT=1    never run apt (no install, no download): only report what already exists;
#                        fails if nothing does.
#   FLEMMA_DEBIAN_MIRROR Debian mirror URL (default: the first non-security source of this
#                        machine's apt configuration).
#   FLEMMA_NVIM_NO_SYSTEM_PATCHELF=1
#                        ignore a patchelf on PATH and use (fetching if needed) bookworm's
#                        patchelf unpacked under the cache — mostly for testing that path.
#
# See scripts/README.md for details.
set -euo pipefail

readonly NVIM_OLD_VERSION=0.7.2
readonly NVIM_OLD_PATH=/usr/bin/nvim
readonly NVIM_NEW_VERSION=0.10.4
# Debian trixie packages needed by neovim 0.10.4 (apt-get download does not resolve dependencies).
readonly TRIXIE_PKGS=(neovim neovim-runtime libc6 libgcc-s1 libluajit-5.1-2 libluajit-5.1-common
  libmsgpack-c2 libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv)
readonly MULTIARCH=x86_64-linux-gnu

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(dirname -- "$SCRIPT_DIR")
CACHE=${FLEMMA_NVIM_CACHE:-$REPO_ROOT/.cache}
SKIP_APT=${FLEMMA_SKIP_APT:-0}
# The Debian mirror: $FLEMMA_DEBIAN_MIRROR, else the one this machine's apt
# already uses (first non-security source), so no host is hard-coded here.
system_mirror() {
  local f u
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r $f ]] || continue
    u=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
    [[ -n $u ]] && { echo "${u%/}"; return 0; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r $f ]] || continue
    u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) { print $i; exit } } }' "$f")
    [[ -n $u ]] && { echo "${u%/}"; return 0; }
  done
  return 1
}
MIRROR=${FLEMMA_DEBIAN_MIRROR:-$(system_mirror || true)}

log() { printf 'provision-nvim: %s\n' "$*" >&2; }
err() { printf 'provision-nvim: ERROR: %s\n' "$*" >&2; }

case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
    exit 0
    ;;
  "") ;;
  *)
    err "unexpected argument: $1 (try --help)"
    exit 2
    ;;
esac

# Absolute, symlinks resolved (it is baked into the patched ELF); created only when provisioning.
CACHE=$(realpath -m -- "$CACHE")
DEST=$CACHE/nvim-$NVIM_NEW_VERSION
NEW_BIN=$DEST/bin/nvim
STAMP=$DEST/.provisioned
LOADER_REL=usr/lib/$MULTIARCH/ld-linux-x86-64.so.2

# First line of `<nvim> --version` (captured whole first: no SIGPIPE games under pipefail).
nvim_version_line() {
  local out
  out=$(timeout 20 "$1" --version 2>/dev/null) || return 1
  printf '%s\n' "${out%%$'\n'*}"
}

old_ok() { [[ -x $NVIM_OLD_PATH ]] && [[ $(nvim_version_line "$NVIM_OLD_PATH" || true) == "NVIM v$NVIM_OLD_VERSION" ]]; }

# The stamp is written last, after verification, and records the prefix baked into the binary
# (interpreter + rpath are absolute): a moved/copied cache is rebuilt rather than trusted.
new_ok() {
  [[ -f $STAMP && -x $NEW_BIN && -e $DEST/$LOADER_REL ]] || return 1
  local line
  while IFS= read -r line; do
    [[ $line == "prefix=$DEST" ]] && return 0
  done <"$STAMP"
  return 1
}

# ---------------------------------------------------------------------------------------------
# Fast path: everything already there.
if old_ok && new_ok; then
  printf '%s\n%s\n' "$NVIM_OLD_PATH" "$NEW_BIN"
  exit 0
fi

if [[ $SKIP_APT == 1 ]]; then
  found=0
  if old_ok; then printf '%s\n' "$NVIM_OLD_PATH"; found=$((found + 1)); else
    log "FLEMMA_SKIP_APT=1: Neovim $NVIM_OLD_VERSION not found at $NVIM_OLD_PATH"; fi
  if new_ok; then printf '%s\n' "$NEW_BIN"; found=$((found + 1)); else
    log "FLEMMA_SKIP_APT=1: Neovim $NVIM_NEW_VERSION not provisioned at $NEW_BIN"; fi
  if ((found == 0)); then
    err "no Neovim available and FLEMMA_SKIP_APT=1 forbids installing one (unset it and re-run $0)"
    exit 1
  fi
  exit 0
fi

mkdir -p -- "$CACHE"
# Serialise concurrent runs (parallel test packages); the loser re-checks and usually finds it done.
exec 9>"$CACHE/.provision-nvim.lock"
if ! flock -w 900 9; then
  err "timed out waiting for the lock $CACHE/.provision-nvim.lock held by another run"
  exit 1
fi

STAGE=
cleanup() {
  if [[ -n $STAGE && -d $STAGE ]]; then rm -rf -- "$STAGE"; fi
  rm -rf -- "$CACHE"/apt-*/lists "$CACHE"/apt-*/cache "$CACHE"/apt-*/dl.* # transient apt state
}
declare -A APT_UPDATED=()

# ---------------------------------------------------------------------------------------------
# Neovim 0.7.2 from bookworm (system package).
ensure_old() {
  if old_ok; then return 0; fi
  if [[ -x $NVIM_OLD_PATH ]]; then
    err "$NVIM_OLD_PATH is '$(nvim_version_line "$NVIM_OLD_PATH" || echo '?')', expected NVIM v$NVIM_OLD_VERSION" \
      "(Debian bookworm's neovim package); not touching it"
    return 1
  fi
  local how="as root: apt-get update && apt-get install -y neovim   (Debian bookworm ships $NVIM_OLD_VERSION)"
  if [[ $(id -u) != 0 ]]; then
    err "Neovim $NVIM_OLD_VERSION is missing at $NVIM_OLD_PATH and installing it needs root. Install it $how"
    return 1
  fi
  log "installing Neovim $NVIM_OLD_VERSION: apt-get update && apt-get install -y neovim"
  if ! DEBIAN_FRONTEND=noninteractive apt-get update >&2; then
    err "'apt-get update' failed (no network?). Install Neovim $how"
    return 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y neovim >&2; then
    err "'apt-get install -y neovim' failed. Install Neovim $how"
    return 1
  fi
  if ! old_ok; then
    err "after apt-get install, $NVIM_OLD_PATH reports '$(nvim_version_line "$NVIM_OLD_PATH" || echo 'nothing')'," \
      "expected NVIM v$NVIM_OLD_VERSION — is this Debian bookworm?"
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# Private apt: state under $CACHE/apt-<suite>, system apt config (apt.conf.d hooks, pinning,
# DEP-11 targets, sources) ignored; only proxy settings are carried over. Works unprivileged.
apt_private_setup() { # suite
  local suite=$1 root=$CACHE/apt-$1
  mkdir -p -- "$root/debs" "$root/empty.d"
  if [[ -z $MIRROR ]]; then
    err "no Debian mirror known: this machine's apt has no sources; set FLEMMA_DEBIAN_MIRROR to a Debian mirror URL"
    return 1
  fi
  printf 'deb %s %s main\n' "$MIRROR" "$suite" >"$root/sources.list"
  local HP='' HPS='' FP=''
  eval "$(apt-config shell HP Acquire::http::Proxy HPS Acquire::https::Proxy FP Acquire::ftp::Proxy 2>/dev/null || true)"
  {
    printf 'Dir::Etc::Parts "%s";\nDir::Etc::main "/dev/null";\n' "$root/empty.d"
    printf 'Acquire::GzipIndexes "true";\nAcquire::Languages "none";\n'
    [[ -n $HP ]] && printf 'Acquire::http::Proxy "%s";\n' "$HP"
    [[ -n $HPS ]] && printf 'Acquire::https::Proxy "%s";\n' "$HPS"
    [[ -n $FP ]] && printf 'Acquire::ftp::Proxy "%s";\n' "$FP"
    true
  } >"$root/apt.conf"
}

apt_private() { # suite apt-binary args...
  local root=$CACHE/apt-$1
  shift
  local bin=$1
  shift
  APT_CONFIG=$root/apt.conf "$bin" \
    -oDir::Etc::SourceList="$root/sources.list" -oDir::Etc::SourceParts=/dev/null \
    -oDir::Etc::Preferences=/dev/null -oDir::Etc::PreferencesParts=/dev/null \
    -oDir::State::Lists="$root/lists" -oDir::Cache="$root/cache" \
    -oDir::State::status=/dev/null -oDebug::NoLocking=1 -oAPT::Sandbox::User=root \
    "$@"
}

apt_private_update() { # suite packages-it-is-for... (once per run)
  [[ -n ${APT_UPDATED[$1]:-} ]] && return 0
  mkdir -p -- "$CACHE/apt-$1/lists/partial" "$CACHE/apt-$1/cache/archives/partial"
  log "apt-get update (private, Debian $1 from $MIRROR)"
  if ! apt_private "$1" apt-get -q --error-on=any update >&2; then
    err "private 'apt-get update' for Debian $1 ($MIRROR) failed — no network or mirror unreachable?" \
      "Could not fetch the index needed to download: ${*:2}"
    return 1
  fi
  APT_UPDATED[$1]=1
}

# Download the given packages of <suite> into $CACHE/apt-<suite>/debs, reusing .debs already there.
# Files are fetched into a temp dir and moved into place only when complete.
apt_private_download() { # suite pkgs...
  local suite=$1
  shift
  local debs=$CACHE/apt-$suite/debs missing=() p f
  for p in "$@"; do
    f=$(compgen -G "$debs/${p}_*.deb" | head -n1 || true)
    if [[ -z $f ]] || ! dpkg-deb --info "$f" >/dev/null 2>&1; then
      [[ -n $f ]] && rm -f -- "$debs/${p}_"*.deb
      missing+=("$p")
    fi
  done
  ((${#missing[@]} == 0)) && return 0
  apt_private_update "$suite" "${missing[@]}" || return 1
  local tmp
  tmp=$(mktemp -d "$CACHE/apt-$suite/dl.XXXXXX")
  log "apt-get download (Debian $suite): ${missing[*]}"
  local bad=()
  if ! (cd -- "$tmp" && apt_private "$suite" apt-get -q download "${missing[@]}" >&2); then
    # apt gives up on the whole batch for one bad name: retry one by one to name the culprits.
    log "batch download failed; retrying package by package"
    for p in "${missing[@]}"; do
      [[ -n $(compgen -G "$tmp/${p}_*.deb" || true) ]] && continue
      (cd -- "$tmp" && apt_private "$suite" apt-get -q download "$p" >&2) || true
    done
  fi
  for p in "${missing[@]}"; do
    f=$(compgen -G "$tmp/${p}_*.deb" | head -n1 || true)
    if [[ -n $f ]] && dpkg-deb --info "$f" >/dev/null 2>&1; then mv -f -- "$f" "$debs/"; else bad+=("$p"); fi
  done
  rm -rf -- "$tmp"
  if ((${#bad[@]})); then
    err "could not download from Debian $suite ($MIRROR): ${bad[*]} — no network, or the package" \
      "no longer exists in $suite (see apt's messages above)"
    return 1
  fi
}

# Drop the index (about 20 MB) and apt's binary caches (about 80 MB) once the .debs are in; they
# are only needed within a run that downloads, and every such run starts with `apt-get update`.
apt_private_prune() { # suite
  rm -rf -- "$CACHE/apt-$1/lists" "$CACHE/apt-$1/cache"
  unset 'APT_UPDATED[$1]'
}

# ---------------------------------------------------------------------------------------------
# patchelf: from PATH, else bookworm's .deb unpacked under the cache (no root needed).
find_patchelf() {
  local p
  if [[ ${FLEMMA_NVIM_NO_SYSTEM_PATCHELF:-0} != 1 ]] && p=$(command -v patchelf); then
    printf '%s\n' "$p"
    return 0
  fi
  p=$CACHE/patchelf/usr/bin/patchelf
  if [[ -x $p ]] && "$p" --version >/dev/null 2>&1; then
    printf '%s\n' "$p"
    return 0
  fi
  log "patchelf not on PATH: fetching bookworm's patchelf into $CACHE/patchelf"
  apt_private_setup bookworm
  apt_private_download bookworm patchelf || return 1
  apt_private_prune bookworm
  rm -rf -- "$CACHE/patchelf"
  mkdir -p -- "$CACHE/patchelf"
  dpkg -x "$(compgen -G "$CACHE/apt-bookworm/debs/patchelf_*.deb" | head -n1)" "$CACHE/patchelf"
  if ! "$p" --version >/dev/null 2>&1; then
    err "unpacked patchelf at $p does not run (missing libstdc++6?); install it: apt-get install -y patchelf"
    return 1
  fi
  printf '%s\n' "$p"
}

# ---------------------------------------------------------------------------------------------
# Neovim 0.10.4 from trixie, unpacked privately.
ensure_new() {
  if new_ok; then return 0; fi
  local tool
  for tool in apt-get apt-cache apt-config dpkg dpkg-deb; do
    if ! command -v "$tool" >/dev/null; then
      err "'$tool' not found: fetching Neovim $NVIM_NEW_VERSION needs Debian's apt and dpkg." \
        "On another system, put a Neovim $NVIM_NEW_VERSION at $NEW_BIN some other way."
      return 1
    fi
  done
  local patchelf
  patchelf=$(find_patchelf) || return 1

  apt_private_setup trixie
  # Remove .debs of a version other than the pinned one (e.g. left by an older script).
  local f
  f=$(compgen -G "$CACHE/apt-trixie/debs/neovim_*.deb" | head -n1 || true)
  if [[ -n $f && $(basename -- "$f") != neovim_"$NVIM_NEW_VERSION"-* ]]; then
    rm -f -- "$CACHE"/apt-trixie/debs/*.deb
  fi
  if [[ -z $(compgen -G "$CACHE/apt-trixie/debs/neovim_*.deb" || true) ]]; then
    # Check what trixie offers before downloading 11 MB.
    apt_private_update trixie "${TRIXIE_PKGS[@]}" || return 1
    local show cand deps dep name missing_deps=()
    show=$(apt_private trixie apt-cache show --no-all-versions neovim 2>/dev/null) || {
      err "no 'neovim' package in Debian trixie's index ($MIRROR)?"
      return 1
    }
    cand=$(sed -n 's/^Version: //p' <<<"$show")
    if [[ $cand != "$NVIM_NEW_VERSION"-* ]]; then
      err "Debian trixie now ships neovim $cand, not $NVIM_NEW_VERSION — refusing to use another version." \
        "Update NVIM_NEW_VERSION / TRIXIE_PKGS in $0 (and the tests) deliberately."
      return 1
    fi
    # Every direct dependency (first alternative) must be in TRIXIE_PKGS.
    deps=$(sed -n 's/^Depends: //p' <<<"$show")
    IFS=',' read -r -a dep <<<"$deps"
    for name in "${dep[@]}"; do
      name=${name%%|*}
      name=${name%%(*}
      name=${name//[[:space:]]/}
      [[ -z $name ]] && continue
      [[ " ${TRIXIE_PKGS[*]} " == *" $name "* ]] || missing_deps+=("$name")
    done
    if ((${#missing_deps[@]})); then
      err "trixie's neovim $cand depends on packages this script does not fetch: ${missing_deps[*]}" \
        "— add them to TRIXIE_PKGS in $0"
      return 1
    fi
  fi
  apt_private_download trixie "${TRIXIE_PKGS[@]}" || return 1
  apt_private_prune trixie

  # Stage in a temp dir next to DEST, then rename. Interpreter/rpath are patched with the FINAL
  # paths (they are absolute), so before the rename the staged copy is checked via its loader.
  rm -rf -- "$CACHE"/.nvim-"$NVIM_NEW_VERSION".tmp.* # leftovers of an interrupted run (we hold the lock)
  STAGE=$(mktemp -d "$CACHE/.nvim-$NVIM_NEW_VERSION.tmp.XXXXXX")
  log "unpacking ${#TRIXIE_PKGS[@]} trixie packages into $DEST"
  local p
  for p in "${TRIXIE_PKGS[@]}"; do
    f=$(compgen -G "$CACHE/apt-trixie/debs/${p}_*.deb" | head -n1)
    dpkg -x "$f" "$STAGE"
  done
  if [[ ! -e $STAGE/$LOADER_REL || ! -x $STAGE/usr/bin/nvim ]]; then
    err "unpacked trixie packages lack $LOADER_REL or usr/bin/nvim — package layout changed?"
    return 1
  fi
  # bin/nvim: patched copy. Neovim derives $VIMRUNTIME (<exe>/../share/nvim/runtime) and its lib
  # dir (<exe>/../lib/nvim, treesitter parsers) from the executable's location: link them.
  mkdir -p -- "$STAGE/bin"
  cp -- "$STAGE/usr/bin/nvim" "$STAGE/bin/nvim"
  ln -s usr/share "$STAGE/share"
  ln -s usr/lib "$STAGE/lib"
  "$patchelf" --set-interpreter "$DEST/$LOADER_REL" --set-rpath "$DEST/usr/lib/$MULTIARCH" "$STAGE/bin/nvim"

  local line
  line=$(nvim_version_line_via_loader "$STAGE") || true
  if [[ $line != "NVIM v$NVIM_NEW_VERSION" ]]; then
    err "unpacked Neovim reports '${line:-nothing (does not run)}', expected 'NVIM v$NVIM_NEW_VERSION'"
    return 1
  fi

  rm -rf -- "$DEST"
  mv -T -- "$STAGE" "$DEST"
  STAGE=

  # Verify the real thing: patched binary, headless, runtime from the cache.
  if ! verify_new; then
    rm -rf -- "$DEST"
    return 1
  fi
  {
    echo "NVIM v$NVIM_NEW_VERSION"
    echo "prefix=$DEST"
    echo "mirror=$MIRROR"
    for p in "${TRIXIE_PKGS[@]}"; do
      basename -- "$(compgen -G "$CACHE/apt-trixie/debs/${p}_*.deb" | head -n1)"
    done
  } >"$STAMP.tmp"
  mv -f -- "$STAMP.tmp" "$STAMP"
  log "Neovim $NVIM_NEW_VERSION ready: $NEW_BIN"
}

nvim_version_line_via_loader() { # prefix
  local out
  out=$(timeout 20 "$1/$LOADER_REL" --library-path "$1/usr/lib/$MULTIARCH" "$1/bin/nvim" --version 2>/dev/null) || return 1
  printf '%s\n' "${out%%$'\n'*}"
}

# Run nvim isolated from the caller's config/state and from an inherited $VIMRUNTIME/$VIM
# (set e.g. inside Neovim's :terminal), which would otherwise win over the exe-relative runtime.
nvim_isolated() { # nvim args...
  local home
  home=$(mktemp -d)
  env -u VIMRUNTIME -u VIM XDG_CONFIG_HOME="$home/c" XDG_DATA_HOME="$home/d" XDG_STATE_HOME="$home/s" \
    XDG_CACHE_HOME="$home/x" NVIM_LOG_FILE="$home/log" \
    timeout 30 "$1" --headless -u NONE -i NONE -n "${@:2}" </dev/null 2>/dev/null
  local rc=$?
  rm -rf -- "$home"
  return $rc
}

verify_new() {
  local line minor rt
  line=$(nvim_version_line "$NEW_BIN") || true
  if [[ $line != "NVIM v$NVIM_NEW_VERSION" ]]; then
    err "$NEW_BIN --version says '${line:-nothing (does not run)}', expected 'NVIM v$NVIM_NEW_VERSION'"
    return 1
  fi
  minor=$(nvim_isolated "$NEW_BIN" +'lua io.stdout:write(vim.version().minor)' +qa) || true
  if [[ $minor != 10 ]]; then
    err "$NEW_BIN headless: vim.version().minor printed '$minor', expected 10"
    return 1
  fi
  rt=$(nvim_isolated "$NEW_BIN" +'lua io.stdout:write(vim.env.VIMRUNTIME)' +qa) || true
  if [[ $rt != "$DEST"/* ]]; then
    err "$NEW_BIN headless: \$VIMRUNTIME is '$rt', expected it inside $DEST"
    return 1
  fi
  log "verified $NEW_BIN: --version, headless vim.version().minor=10, VIMRUNTIME=$rt"
}

# Each part runs in a subshell with errexit really on: a function called as `f || x` would run
# with errexit silently disabled, and any unchecked failure must abort that part.
failed=0
set +e
(
  set -eE
  trap 'err "command failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR
  ensure_old
)
# shellcheck disable=SC2181 # `( … ) || x` would disable errexit inside the subshell
(($? == 0)) || failed=1
(
  set -eE
  trap 'err "command failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR
  trap cleanup EXIT
  ensure_new
)
# shellcheck disable=SC2181 # `( … ) || x` would disable errexit inside the subshell
(($? == 0)) || failed=1
set -e

n=0
if old_ok; then printf '%s\n' "$NVIM_OLD_PATH"; n=$((n + 1)); fi
if new_ok; then printf '%s\n' "$NEW_BIN"; n=$((n + 1)); fi
if ((failed)); then
  err "not all Neovim versions could be provisioned (see above); available: $n"
  exit 1
fi
