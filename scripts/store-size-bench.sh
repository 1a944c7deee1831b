#!/usr/bin/env bash
# Ingest into a store that already holds millions, against a new store (issue 62, BENCHMARKS.md).
#
#   scripts/store-size-bench.sh STORE... [-- ROUNDS]
#
# For each round: PROBE new postbacks (generate --seed 100+round, 7 days, bench.sh's shape) are
# ingested into a new store, then into a copy of each STORE (BENCH_IN_PLACE=1: into each STORE
# itself, for stores too large to copy; each round then adds its postbacks to it), and each
# rate is printed against the new store's. Make a base store with `postbackd generate` and
# `postbackd ingest` (a store of 20 M takes about 15 minutes to ingest here, 15 GB).
#
# Environment: BENCH_BIN (the postbackd to measure; default a release build of this tree),
# BENCH_PROBE (postbacks per round, default 300000), BENCH_OUT (work folder, default
# bench-out/store-size).
set -euo pipefail
cd "$(dirname "$0")/.."
stores=()
rounds=2
while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then rounds=${2:-2}; break; fi
    stores+=("$(realpath "$1")")
    shift
done
[ ${#stores[@]} -gt 0 ] || { echo "usage: scripts/store-size-bench.sh STORE... [-- ROUNDS]" >&2; exit 2; }
probe=${BENCH_PROBE:-300000}
out=${BENCH_OUT:-bench-out/store-size}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$(realpath "$BENCH_BIN")
else
    scripts/build.sh --product postbackd >&2
    bin=$PWD/.build/release/postbackd
fi
seconds() {
    local started ended
    started=$(date +%s.%N)
    "$bin" ingest --keys Keys/test --db "$1" "$2" >/dev/null 2>&1
    ended=$(date +%s.%N)
    awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.2f", b - a }'
}
trap 'rm -f "$out"/new.sqlite* "$out"/copy.sqlite*' EXIT
for round in $(seq 1 "$rounds"); do
    corpus=$out/probe-$probe-$((100 + round)).jsonl
    [ -s "$corpus" ] || "$bin" generate --key Keys/test/p256-private.pem --seed $((100 + round)) --count "$probe" \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0.02 --invalid 0.01 --apps 20 --networks 8 --days 7 \
        --output "$corpus" >/dev/null
    rm -f "$out"/new.sqlite*
    sync
    empty=$(seconds "$out/new.sqlite" "$corpus")
    line="round $round: new store $empty s"
    for store in "${stores[@]}"; do
        target=$store
        if [ "${BENCH_IN_PLACE:-0}" != 1 ]; then
            rm -f "$out"/copy.sqlite*
            cp "$store" "$out/copy.sqlite"
            target=$out/copy.sqlite
        fi
        sync
        taken=$(seconds "$target" "$corpus")
        line+="; $(basename "$store") ($(sqlite3 "$target" 'SELECT count(*) FROM postbacks') stored after) $taken s, $(awk -v a="$empty" -v b="$taken" 'BEGIN { printf "%.2f", a / b }')×"
    done
    echo "$line"
done
