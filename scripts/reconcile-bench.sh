#!/usr/bin/env bash
# The reconciliation benchmark (issue 60; BENCHMARKS.md): a year of postbacks as devices copied
# them and eight networks forwarded them, then `aggregate` (which counts reconcile_daily beside
# its own work), `reconcile --by date,ad_network_id` over the year from aggregate's rows and from
# the postbacks themselves (--live), and serve's /dashboard (with its networks panel) and
# /api/v1/reconcile for the year, one connection at a time. SQLite, then PostgreSQL.
#
#   scripts/reconcile-bench.sh [COUNT [SECONDS]]   COUNT postbacks over 365 days (default
#                                                  1,000,000), SECONDS per wrk run (default 10)
#
# The copies: every winning postback of 2.0 and later (Apple copies no other), but one in 25.
# The forwards: every postback but one in 30, each network's in a file ingested on its own
# channel; one in 20 with its fine value raised, one in 33 without its value.
# Environment: BENCH_OUT (default bench-out/), BENCH_POSTGRES (0 to skip PostgreSQL), BENCH_SQLITE (0
# to skip SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-1000000}
seconds=${2:-10}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
. scripts/serve-bench-lib.sh
serve_bench_prepare reconcile-bench.sh
keys=()
serve_args=()

corpus="$out/reconcile-year-$count.jsonl"
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p192-private.pem --key Keys/test/p256-private.pem \
        --versions 2.0,2.1,2.2,3.0,4.0 --count "$count" --days 365 --seed 2026 --apps 4 --networks 8 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi
sides="$out/reconcile-sides-$count"
if [ ! -s "$sides/copies.jsonl" ]; then
    rm -rf "$sides"
    mkdir -p "$sides"
    python3 - "$corpus" "$sides" <<'PY'
import json, sys
corpus, folder = sys.argv[1], sys.argv[2]
copies = open(f"{folder}/copies.jsonl", "w")
forwards = {}
for index, line in enumerate(open(corpus), start=1):
    line = line.rstrip("\n")
    try:
        postback = json.loads(line)
    except ValueError:
        continue
    network = str(postback.get("ad-network-id", "unknown"))
    if postback.get("did-win", True) and postback.get("version", "1.0") != "1.0" and index % 25:
        copies.write(line + "\n")
    if index % 30 == 0:
        continue
    if index % 20 == 0 and isinstance(postback.get("conversion-value"), int):
        postback["conversion-value"] = min(63, postback["conversion-value"] + 5)
        line = json.dumps(postback, separators=(",", ":"))
    elif index % 33 == 0:
        postback.pop("conversion-value", None)
        line = json.dumps(postback, separators=(",", ":"))
    channel = network.split(".")[0].lower()[:40] or "unknown"
    if channel not in forwards:
        forwards[channel] = open(f"{folder}/forwards-{channel}.jsonl", "w")
    forwards[channel].write(line + "\n")
PY
fi

# prepare DB: the copies on device, each network's forwards on its channel, the models, then
# aggregate, timed.
prepare() {
    "$bin" ingest --db "$1" --keys Keys/test --channel device "$sides/copies.jsonl" >/dev/null
    for file in "$sides"/forwards-*.jsonl; do
        local channel
        channel=$(basename "$file" .jsonl)
        "$bin" ingest --db "$1" --keys Keys/test --channel "${channel#forwards-}" "$file" >/dev/null
    done
    "$bin" models add --db "$1" SamplePostbacks/models/*.json >/dev/null
    /usr/bin/time -f '%e %M' -o "$out/reconcile-aggregate.time" "$bin" aggregate --db "$1" >/dev/null
    echo "aggregate (with reconcile's counts): $(cut -d' ' -f1 "$out/reconcile-aggregate.time") s, peak $(($(cut -d' ' -f2 "$out/reconcile-aggregate.time") / 1024)) MiB" >&2
}

# seconds COMMAND…: the median wall seconds of 5 runs.
seconds_of() {
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f '%e' -o "$out/one.time" "$@" >/dev/null 2>&1
        cat "$out/one.time"
    done | sort -n | sed -n 3p
}

measure() {
    local engine=$1 db=$2
    local last first as_of
    last=$("$bin" reconcile --db "$db" --by date --format csv | tail -1 | cut -d, -f1)
    first=$(python3 -c "import datetime; print(datetime.date.fromisoformat('$last') - datetime.timedelta(days=364))")
    as_of=$(python3 -c "import datetime; print(datetime.date.fromisoformat('$last') + datetime.timedelta(days=3))")
    echo "| $engine | reconcile --by date,ad_network_id, the year, from aggregate's rows (median of 5, whole process) | $(seconds_of "$bin" reconcile --db "$db" --by date,ad_network_id --from "$first" --to "$last" --as-of "$as_of") s |"
    echo "| $engine | the same --live, from the postbacks (median of 5) | $(seconds_of "$bin" reconcile --db "$db" --live --by date,ad_network_id --from "$first" --to "$last" --as-of "$as_of") s |"
    echo "| $engine | reconcile of one row of totals, the year (median of 5) | $(seconds_of "$bin" reconcile --db "$db" --by "" --from "$first" --to "$last" --as-of "$as_of") s |"
    start_server "$db"
    for path in "/dashboard?from=$first&to=$last" "/api/v1/reconcile?by=date,ad_network_id&from=$first&to=$last" \
        "/api/v1/reconcile?by=ad_network_id,channel&from=$first&to=$last&as_of=$as_of"; do
        wrk -t1 -c1 -d"${seconds}s" --timeout 10s --latency "http://127.0.0.1:$port$path" >"$out/wrk.txt"
        python3 - "$engine" "$path" "$out/wrk.txt" <<'PY'
import re, sys
engine, path, text = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
def ms(value):
    number, unit = re.match(r"([\d.]+)(us|ms|s)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
p50 = ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"| {engine} | GET {path.split('?')[0]}?{path.split('?')[1][:40]}… | p50 {p50:.1f} ms, p99 {p99:.1f} ms |" + (f" {errors.group(1)} errors" if errors else ""))
PY
    done
    stop_server
    echo "| $engine | reconcile_daily rows | $("$bin" reconcile --db "$db" --by date,ad_network_id,app_id,kind,postback_sequence_index,channel,campaign --format csv | wc -l) (by every dimension) |"
}

echo "| engine | what | figure |"
echo "|---|---|---|"
sqlite="$out/reconcile-year-$count.sqlite"
if [ "${BENCH_SQLITE:-1}" = 1 ]; then
    if [ ! -s "$sqlite" ]; then
        rm -f "$sqlite" "$sqlite-wal" "$sqlite-shm"
        prepare "$sqlite"
    fi
    measure SQLite "$sqlite"
fi
if bench_postgres_wanted; then
    bench_postgres_start
    db=$(bench_postgres_database reconcile)
    prepare "$db"
    measure PostgreSQL "$db"
fi
