#!/usr/bin/env bash
# provision-gopls.sh — the language server the editor tools' tests run
# against (e2e/editor_test.go): gopls, built with the Go toolchain the tests
# already need, into <repo>/.cache/gopls-<version>/gopls.
#
# stdout: the path of gopls, nothing else. A second run is a no-op. Without
# Go or the module proxy it says why; with CI set that is an error, else the
# tests that need gopls are skipped, saying so.
set -euo pipefail

readonly VERSION=v0.23.0 # the newest gopls this Go (1.25+) builds; v0.24 needs Go 1.27

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
CACHE=${FLEMMA_NVIM_CACHE:-$(dirname -- "$SCRIPT_DIR")/.cache}
dir=$CACHE/gopls-$VERSION

if [[ -x $dir/gopls ]]; then
  echo "$dir/gopls"
  exit 0
fi

fail() {
  echo "provision-gopls: $*" >&2
  [[ -n ${CI:-} ]] && exit 1
  echo "provision-gopls: the tests that need gopls are skipped" >&2
  exit 0
}

command -v go >/dev/null 2>&1 || fail "Go is not on PATH"
echo "provision-gopls: building gopls $VERSION (about 3 minutes the first time)" >&2
mkdir -p "$dir"
if ! GOBIN="$dir.tmp.$$" GOFLAGS= GOTOOLCHAIN=local go install "golang.org/x/tools/gopls@$VERSION" >&2; then
  rm -rf "$dir.tmp.$$"
  fail "go install golang.org/x/tools/gopls@$VERSION failed"
fi
mv "$dir.tmp.$$/gopls" "$dir/gopls"
rm -rf "$dir.tmp.$$"
echo "$dir/gopls"
