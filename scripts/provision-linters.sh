#!/usr/bin/env bash
# provision-linters.sh — the Go linters `make lint` runs besides go vet:
#   staticcheck (honnef.co/go/tools)  and  deadcode -test (golang.org/x/tools),
# built with the Go toolchain the tests already need, at exact versions, into
# <repo>/.cache/linters-<staticcheck>-<tools>/.
#
# stdout: the folder holding both programs, nothing else. A second run is a
# no-op. Without Go or the module proxy it says why; with CI set that is an
# error, else `make lint` skips them, saying so.
set -euo pipefail

readonly STATICCHECK=v0.8.2 # honnef.co/go/tools
readonly XTOOLS=v0.52.0     # golang.org/x/tools (cmd/deadcode)

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
CACHE=${FLEMMA_NVIM_CACHE:-$(dirname -- "$SCRIPT_DIR")/.cache}
dir=$CACHE/linters-$STATICCHECK-$XTOOLS

if [[ -x $dir/staticcheck && -x $dir/deadcode ]]; then
  echo "$dir"
  exit 0
fi

fail() {
  echo "provision-linters: $*" >&2
  [[ -n ${CI:-} ]] && exit 1
  echo "provision-linters: make lint skips staticcheck and deadcode" >&2
  exit 0
}

command -v go >/dev/null 2>&1 || fail "Go is not on PATH"
echo "provision-linters: building staticcheck $STATICCHECK and deadcode $XTOOLS (a minute or two the first time)" >&2
tmp="$dir.tmp.$$"
mkdir -p "$tmp"
if ! GOBIN="$tmp" GOFLAGS= GOTOOLCHAIN=local go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK" >&2 ||
  ! GOBIN="$tmp" GOFLAGS= GOTOOLCHAIN=local go install "golang.org/x/tools/cmd/deadcode@$XTOOLS" >&2; then
  rm -rf "$tmp"
  fail "go install staticcheck@$STATICCHECK or deadcode@$XTOOLS failed"
fi
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$dir"
