#!/usr/bin/env bash
# Builds the platform-specific .vsix for linux-x64: qwen-ls built from this
# repository with `go build` goes into bin/, the extension is bundled with
# esbuild, and vsce packages only what .vscodeignore lets through.
# The Go build uses the default flags so that it reuses the build cache of
# go vet and go build; for a binary without libc, run with
# CGO_ENABLED=0 GOFLAGS=-trimpath.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(cd ../.. && pwd)
mkdir -p bin
echo "package: go build qwen-ls (linux/amd64)"
(cd "$root" && GOOS=linux GOARCH=amd64 go build -ldflags='-s -w' -o "$OLDPWD/bin/qwen-ls" ./cmd/qwen-ls)
node scripts/build.mjs --production
version=$(node -p "require('./package.json').version")
out="qwen-ls-linux-x64-$version.vsix"
npx --no-install vsce package --no-dependencies --skip-license --target linux-x64 --out "$out"
echo "package: $PWD/$out"
