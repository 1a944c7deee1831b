#!/usr/bin/env bash
# `serve` under overload (issue 62, BENCHMARKS.md): a new SQLite store, 256 keep-alive
# connections sending postbacks as fast as they are answered, and the rate, p99 and maximum
# wrk saw; then the server's own commit histogram and each named thread's CPU time.
#
#   scripts/overload-bench.sh [ROUNDS] [SECONDS]     default 2 rounds of 15 s
#
# Environment: BENCH_BIN (the postbackd to measure), BENCH_OUT (default bench-out/overload),
# BENCH_COUNT (the corpus's postbacks, default 200000), BENCH_STORE (an existing SQLite store
# to serve in every round instead of a new one, to see what a large store costs: it keeps what
# the rounds send, so each round sends a corpus of its own, seeded BENCH_SEED
# plus the round, default 100), BENCH_READER (a statement another connection runs on the store
# over and over while wrk sends, as the dashboard, an export or `reconcile` read beside `serve`;
# needs sqlite3). Needs wrk, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
seconds=${2:-15}
out=${BENCH_OUT:-bench-out/overload}
mkdir -p "$out"
server_pid=
. scripts/serve-bench-lib.sh
serve_bench_prepare overload-bench.sh
if [ -n "${BENCH_READER:-}" ] && ! command -v sqlite3 >/dev/null; then
    echo "overload-bench.sh: BENCH_READER needs sqlite3 (apt-get install -y sqlite3)" >&2
    exit 2
fi
store=${BENCH_STORE:-$out/overload.sqlite}
count=${BENCH_COUNT:-200000}
corpus="$out/corpus-$count.jsonl"
[ -n "${BENCH_STORE:-}" ] || make_corpus "$corpus" "$count" 7 7
keys=(--keys Keys/test)
serve_args=()
trap 'stop_server; [ -z "${reader_pid:-}" ] || kill "$reader_pid" 2>/dev/null' EXIT
for round in $(seq 1 "$rounds"); do
    if [ -n "${BENCH_STORE:-}" ]; then
        corpus="$out/corpus-$count-seed$((${BENCH_SEED:-100} + round)).jsonl"
        make_corpus "$corpus" "$count" $((${BENCH_SEED:-100} + round)) 7
    else
        rm -f "$store"*
    fi
    start_server "$store"
    reader_pid=
    if [ -n "${BENCH_READER:-}" ]; then
        (while :; do sqlite3 "$store" "$BENCH_READER" >/dev/null; done) &
        reader_pid=$!
    fi
    result=$(WRK_CORPUS="$corpus" WRK_THREADS=2 WRK_DELAY_MS=0 wrk -t2 -c256 -d"${seconds}s" --timeout 10s \
        -s scripts/wrk-postbacks.lua "http://127.0.0.1:$port" | grep '^RESULT')
    if [ -n "$reader_pid" ]; then
        kill "$reader_pid" 2>/dev/null || true
        wait "$reader_pid" 2>/dev/null || true
    fi
    commits=$(curl -s "http://127.0.0.1:$port/metrics" | awk '
        /^postbackd_commit_duration_seconds_count/ { n = $2 }
        /^postbackd_commit_duration_seconds_sum/ { s = $2 }
        /^postbackd_commit_group_size_sum/ { g = $2 }
        /^postbackd_commit_duration_seconds_bucket\{le="0.05"\}/ { f = $2 }
        END { if (n > 0) printf "%d commits, %.1f a group, mean %.1f ms, %d under 50 ms", n, g / n, 1000 * s / n, f }')
    threads=$(for task in /proc/"$server_pid"/task/*; do
        echo "$(cat "$task/comm") $(awk '{ print $14 + $15 }' "$task/stat")"
    done | awk '{ c[$1] += $2 } END { for (k in c) if (c[k] > 0) printf "%s %.2f s; ", k, c[k] / 100 }')
    stop_server
    echo "round $round: $result"
    echo "  $commits"
    echo "  CPU: $threads"
done
