#!/usr/bin/env bash
# The dashboard benchmark (BENCHMARKS.md): a year of aggregated postbacks, then wrk against
# `serve`'s reading routes on 127.0.0.1, one connection at a time (a person at a browser, an
# API client), SQLite then PostgreSQL. The budget is 200 ms per answer.
#
#   scripts/dashboard-bench.sh [COUNT [SECONDS]]   COUNT postbacks over 365 days (default
#                                                  1,000,000), SECONDS per wrk run (default 10)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored; the corpus is kept there
# and reused), BENCH_POSTGRES (0 to skip PostgreSQL), BENCH_COSTS (0 to skip the routes with a
# year of spend, measured after the others on the same store), BENCH_CLAIMS (0 to skip the
# reports with a year of claims, measured last). Needs: wrk, GNU time, python3, and for
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

# The routes once costs are stored (`with_costs`): the same reports, now with spend, CPI and
# ROAS; a report converted into one currency day by day; the dashboard with its spend panel.
cost_routes() {
    local last=$1 first=$2
    cat <<EOF
report, default, with costs|/api/v1/report
report by app_id,ad_network_id, the year, with costs|/api/v1/report?by=app_id,ad_network_id&from=$first&to=$last
report by ad_network_id, the year, with costs, in USD|/api/v1/report?by=ad_network_id&from=$first&to=$last&currency=USD
dashboard, the whole year, with the spend panel in USD|/dashboard?from=$first&to=$last&currency=USD
EOF
}

# The report routes by install date once claims are stored (`with_claims`), beside the same
# report without them: what a year of claims costs a report.
claim_routes() {
    local last=$1 first=$2
    cat <<EOF
report by install_date,ad_network_id, the year, without claims|/api/v1/report?by=install_date,ad_network_id&date_basis=install&from=$first&to=$last
report by install_date,ad_network_id, the year, with claims|/api/v1/report?by=install_date,ad_network_id&date_basis=install&from=$first&to=$last&with_claims=true
report by ad_network_id, the year, with claims|/api/v1/report?by=ad_network_id&date_basis=install&from=$first&to=$last&with_claims=true
report by install_date,country_code, the year, with claims|/api/v1/report?by=install_date,country_code&date_basis=install&from=$first&to=$last&with_claims=true
EOF
}

# with_claims DB: stores a year of claims by install date (every day, app and network of the
# store, split over five countries: the network's verified installs, give or take a tenth).
# Idempotent.
with_claims() {
    "$bin" report --db "$1" --date-basis install --by install_date,app_id,ad_network_id --format csv | python3 -c '
import csv, random, sys
random.seed(61)
rows = list(csv.DictReader(sys.stdin))
with open(sys.argv[1], "w") as claims:
    claims.write("date,app_id,ad_network_id,country_code,installs,date_basis\n")
    for r in rows:
        if not r["app_id"] or not r["install_date"]:
            continue
        installs = int(r["installs"])
        for country in ["US", "DE", "GB", "FR", "JP"]:
            claimed = int(installs / 5 * random.uniform(0.9, 1.1))
            claims.write(",".join([r["install_date"], r["app_id"], r["ad_network_id"], country, str(claimed), "install"]) + "\n")
' "$out/claims.csv"
    "$bin" claims add --db "$1" "$out/claims.csv" >&2
}

# with_costs DB: stores a year of spend (every day, app and network of the store: the first
# app's in EUR, the others' in USD) and daily EUR→USD and USD→JPY rates. Idempotent.
with_costs() {
    "$bin" report --db "$1" --by date,app_id,ad_network_id --format csv | python3 -c '
import csv, random, sys
random.seed(37)
rows = list(csv.DictReader(sys.stdin))
apps = sorted({r["app_id"] for r in rows if r["app_id"]})
with open(sys.argv[1], "w") as spend, open(sys.argv[2], "w") as rates:
    spend.write("date,app_id,ad_network_id,spend,currency\n")
    for r in rows:
        if not r["app_id"]:
            continue
        currency = "EUR" if r["app_id"] == apps[0] else "USD"
        amount = "%d.%02d" % (random.randint(50, 5000), random.randint(0, 99))
        spend.write(",".join([r["date"], r["app_id"], r["ad_network_id"], amount, currency]) + "\n")
    rates.write("date,base,quote,rate\n")
    for day in sorted({r["date"] for r in rows}):
        rates.write("%s,EUR,USD,%.4f\n%s,USD,JPY,%.2f\n" % (day, 1.05 + random.random() / 20, day, 145 + random.random() * 10))
' "$out/spend.csv" "$out/rates.csv"
    "$bin" costs add --db "$1" "$out/spend.csv" >&2
    "$bin" rates add --db "$1" "$out/rates.csv" >&2
}

# measure ENGINE DB [ROUTES]: serves DB and runs wrk (1 thread, 1 connection) per route of
# ROUTES (a function; default routes); one line each.
measure() {
    local engine=$1 db=$2 list=${3:-routes}
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
    done < <("$list" "$last" "$first")
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
if [ "${BENCH_COSTS:-1}" = 1 ]; then
    with_costs "$sqlite"
    measure SQLite "$sqlite" cost_routes
fi
if [ "${BENCH_CLAIMS:-1}" = 1 ]; then
    with_claims "$sqlite"
    measure SQLite "$sqlite" claim_routes
fi
if bench_postgres_wanted; then
    bench_postgres_start
    db=$(bench_postgres_database dashboard)
    prepare "$db" >&2
    measure PostgreSQL "$db"
    if [ "${BENCH_COSTS:-1}" = 1 ]; then
        with_costs "$db"
        measure PostgreSQL "$db" cost_routes
    fi
    if [ "${BENCH_CLAIMS:-1}" = 1 ]; then
        with_claims "$db"
        measure PostgreSQL "$db" claim_routes
    fi
fi
