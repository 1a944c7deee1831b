#!/usr/bin/env bash
# Builds PostbackKit's DocC catalog (Sources/PostbackKit/PostbackKit.docc) against the public
# symbols and fails on any warning: a link to a symbol that is not public, a topic that names
# nothing. With an argument, writes the documentation archive there.
#
#   scripts/docc-check.sh [OUTPUT.doccarchive]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# PostbackKit's public symbols, extracted from the module the build made (scripts/build.sh; built
# here when missing): `swift package dump-symbol-graph` would give the same graph for every
# module of the package, minutes of work for the one module the catalog documents.
scripts/build.sh --target PostbackKit >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 2; }
modules="$(scripts/build.sh --show-bin-path)/Modules"
[ -f "$modules/PostbackKit.swiftmodule" ] || { echo "docc-check: no PostbackKit module in $modules" >&2; exit 2; }
mkdir "$work/symbols"
extract=$(command -v swift-symbolgraph-extract || echo "$(dirname "$(readlink -f "$(command -v swift)")")/swift-symbolgraph-extract")
"$extract" -module-name PostbackKit -target "$(uname -m)-unknown-linux-gnu" -I "$modules" \
    -Xcc -fmodule-map-file="$PWD/Sources/CPostbackdOpenSSL/module.modulemap" \
    -Xcc -fmodule-map-file="$PWD/Sources/CPostbackdCompression/module.modulemap" \
    -minimum-access-level public -output-dir "$work/symbols"
docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
"$docc" convert Sources/PostbackKit/PostbackKit.docc --additional-symbol-graph-dir "$work/symbols" \
    --fallback-display-name PostbackKit --fallback-bundle-identifier PostbackKit \
    --output-path "${1:-$work/PostbackKit.doccarchive}" --warnings-as-errors --analyze
echo "PostbackKit's DocC catalog builds without a warning"
