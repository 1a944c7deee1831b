#!/usr/bin/env bash
# The `serve` benchmark (BENCHMARKS.md): in one run on one machine, the same generated corpus
# through `ingest` (the reference) and POSTed to `serve` by wrk over keep-alive connections on
# 127.0.0.1: the sustained rate, the latency at half of it (a rate-limited client), and the
# server's peak memory with 256 open connections. SQLite, then PostgreSQL beside it.
#
#   scripts/serve-bench.sh [COUNT] [SECONDS]   COUNT postbacks (default 200000), SECONDS per wrk run (default 15)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored), BENCH_POSTGRES (0 to
# skip PostgreSQL). Needs: wrk, GNU time, python3, and for PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-200000}
seconds=${2:-15}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
for tool in wrk python3; do
    command -v "$tool" >/dev/null || { echo "serve-bench.sh: $tool is missing (apt-get install -y $tool)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "serve-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }

swift build -c release --product postbackd >&2
bin=$PWD/.build/release/postbackd
corpus="$out/serve-corpus-$count.jsonl"
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p256-private.pem --count "$count" --seed 17 \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0.02 --invalid 0.01 --apps 20 --networks 8 --days 7 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi
keys=(--keys Keys/test)
threads=2

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
. scripts/bench-postgres.sh
cleanup() {
    stop_server
    bench_postgres_stop
}
trap cleanup EXIT

# start_server DB: starts `serve` on a free port; sets $server_pid and $port.
start_server() {
    # Writes left in the page cache by the previous step would otherwise be flushed during
    # this one, delaying its commits' flushes.
    sync
    local log="$out/serve.out"
    : >"$log"
    "$bin" serve --db "$1" "${keys[@]}" --port 0 --max-connections 512 >"$log" 2>"$out/serve.err" &
    server_pid=$!
    for _ in $(seq 1 300); do
        grep -q '^listening on ' "$log" && break
        sleep 0.1
    done
    port=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$log")
    [ -n "$port" ] || { echo "serve did not start: $(cat "$out/serve.err")" >&2; exit 1; }
}

# load CONNECTIONS DELAY_MS: wrk for $seconds; prints its RESULT line.
load() {
    WRK_CORPUS="$corpus" WRK_THREADS=$threads WRK_DELAY_MS=$2 \
        wrk -t$threads -c"$1" -d"${seconds}s" --timeout 10s -s scripts/wrk-postbacks.lua \
        "http://127.0.0.1:$port" | grep '^RESULT'
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
peak_rss_mib() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# engine NAME DB-MAKER: the three measurements against fresh stores made by DB-MAKER.
engine() {
    local name=$1 make=$2 db started elapsed ingest_rate max p99 rss
    db=$($make ingest)
    started=$(date +%s.%N)
    "$bin" ingest --db "$db" "${keys[@]}" --format json "$corpus" >/dev/null
    elapsed=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$started" "$(date +%s.%N)")
    ingest_rate=$(python3 -c "import sys; print(round(int(sys.argv[1]) / float(sys.argv[2])))" "$count" "$elapsed")
    # PostgreSQL: flush what ingest left dirty now, not during the next measurement.
    [ -z "${settle:-}" ] || $settle

    start_server "$($make max)"
    local cpu_before cpu_after
    cpu_before=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    max=$(load 64 0)
    cpu_after=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    stop_server
    local cpu_us
    cpu_us=$(python3 -c "import sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[4]) * 1e6 / int(sys.argv[3])))" \
        "$cpu_before" "$cpu_after" "$(field requests "$max")" "$(getconf CLK_TCK)")
    local rate
    rate=$(field rate "$max")
    local half=$((rate / 2)) connections=32
    # Each connection waits connections/half seconds between requests: half the maximum in all.
    local pause=$(python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * 1000 / int(sys.argv[2]))))" "$connections" "$half")
    start_server "$($make half)"
    p99=$(load "$connections" "$pause")
    stop_server
    start_server "$($make rss)"
    local wide
    wide=$(load 256 0)
    rss=$(peak_rss_mib "$server_pid")
    stop_server

    echo "| $name | ingest $ingest_rate/s | serve max $rate/s ($(python3 -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.2f}')" "$rate" "$ingest_rate")× ingest), p50 $(field p50_ms "$max") ms, p99 $(field p99_ms "$max") ms, server CPU $cpu_us µs/request | at $(field rate "$p99")/s: p50 $(field p50_ms "$p99") ms, p99 $(field p99_ms "$p99") ms | 256 connections: $(field rate "$wide")/s, p99 $(field p99_ms "$wide") ms, peak RSS $rss MiB |"
    echo "  max: $max" >&2
    echo "  half: $p99" >&2
    echo "  256: $wide" >&2
}

sqlite_db() { local path="$out/serve-$1.sqlite"; rm -f "$path" "$path-wal" "$path-shm"; echo "$path"; }

# The floor under every figure below: what the HTTP stack alone costs. GET /healthz as fast as
# answered (no body, no verification, no store), with the CPU time per request of the server
# (from /proc) and of wrk (GNU time).
floor() {
    start_server "$(sqlite_db floor)"
    local before after result
    before=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    result=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t$threads -c64 -d"${seconds}s" "http://127.0.0.1:$port/healthz"; } 2>&1)
    after=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    stop_server
    python3 - "$result" "$seconds" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import re, sys
result, seconds, before, after, tick = sys.argv[1:]
requests = int(re.search(r"(\d+) requests in", result).group(1))
wrk_user, wrk_sys = map(float, re.search(r"WRKCPU (\S+) (\S+)", result).groups())
server_us = (int(after) - int(before)) / int(tick) * 1e6 / requests
wrk_us = (wrk_user + wrk_sys) * 1e6 / requests
print(f"HTTP floor (GET /healthz, wrk -t2 -c64): {requests / float(seconds):.0f}/s; CPU per request: server {server_us:.0f} µs, wrk {wrk_us:.0f} µs")
PY
}
floor
echo

echo "| engine | ingest (reference) | serve, as fast as answered (wrk -t$threads -c64, ${seconds} s) | serve at half that rate (-c32, rate-limited) | serve with 256 connections |"
echo "|---|---|---|---|---|"
engine SQLite sqlite_db

bench_postgres_wanted || exit 0
bench_postgres_start
pg_db() { bench_postgres_database "serve_$1"; }
settle="psql -X -q $pg_url -c CHECKPOINT"
engine PostgreSQL pg_db
