#!/usr/bin/env bash
# `serve` with PostgreSQL behind a bad network (BENCHMARKS.md): the database in a network
# namespace of this machine (scripts/netem.sh), `serve` on 127.0.0.1 loaded by wrk, once per
# condition: the direct link, the relay without delay (the reference for the delays where the
# kernel has no sch_netem), 10 ms and 50 ms each way, and 1% loss each way. Each line: the
# rate, p50 and p99 with 64 connections as fast as answered, then at half that rate; and
# every request answered (wrk's errors and non-2xx).
#
#   sudo scripts/network-bench.sh [COUNT] [SECONDS]   COUNT postbacks (default 200000), SECONDS per wrk run (default 15)
#
# Environment: BENCH_OUT (work folder, default bench-out/). Needs root, wrk, python3,
# iproute2, nftables, Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-200000}
seconds=${2:-15}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
export POSTBACKD_NETEM_DIR="$out/netem"
. scripts/serve-bench-lib.sh
cleanup() {
    stop_server
    scripts/netem.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT
serve_bench_prepare network-bench.sh
corpus="$out/serve-corpus-$count.jsonl"
make_corpus "$corpus" "$count" 17 7
keys=(--keys Keys/test)
serve_args=()
threads=2

scripts/netem.sh down >/dev/null 2>&1 || true
relay_url=$(scripts/netem.sh up 2>/dev/null)
# The same database without the relay: the namespace's address, the cluster's own port.
direct_url=${relay_url%:*}:$(cat "$POSTBACKD_NETEM_DIR/pg/port")/${relay_url##*/}
# database URL: a new, empty database, named by the clock (called in a subshell); its URL
# through URL's server.
database() {
    local name=netbench_$(date +%s%N)
    psql -X -q "$direct_url" -c "CREATE DATABASE $name" >/dev/null
    echo "${1%/*}/$name"
}

# condition NAME URL: a line of the table.
condition() {
    local name=$1 url=$2 max half pause
    start_server "$(database "$url")"
    max=$(load 64 0)
    stop_server
    pause=$(half_pause 32 "$(field rate "$max")")
    start_server "$(database "$url")"
    half=$(load 32 "$pause")
    stop_server
    echo "| $name | $(field rate "$max")/s, p50 $(field p50_ms "$max") ms, p99 $(field p99_ms "$max") ms | $(field rate "$half")/s: p50 $(field p50_ms "$half") ms, p99 $(field p99_ms "$half") ms, max $(field max_ms "$half") ms | $(($(field errors "$max") + $(field errors "$half"))) / $(($(field status_4xx_5xx "$max") + $(field status_4xx_5xx "$half"))) |"
    echo "  $name max: $max" >&2
    echo "  $name half: $half" >&2
}

echo "| link to PostgreSQL | as fast as answered (wrk -t$threads -c64, ${seconds} s) | at half that rate (-c32, rate-limited) | errors / non-2xx |"
echo "|---|---|---|---|"
condition "veth, direct" "$direct_url"
condition "veth + relay, no delay" "$relay_url"
scripts/netem.sh delay 10
condition "10 ms each way (RTT +20 ms)" "$relay_url"
scripts/netem.sh delay 50
condition "50 ms each way (RTT +100 ms)" "$relay_url"
scripts/netem.sh heal
scripts/netem.sh loss 1
condition "1% loss each way" "$relay_url"
scripts/netem.sh heal
