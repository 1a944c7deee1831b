#!/usr/bin/env bash
# The dashboard benchmark (BENCHMARKS.md): a year of aggregated postbacks, then wrk against
# `serve`'s reading routes on 127.0.0.1, one connection at a time (a person at a browser, an
# API client), SQLite then PostgreSQL. The budget is 200 ms per answer.
#
#   scripts/dashboard-bench.sh [COUNT [SECONDS]]   COUNT postbacks over 365 days (default
#                                                  1,000,000), SECONDS per wrk run (default 10)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored; the corpus is kept there
# and reused), BENCH_POSTGRES (0 to skip PostgreSQL). Needs: wrk, GNU time, python3, and for
# PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-1000000}
seconds=${2:-10}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
. scripts/serve-bench-lib.sh
serve_bench_prepare dashboard-bench.sh
keys=()
serve_args=()

# A year: 8 networks and the four apps of the samples (the seed gives their ids, so the sample
# models decode them and there is revenue).
corpus="$out/dashboard-year-$count.jsonl"
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p192-private.pem --key Keys/test/p256-private.pem \
        --versions 1.0,2.0,2.1,2.2,3.0,4.0 --count "$count" --days 365 --seed 2026 --apps 4 --networks 8 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi

# prepare DB: ingests the year, adds the models, aggregates; prints the row counts.
prepare() {
    "$bin" ingest --db "$1" --keys Keys/test "$corpus" >/dev/null
    "$bin" models add --db "$1" SamplePostbacks/models/*.json >/dev/null
    "$bin" aggregate --db "$1" | head -1
}

# The routes, as a browser and an API client ask for them. The last day of the corpus is its
# `to`; a year back is its `from`.
routes() {
    local last=$1 first=$2
    cat <<EOF
dashboard, default (30 days)|/dashboard
dashboard, the whole year|/dashboard?from=$first&to=$last
dashboard, the year by install date|/dashboard?from=$first&to=$last&date_basis=install
summary, the whole year|/api/v1/summary?from=$first&to=$last
report, default (date,ad_network_id, every day)|/api/v1/report
report by app_id,ad_network_id, the year|/api/v1/report?by=app_id,ad_network_id&from=$first&to=$last
report by date,country_code, the year (detailed rows)|/api/v1/report?by=date,country_code&from=$first&to=$last
EOF
}

# measure ENGINE DB: serves DB and runs wrk (1 thread, 1 connection) per route; one line each.
measure() {
    local engine=$1 db=$2
    start_server "$db"
    local last first
    last=$(curl -sf "http://127.0.0.1:$port/api/v1/summary" | python3 -c 'import json,sys; print(json.load(sys.stdin)["to"])')
    first=$(python3 -c "import datetime,sys; print(datetime.date.fromisoformat('$last') - datetime.timedelta(days=364))")
    while IFS='|' read -r name path; do
        local bytes
        bytes=$(curl -sf -o /dev/null -w '%{size_download}' "http://127.0.0.1:$port$path")
        wrk -t1 -c1 -d"${seconds}s" --timeout 10s --latency "http://127.0.0.1:$port$path" >"$out/wrk.txt"
        python3 - "$engine" "$name" "$bytes" "$out/wrk.txt" <<'PY'
import re, sys
engine, name, size, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = open(path).read()
def ms(value):
    number, unit = re.match(r"([\d.]+)(us|ms|s)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
p50 = ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
top = ms(re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", text, re.M).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"| {engine} | {name} | {size / 1024:.0f} KiB | {p50:.1f} | {p99:.1f} | {top:.1f} | {rate:.1f} |"
      + (f" {errors.group(1)} errors" if errors else ""))
PY
    done < <(routes "$last" "$first")
    stop_server
}

echo "| engine | route | answer | p50 ms | p99 ms | max ms | requests/s |"
echo "|---|---|---:|---:|---:|---:|---:|"
sqlite="$out/dashboard-year.sqlite"
if [ ! -s "$sqlite" ]; then
    rm -f "$sqlite" "$sqlite-wal" "$sqlite-shm"
    prepare "$sqlite" >&2
fi
measure SQLite "$sqlite"
if bench_postgres_wanted; then
    bench_postgres_start
    db=$(bench_postgres_database dashboard)
    prepare "$db" >&2
    measure PostgreSQL "$db"
fi
