#!/usr/bin/env bash
# The soak (BENCHMARKS.md): `serve` at half its measured maximum for MINUTES, one engine, with
# each minute's rate, p50 and p99 (wrk in one-minute runs back to back, rate-limited), and
# between them the server's resident memory, its open file descriptors and (PostgreSQL) the
# server's connections to the database. Flat columns are what it is for.
#
#   scripts/soak.sh MINUTES sqlite|postgres [COUNT]   COUNT postbacks in the corpus (default 1000000)
#
# Each minute sends its own part of the corpus, about COUNT / MINUTES lines, in order, and wraps
# around within it when it sends more: the postbacks sent again are duplicates (still
# answered, counted and verified, not stored again). With COUNT at least what a minute sends
# (about a quarter of the maximum rate × 60) × MINUTES, every minute stores new postbacks. Each
# minute's wrk holds only its part: wrk's own pauses grow with the lines it holds (about 0.4 s
# once per run with a million, 8 ms with 20,000: measured on GET /healthz), and would be
# counted as the server's latency. Environment: BENCH_OUT
# (work folder, default bench-out/), SOAK_RATE (the maximum to take half of; measured for
# 15 s when unset). Needs wrk, python3, GNU time, and for PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:?usage: scripts/soak.sh MINUTES sqlite|postgres [COUNT]}
engine=${2:?usage: scripts/soak.sh MINUTES sqlite|postgres [COUNT]}
count=${3:-1000000}
[ "$count" -ge $((minutes * 1000)) ] || { echo "soak.sh: COUNT must be at least 1000 a minute" >&2; exit 2; }
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
seconds=15
. scripts/serve-bench-lib.sh
serve_bench_prepare soak.sh
corpus="$out/soak-corpus-$count.jsonl"
make_corpus "$corpus" "$count" 23 30
keys=(--keys Keys/test)
serve_args=()
threads=2

case "$engine" in
sqlite)
    db() { local path="$out/soak-$1.sqlite"; rm -f "$path" "$path-wal" "$path-shm"; echo "$path"; }
    connections() { echo -; }
    ;;
postgres)
    bench_postgres_start
    db() { bench_postgres_database "soak_$1"; }
    connections() {
        psql -X -At "$pg_url" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'soak_run'"
    }
    ;;
*) echo "usage: scripts/soak.sh MINUTES sqlite|postgres [COUNT]" >&2; exit 2 ;;
esac

rate=${SOAK_RATE:-}
if [ -z "$rate" ]; then
    start_server "$(db max)"
    rate=$(field rate "$(load 64 0)")
    stop_server
fi
pause=$(half_pause 32 "$rate")
rm -f "$out"/soak-part-*
trap 'cleanup; rm -f "$out"/soak-part-*' EXIT
# About COUNT / MINUTES lines each (split cuts by bytes, at line ends).
split -n "l/$minutes" -d -a 4 "$corpus" "$out/soak-part-"
parts=("$out"/soak-part-*)
start_server "$(db run)"
echo "$engine: maximum $rate/s; $minutes minutes at half (32 connections, ${pause} ms between a connection's requests)"
echo
echo "| minute | rate | p50 | p99 | max | errors / non-2xx | RSS | open files | database connections |"
echo "|---|---|---|---|---|---|---|---|---|"
seconds=60
for minute in $(seq 1 "$minutes"); do
    corpus=${parts[$((minute - 1))]}
    result=$(load 32 "$pause")
    rss=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$server_pid/status")
    files=$(ls "/proc/$server_pid/fd" | wc -l)
    echo "| $minute | $(field rate "$result")/s | $(field p50_ms "$result") ms | $(field p99_ms "$result") ms | $(field max_ms "$result") ms | $(field errors "$result") / $(field status_4xx_5xx "$result") | $rss MiB | $files | $(connections) |"
done
echo
echo "peak RSS $(peak_rss_mib "$server_pid") MiB"
