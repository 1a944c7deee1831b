#!/usr/bin/env bash
# Every core (issue 62, BENCHMARKS.md): how verify, ingest and serve scale with cores on this
# machine, against OpenSSL's own verify on the same cores, and what each serial thread costs.
#
#   scripts/cores-bench.sh [POSTBACKS]        default 400000
#
# For cores 1, 2, 4, … up to nproc (and nproc itself), pinned with taskset to the first ones:
# `openssl speed -multi N ecdsap256`, `verify --format json` and `ingest` into an empty SQLite
# store, each as a rate; then, on all cores, each serial thread's CPU per postback
# (scripts/thread-cpu.py: pbd-reader, pbd-writer, pbd-output, pbd-checkpoint) for ingest and
# verify. Where the machine has cores to spare (nproc ≥ 2N), `serve` on N cores against wrk on
# the others, at 256 connections: the rate, p99 and maximum. One corpus (generate --seed 9,
# versions 2.1, 3.0, 4.0, 2% duplicates, 1% invalid) for all.
#
# Environment: BENCH_OUT (work folder, default bench-out/cores), BENCH_BIN (the postbackd to
# measure instead of a release build of this tree), BENCH_CORES ("1 2 4" to choose),
# BENCH_SERVE=0 to skip serve. Needs: taskset, openssl, python3; wrk for serve.
# ../shared/tools/device-scale/ packs a static build with wrk and openssl for a machine that has
# none of them, and prints the rates of this table there.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-400000}
out=${BENCH_OUT:-bench-out/cores}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for tool in taskset openssl python3; do
    command -v "$tool" >/dev/null || { echo "cores-bench.sh: $tool is missing" >&2; exit 2; }
done
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
else
    scripts/build.sh --product postbackd >&2
    bin=$PWD/.build/release/postbackd
fi
cores=$(nproc)
if [ -n "${BENCH_CORES:-}" ]; then
    counts=($BENCH_CORES)
else
    counts=()
    c=1
    while [ "$c" -lt "$cores" ]; do counts+=("$c"); c=$((c * 2)); done
    counts+=("$cores")
fi
corpus=$out/corpus-$n.jsonl
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p256-private.pem --count "$n" --seed 9 --versions 2.1,3.0,4.0 \
        --duplicates 0.02 --invalid 0.01 --output "$corpus.tmp" >/dev/null
    mv "$corpus.tmp" "$corpus"
fi
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
pin() { taskset -c "0-$(($1 - 1))" "${@:2}"; }

echo "machine: $cores cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $n postbacks; $("$bin" --version)"
echo
echo "| cores | openssl verify | verify | × openssl | ingest (SQLite) | × one core |"
echo "|---:|---:|---:|---:|---:|---:|"
one=
for c in "${counts[@]}"; do
    o=$(pin "$c" openssl speed -seconds 2 -multi "$c" ecdsap256 2>/dev/null | awk '/256 bits ecdsa/ { print $NF }')
    o=${o%.*}
    s=$(now)
    pin "$c" "$bin" verify --format json --keys Keys/test "$corpus" >/dev/null 2>&1 || true
    v=$(rate "$n" "$s" "$(now)")
    rm -f "$out"/ingest.sqlite*
    s=$(now)
    pin "$c" "$bin" ingest --keys Keys/test --db "$out/ingest.sqlite" "$corpus" >/dev/null 2>&1 || true
    i=$(rate "$n" "$s" "$(now)")
    [ -z "$one" ] && one=$i
    echo "| $c | ${o}/s | ${v}/s | $(awk -v a="$v" -v b="$o" 'BEGIN { printf "%.2f", a / b }') | ${i}/s | $(awk -v a="$i" -v b="$one" 'BEGIN { printf "%.2f", a / b }') |"
done
rm -f "$out"/ingest.sqlite*
echo
echo "Serial threads, all $cores cores (CPU per postback):"
echo "ingest (SQLite):"
scripts/thread-cpu.py "$n" "$bin" ingest --keys Keys/test --db "$out/ingest.sqlite" "$corpus"
rm -f "$out"/ingest.sqlite*
echo "verify --format json:"
scripts/thread-cpu.py "$n" "$bin" verify --format json --keys Keys/test "$corpus"

if [ "${BENCH_SERVE:-1}" != 0 ] && command -v wrk >/dev/null; then
    port=$((20000 + RANDOM % 20000))
    for c in "${counts[@]}"; do
        [ $((c * 2)) -le "$cores" ] || continue
        rm -f "$out"/serve.sqlite*
        # taskset itself in the background (not the pin function's subshell), so that $! is serve.
        taskset -c "0-$((c - 1))" "$bin" serve --db "$out/serve.sqlite" --keys Keys/test --host 127.0.0.1 \
            --port "$port" >"$out/serve.log" 2>&1 &
        pid=$!
        for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
        result=$(WRK_CORPUS="$corpus" WRK_THREADS="$c" taskset -c "$c-$((cores - 1))" wrk -t"$c" -c256 -d12s \
            --latency -s scripts/wrk-postbacks.lua "http://127.0.0.1:$port" 2>&1 || true)
        kill -TERM "$pid"
        wait "$pid" || true
        echo "serve on $c cores, 256 connections: $(echo "$result" | awk '/Requests\/sec/ { print $2 }')/s," \
            "p99 $(echo "$result" | awk '/ 99%/ { print $2 }'), max $(echo "$result" | awk '/Latency/ { print $4; exit }')"
        port=$((port + 1))
    done
fi
rm -f "$out"/serve.sqlite*
