#!/usr/bin/env bash
# Builds the platform-specific .vsix for linux-x64: qwen-ls built from this
# repository with `go build` goes into bin/, the extension is bundled with
# esbuild, and vsce packages only what .vscodeignore lets through.
# qwen-ls is built static (CGO_ENABLED=0): a binary linked against this
# machine's glibc would refuse to start on a distribution with an older
# one ("GLIBC_2.34 not found"), and the .vsix is meant for every linux-x64.
# The server needs nothing from cgo (Go's own DNS resolver and user lookup
# serve it). QWEN_LS_BIN=path packages that binary instead of building one,
# for a local test run (a binary built with cgo then only warns).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(cd ../.. && pwd)
mkdir -p bin
if [ -n "${QWEN_LS_BIN:-}" ]; then
  echo "package: qwen-ls from $QWEN_LS_BIN"
  cp "$QWEN_LS_BIN" bin/qwen-ls
else
  echo "package: go build qwen-ls (linux/amd64)"
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags='-s -w' -o "$OLDPWD/bin/qwen-ls" ./cmd/qwen-ls)
fi
if ! go version -m bin/qwen-ls | grep -q 'CGO_ENABLED=0'; then
  echo "package: bin/qwen-ls was built with cgo; the .vsix needs a static binary" >&2
  [ -n "${QWEN_LS_BIN:-}" ] || exit 1
  echo "package: (kept for a local test run only: QWEN_LS_BIN is set)" >&2
fi
node scripts/build.mjs --production
version=$(node -p "require('./package.json').version")
out="qwen-ls-linux-x64-$version.vsix"
npx --no-install vsce package --no-dependencies --skip-license --target linux-x64 --out "$out"
echo "package: $PWD/$out"
