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
swift package dump-symbol-graph --minimum-access-level public >"$work/dump.log" 2>&1 || { cat "$work/dump.log" >&2; exit 2; }
mkdir "$work/symbols"
cp "$(swift build --show-bin-path)/../symbolgraph/"PostbackKit*.symbols.json "$work/symbols/"
docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
"$docc" convert Sources/PostbackKit/PostbackKit.docc --additional-symbol-graph-dir "$work/symbols" \
    --fallback-display-name PostbackKit --fallback-bundle-identifier PostbackKit \
    --output-path "${1:-$work/PostbackKit.doccarchive}" --warnings-as-errors --analyze
echo "PostbackKit's DocC catalog builds without a warning"
