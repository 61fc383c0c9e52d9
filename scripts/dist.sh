#!/usr/bin/env bash
# dist.sh — the prebuilt hosts of a release, into dist/ (make dist):
#
#   dist/flemma-host-<os>-<arch>          for linux, darwin × amd64, arm64
#   dist/SHA256SUMS                      sha256sum's format: "<hex>  <file>"
#
# windows/amd64 does not build yet (the MCP client's process handling, among
# others, is Unix-only): PLATFORMS="windows/amd64" tries it, and the
# installer on Windows finds no binary and falls back to go build.
#
# Each binary embeds the version (lua/flemma/VERSION, `flemma-host -version`);
# the plugin's installer (lua/flemma/install.lua) downloads the one of its own
# version and platform from the release v<version> and checks it against
# SHA256SUMS. Static (CGO_ENABLED=0), reproducible paths (-trimpath), no
# build ID. PLATFORMS="linux/amd64 …" builds fewer.
set -euo pipefail

cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}
version=$(tr -d '[:space:]' <lua/flemma/VERSION)
out=dist
rm -rf "$out.tmp"
mkdir -p "$out.tmp"

failed=()
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  name=flemma-host-$os-$arch
  [[ $os == windows ]] && name+=.exe
  echo "dist: $name ($version)" >&2
  if ! CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -buildvcs=false -ldflags='-s -w -buildid=' \
    -o "$out.tmp/$name" ./cmd/flemma-host; then
    failed+=("$p")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "dist: failed to build ${failed[*]}" >&2
  rm -rf "$out.tmp"
  exit 1
fi
(cd "$out.tmp" && sha256sum flemma-host-* >SHA256SUMS)
echo "$version" >"$out.tmp/VERSION"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "dist: $(ls "$out" | wc -l) files in $out/ for v$version" >&2
