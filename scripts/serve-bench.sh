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
. scripts/serve-bench-lib.sh
serve_bench_prepare serve-bench.sh
corpus="$out/serve-corpus-$count.jsonl"
make_corpus "$corpus" "$count" 17 7
keys=(--keys Keys/test)
serve_args=()
threads=2

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
    max=$(load_cpu 64 0)
    stop_server
    local cpu_us rate
    cpu_us=$(field cpu_us "$max")
    rate=$(field rate "$max")
    local connections=32
    # Each connection waits connections/half seconds between requests: half the maximum in all.
    local pause
    pause=$(half_pause "$connections" "$rate")
    start_server "$($make half)"
    p99=$(load "$connections" "$pause")
    stop_server
    start_server "$($make rss)"
    local wide
    wide=$(load 256 0)
    rss=$(peak_rss_mib "$server_pid")
    stop_server

    echo "| $name | ingest $ingest_rate/s | serve max $rate/s ($(ratio "$rate" "$ingest_rate")× ingest, $(ratio "$rate" "$floor_rate")× serve's floor$([ -z "$floor_nginx" ] || echo ", $(ratio "$rate" "$floor_nginx")× nginx's")), p50 $(field p50_ms "$max") ms, p99 $(field p99_ms "$max") ms, server CPU $cpu_us µs/request | at $(field rate "$p99")/s: p50 $(field p50_ms "$p99") ms, p99 $(field p99_ms "$p99") ms | 256 connections: $(field rate "$wide")/s, p99 $(field p99_ms "$wide") ms, peak RSS $rss MiB |"
    echo "  max: $max" >&2
    echo "  half: $p99" >&2
    echo "  256: $wide" >&2
}

sqlite_db() { local path="$out/serve-$1.sqlite"; rm -f "$path" "$path-wal" "$path-shm"; echo "$path"; }

floor
echo
ratio() { python3 -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.2f}')" "$1" "$2"; }

echo "| engine | ingest (reference) | serve, as fast as answered (wrk -t$threads -c64, ${seconds} s) | serve at half that rate (-c32, rate-limited) | serve with 256 connections |"
echo "|---|---|---|---|---|"
engine SQLite sqlite_db

bench_postgres_wanted || exit 0
bench_postgres_start
pg_db() { bench_postgres_database "serve_$1"; }
settle="psql -X -q $pg_url -c CHECKPOINT"
engine PostgreSQL pg_db
