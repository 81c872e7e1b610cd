#!/usr/bin/env bash
# Makes media/review-capture.txt: a real Neovim in tmux, against the real
# qwen-ls and the scripted model of testdata/scripts/edit-two-hunks.txtar,
# with the review opened by :QwenReview, hunk 1 accepted with \a and the
# cursor moved to hunk 2 with ]h; then `tmux capture-pane`.
# Usage: QWEN_TEST_BIN=/path/to/qwen-ls tests/capture-review.sh [NVIM]
# (the scripted model: QWEN_SCRIPTED_MODEL_BIN, else the
# qwen-scripted-model next to QWEN_TEST_BIN, else one built here)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(cd "$here/.." && pwd)
repo=$(cd "$plugin/../.." && pwd)
nvim=${1:-nvim}
bin=${QWEN_TEST_BIN:?set QWEN_TEST_BIN to a qwen-ls binary}
tmp=$(mktemp -d)
sock=$tmp/tmux.sock
model_pid=
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
model=${QWEN_SCRIPTED_MODEL_BIN:-$(dirname "$bin")/qwen-scripted-model}
if [ -z "${QWEN_SCRIPTED_MODEL_BIN:-}" ] && [ ! -x "$model" ]; then
  model=$tmp/qwen-scripted-model
  (cd "$repo" && go build -o "$model" ./cmd/qwen-scripted-model)
fi
cp -R "$repo/testdata/workspace" "$tmp/ws"
mkdir -p "$tmp/home" "$tmp/xdg"
# Its stdin stays open (the model serves until stdin ends): a FIFO this
# shell holds open until it exits.
mkfifo "$tmp/stdin"
exec 3<>"$tmp/stdin"
"$model" --var "ROOT=$tmp/ws" --script "$repo/testdata/scripts/edit-two-hunks.txtar" <"$tmp/stdin" >"$tmp/model.url" &
model_pid=$!
for _ in $(seq 100); do [ -s "$tmp/model.url" ] && break; sleep 0.1; done
url=$(head -1 "$tmp/model.url")
cat >"$tmp/init.lua" <<LUA
vim.opt.runtimepath:append('$plugin')
vim.o.laststatus = 2
vim.o.signcolumn = 'yes'
vim.o.statusline = '%f %= %{v:lua.require("qwen").statusline()}'
require('qwen').setup({
  cmd = { '$bin', '--stdio' },
  cmd_env = { HOME = '$tmp/home', OPENAI_BASE_URL = '$url', OPENAI_MODEL = 'scripted', OPENAI_API_KEY = 'sk-test' },
  chat = { width = 52 },
})
LUA
tmux -S "$sock" new-session -d -x 120 -y 30 -c "$tmp/ws" \
  "env XDG_CONFIG_HOME=$tmp/xdg XDG_DATA_HOME=$tmp/xdg XDG_STATE_HOME=$tmp/xdg $nvim -u $tmp/init.lua -i NONE -n calc/calc.go"
keys() { tmux -S "$sock" send-keys "$@"; sleep 0.6; }
sleep 1.5
keys ':QwenChat' Enter
keys 'Shorten the Add comment and make Scale take a percentage' C-s
# the review arrives without taking the cursor; open it on request
for _ in $(seq 50); do
  tmux -S "$sock" capture-pane -p | grep -q 'review: 2 hunks' && break
  sleep 0.2
done
keys Escape ':QwenReview' Enter
keys '\' 'a'
keys ']h'
tmux -S "$sock" capture-pane -p >"$plugin/media/review-capture.txt"
cat "$plugin/media/review-capture.txt"
