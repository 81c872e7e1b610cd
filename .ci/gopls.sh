# Sourced by the parts whose tests start gopls (.ci/go; the editor parts
# may use it too): puts gopls v0.23.0 first on PATH. The language-server
# tests (tools/langserver, rpc/lsp_gopls_test.go, cmd/qwen-ls/lsp_test.go)
# skip without gopls, so CI installs it rather than skip them.
#
# It is built with `go install` at the pinned version into .ci/.bin
# (gitignored, kept between runs), and replaced when a binary there was
# built from another version. v0.24.0 needs a newer Go than 1.26. The
# build takes about a minute the first time.
ensure_gopls() {
  local bin; bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.bin
  local want=v0.23.0
  if ! go version -m "$bin/gopls" 2>/dev/null | awk -v v="$want" '$1 == "mod" && $3 == v { ok = 1 } END { exit !ok }'; then
    echo "== installing gopls $want"
    GOBIN="$bin" go install "golang.org/x/tools/gopls@$want" || return 1
  fi
  export PATH="$bin:$PATH"
  echo "gopls: $(gopls version 2>/dev/null | head -1)"
}
