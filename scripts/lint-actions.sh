#!/usr/bin/env bash
# lint-actions.sh — actionlint on .github/workflows (part of make lint).
# actionlint is built with the Go toolchain into .cache/ (a second run is a
# no-op); without it (no module proxy) it says so, and with CI set fails.
set -euo pipefail

readonly VERSION=v1.7.12
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
dir=.cache/actionlint-$VERSION
if [[ ! -x $dir/actionlint ]]; then
  mkdir -p "$dir"
  if ! GOBIN=$PWD/$dir GOFLAGS= go install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION" >&2; then
    echo "lint-actions: could not build actionlint $VERSION" >&2
    [[ -n ${CI:-} ]] && exit 1
    exit 0
  fi
fi
"$dir/actionlint" -no-color .github/workflows/*.yml
