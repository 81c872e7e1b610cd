#!/usr/bin/env bash
# Builds the platform-specific .vsix files, one per VS Code target:
#
#   scripts/package.sh                 all six: linux-x64 linux-arm64
#                                      darwin-x64 darwin-arm64 win32-x64 win32-arm64
#   scripts/package.sh linux-x64 ...   only those
#
# Each .vsix (qwen-ls-TARGET-VERSION.vsix, here in editors/vscode) holds the
# bundled extension and one qwen-ls, built from this repository for that
# target at bin/TARGET/qwen-ls (qwen-ls.exe on Windows); the extension starts
# the one under bin/ that matches process.platform-process.arch. vsce
# packages only what .vscodeignore lets through.
#
# qwen-ls is built static (CGO_ENABLED=0): a binary linked against the
# build machine's glibc would refuse to start on a distribution with an
# older one ("GLIBC_2.34 not found"), and macOS and Windows binaries cannot
# be cross-built with cgo at all. The server needs nothing from cgo (Go's
# own DNS resolver and user lookup serve it). The compile flags are those
# of the cross-build in .ci/go (CGO_ENABLED=0 GOOS GOARCH go build, no
# -trimpath), so after it each build here only links from Go's build cache
# (-ldflags only changes the link).
#
# QWEN_LS_BIN=path packages that binary instead of building one (one target
# only, for a local test run; a binary built with cgo then only warns).
# When done, bin/ holds this machine's binary (if it is one of the targets),
# so the extension also runs from the source folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ext=$PWD
root=$(cd ../.. && pwd)

all=(linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# VS Code's target (process.platform-process.arch) -> GOOS GOARCH.
goos_goarch() {
  case $1 in
    linux-x64) echo linux amd64 ;;
    linux-arm64) echo linux arm64 ;;
    darwin-x64) echo darwin amd64 ;;
    darwin-arm64) echo darwin arm64 ;;
    win32-x64) echo windows amd64 ;;
    win32-arm64) echo windows arm64 ;;
    *) return 1 ;;
  esac
}
for t in "${targets[@]}"; do
  goos_goarch "$t" >/dev/null || { echo "package: unknown target $t (one of: ${all[*]})" >&2; exit 2; }
done
if [ -n "${QWEN_LS_BIN:-}" ] && [ ${#targets[@]} -ne 1 ]; then
  echo "package: QWEN_LS_BIN packages one binary: name one target" >&2
  exit 2
fi

t0=$(date +%s)
node scripts/build.mjs --production
version=$(node -p "require('./package.json').version")

# The binaries are built into build/ (ignored by git and by vsce); bin/
# holds exactly one target's binary while vsce packages it.
mkdir -p build
for t in "${targets[@]}"; do
  read -r goos goarch < <(goos_goarch "$t")
  exe=qwen-ls; [ "$goos" = windows ] && exe=qwen-ls.exe
  out=$ext/build/$t/$exe
  mkdir -p "$ext/build/$t"
  if [ -n "${QWEN_LS_BIN:-}" ]; then
    echo "package: $t: qwen-ls from $QWEN_LS_BIN"
    cp "$QWEN_LS_BIN" "$out"
  else
    echo "package: $t: go build qwen-ls ($goos/$goarch)"
    s=$(date +%s)
    (cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -ldflags='-s -w' -o "$out" ./cmd/qwen-ls)
    echo "package: $t: built in $(( $(date +%s) - s )) s"
  fi
  if ! go version -m "$out" | grep -q 'CGO_ENABLED=0'; then
    echo "package: $out was built with cgo; the .vsix needs a static binary" >&2
    [ -n "${QWEN_LS_BIN:-}" ] || exit 1
    echo "package: (kept for a local test run only: QWEN_LS_BIN is set)" >&2
  fi
  rm -rf bin
  mkdir -p "bin/$t"
  cp "$out" "bin/$t/$exe"
  chmod 755 "bin/$t/$exe"
  vsix="qwen-ls-$t-$version.vsix"
  rm -f "$vsix"
  npx --no-install vsce package --no-dependencies --skip-license --target "$t" --out "$vsix" >/dev/null
  echo "package: $ext/$vsix"
done

# Leave this machine's binary in bin/ (F5 from the source folder runs it).
here=$(node -p 'process.platform + "-" + process.arch')
rm -rf bin
for t in "${targets[@]}"; do
  [ "$t" = "$here" ] || continue
  mkdir -p "bin/$t"
  cp build/"$t"/qwen-ls* "bin/$t/"
done
echo "package: ${#targets[@]} .vsix in $(( $(date +%s) - t0 )) s"
