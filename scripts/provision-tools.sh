#!/usr/bin/env bash
# provision-tools.sh — the programs the tests use besides Neovim:
#   bwrap (bubblewrap): the sandbox backend of bash; its tests skip, saying
#                       why, where it is missing or user namespaces do not work
#   rg (ripgrep):       the yardstick of the grep benchmark
#   pytest-3:           everyday work under the default sandbox (the test
#                       also runs git, go, node, npm and make)
# Installs them with apt-get when run as root; otherwise says how. With CI set,
# a missing program is an error.
set -euo pipefail

want=(bwrap:bubblewrap rg:ripgrep pytest-3:python3-pytest)
missing=()
for pair in "${want[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "provision-tools: installing ${missing[*]} with apt-get" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  exit 0
fi

msg="provision-tools: missing ${missing[*]}: install with 'sudo apt-get install ${missing[*]}'"
if [[ -n ${CI:-} ]]; then
  echo "$msg" >&2
  exit 1
fi
echo "$msg (tests that need them are skipped, saying so)" >&2
