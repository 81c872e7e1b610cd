#!/usr/bin/env bash
# Runs the plugin's tests in one Neovim: tests/run.sh [NVIM] [FILTER].
# Needs QWEN_TEST_BIN (a built qwen-ls); QWEN_TEST_REPO defaults to the
# repository this script is in. The scripted model is
# QWEN_SCRIPTED_MODEL_BIN, else the qwen-scripted-model next to
# QWEN_TEST_BIN, else one built from the repository for this run. Prints
# "N passed, N failed"; exits non-zero on any failure or plugin error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nvim=${1:-nvim}
case $nvim in
  */*) nvim=$(cd "$(dirname "$nvim")" && pwd)/$(basename "$nvim") ;;
  *) nvim=$(command -v "$nvim") ;;
esac
export QWEN_TEST_FILTER=${2:-${QWEN_TEST_FILTER:-}}
export QWEN_TEST_REPO=${QWEN_TEST_REPO:-$(cd "$here/../../.." && pwd)}
export QWEN_TEST_NVIM=$nvim
: "${QWEN_TEST_BIN:?set QWEN_TEST_BIN to a qwen-ls binary}"
# The language servers the tests attach (gopls) keep Go's build and module
# caches where they are: a temporary XDG_CACHE_HOME would start them cold.
if command -v go >/dev/null; then
  GOCACHE=${GOCACHE:-$(go env GOCACHE)} GOMODCACHE=${GOMODCACHE:-$(go env GOMODCACHE)}
  export GOCACHE GOMODCACHE
fi
# Neovim's own state (logs, shada) stays out of the real home.
export XDG_STATE_HOME=$(mktemp -d) XDG_DATA_HOME=$(mktemp -d) XDG_CONFIG_HOME=$(mktemp -d) XDG_CACHE_HOME=$(mktemp -d)
trap 'rm -rf "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"' EXIT
if [ -z "${QWEN_SCRIPTED_MODEL_BIN:-}" ]; then
  QWEN_SCRIPTED_MODEL_BIN=$(dirname "$QWEN_TEST_BIN")/qwen-scripted-model
  if [ ! -x "$QWEN_SCRIPTED_MODEL_BIN" ]; then
    QWEN_SCRIPTED_MODEL_BIN=$XDG_CACHE_HOME/qwen-scripted-model
    (cd "$QWEN_TEST_REPO" && go build -o "$QWEN_SCRIPTED_MODEL_BIN" ./cmd/qwen-scripted-model) || exit 1
  fi
fi
export QWEN_SCRIPTED_MODEL_BIN
timeout 600 "$nvim" --headless -u NONE -i NONE -n -c "luafile $here/run.lua" </dev/null
