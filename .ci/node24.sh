#!/usr/bin/env bash
# The full suite on Node 24 LTS, beside the machine's Node: a clean install in a copy of the tree
# with a node_modules of its own (better-sqlite3 is a native addon, built for one Node ABI).
# Skipped when the machine's Node is already 24.
#
# Both Nodes come from the npm registry (.ci/node-from-registry.sh). better-sqlite3 12 is built
# against Node 24.18.1's headers, then run on the newest 24: from 24.19.0 on, node::ObjectWrap in
# the headers registers cleanup hooks, and an addon built with them aborts the process when one
# of its objects (a prepared statement) is garbage-collected with no context entered
# (nodejs/node#65446; seen here at start and in the store tests). The ABI (137) is the same.
# better-sqlite3 13 (Node-API) has no such issue but needs Node 22+, and the machine runs 20.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE24_VERSION=24.21.0
NODE24_HEADERS_VERSION=24.18.1

if [ "$(node -p 'process.versions.node.split(".")[0]')" = 24 ]; then
  echo "== the machine's Node is 24: the suite already ran on it"
  exit 0
fi
SECONDS=0
node24="$(bash .ci/node-from-registry.sh "$NODE24_VERSION")"
headers="$(bash .ci/node-from-registry.sh "$NODE24_HEADERS_VERSION")"
copy="$(mktemp -d "${TMPDIR:-/tmp}/belfry-ci-node24-XXXXXX")"
trap 'rm -rf "$copy"' EXIT
tar --exclude=./node_modules --exclude=./.git --exclude=./belfry-data --exclude=./.tmp -cf - . | tar -xf - -C "$copy"
echo "== the suite on Node $("$node24/bin/node" --version) (addons built with v$NODE24_HEADERS_VERSION headers), in $copy"
cd "$copy"
# npm_config_nodedir: node-gyp builds against these headers (the machine's npmrc names the system Node's).
export PATH="$node24/bin:$PATH" npm_config_nodedir="$headers"
npm ci --no-audit --no-fund
echo "== Node 24: fetch and install took ${SECONDS} s"
npm test
echo "== Node 24: fetch, install and suite took ${SECONDS} s"
