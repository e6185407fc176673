#!/usr/bin/env bash
# Usage: suite-on-node.sh VERSION
# A clean install and the full suite on Node VERSION, fetched from the npm registry
# (.ci/node-from-registry.sh). A native addon is built against that same Node's headers
# (npm_config_nodedir: this machine's npmrc names the system Node's), never another's.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$1"
SECONDS=0
node_home="$(bash .ci/node-from-registry.sh "$version")"
export PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home"
echo "== the suite on Node $(node --version)"
npm ci --no-audit --no-fund
echo "== Node $version: fetch and install took ${SECONDS} s"
npm test
echo "== Node $version: fetch, install and suite took ${SECONDS} s"
