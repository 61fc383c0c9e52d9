#!/usr/bin/env bash
# lint-go.sh — staticcheck ./... and deadcode -test ./... must report
# nothing (no exceptions, no ignore comments): production code only tests
# use belongs in a _test.go file. The programs come from
# scripts/provision-linters.sh (exact versions, into .cache/).
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

bin=$(scripts/provision-linters.sh)
[[ -z $bin ]] && exit 0 # not provisioned: provision-linters said why

status=0
if ! "$bin/staticcheck" ./...; then
  status=1
fi
dead=$("$bin/deadcode" -test ./...)
if [[ -n $dead ]]; then
  echo "deadcode -test: unreachable functions (delete them, or move them into the _test.go files that use them):" >&2
  echo "$dead" >&2
  status=1
fi
exit $status
