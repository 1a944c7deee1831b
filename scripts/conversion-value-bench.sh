#!/usr/bin/env bash
# The conversion value benchmark (BENCHMARKS.md): wrk against `serve`'s two conversion value
# routes over keep-alive connections on 127.0.0.1, beside the HTTP floor (GET /healthz) in the
# same run: the rate as fast as answered, with the server's CPU per request, and the latency at
# half that rate (a rate-limited client).
#
#   POST /v1/conversion-value      stateless: a state in, an answer out (the game sample model)
#   GET /api/v2/conversion_value   the client snippet's protocol: each call records the device's
#                                  event durably (SQLite, then PostgreSQL)
#
#   scripts/conversion-value-bench.sh [SECONDS]   SECONDS per wrk run (default 15)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored), BENCH_POSTGRES (0 to
# skip PostgreSQL). Needs: wrk, GNU time, python3, and for PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-15}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
. scripts/serve-bench-lib.sh
serve_bench_prepare conversion-value-bench.sh
keys=()
serve_args=()
threads=2

model=SamplePostbacks/models/app-1254734734-game.json
bundle=com.example.game

# 20,000 states (0–40 events, up to 900 hours) and 300,000 snippet calls from 50,000 devices,
# each with its first call up to 800 hours ago; seeded.
states="$out/cv-states.jsonl"
calls="$out/cv-calls.txt"
python3 - "$states" "$calls" "$bundle" <<'PY'
import json, random, sys, time, urllib.parse, uuid
states, calls, bundle = sys.argv[1:]
rng = random.Random(23)
events = ["__SESSION__", "level_complete", "purchase"]
with open(states, "w") as out:
    for _ in range(20000):
        elapsed = rng.uniform(0, 900)
        state = {"app_id": 1254734734, "elapsed_hours": round(elapsed, 2), "events": []}
        for _ in range(rng.randint(0, 40)):
            name = rng.choice(["session", "level_complete", "purchase"])
            event = {"name": name, "hours": round(rng.uniform(0, elapsed), 2)}
            if name == "purchase":
                event.update(revenue=rng.choice([0.99, 4.99, 19.99, 49.99]), currency="USD")
            state["events"].append(event)
        if rng.random() < 0.5:
            state["current"] = {"fine": rng.randint(0, 20), "coarse": [rng.choice(["low", "medium", None]), None, None]}
        out.write(json.dumps(state) + "\n")
now = int(time.time())
devices = [(str(uuid.UUID(int=rng.getrandbits(128))).upper(), now - rng.randint(0, 800 * 3600)) for _ in range(50000)]
with open(calls, "w") as out:
    for index in range(300000):
        idfv, first = devices[rng.randrange(len(devices))]
        query = {"a": "bench-key", "i": bundle, "n": rng.choice(events), "idfv": idfv, "v": "4.0",
                 "skan_first_call_to_skadnetwork_timestamp": first, "skan_current_conversion_value": rng.randint(0, 10),
                 "p0_coarse": rng.randint(0, 1)}
        if rng.random() < 0.2:
            query["skan_total_revenue_by_currency"] = json.dumps({"USD": round(rng.uniform(0, 100), 2)})
        # Percent-encoded as iOS encodes a query (a space as %20, never +).
        out.write(urllib.parse.urlencode(query, quote_via=urllib.parse.quote) + "\n")
PY
serve_args=(--api-key bench-key)

sqlite_db() {
    local path="$out/cv-$1.sqlite"
    rm -f "$path" "$path-wal" "$path-shm"
    "$bin" models add --db "$path" --bundle-id "$bundle" "$model" >/dev/null
    echo "$path"
}

# route NAME DB METHOD PATH CORPUS: one row: as fast as answered, then at half that rate.
route() {
    local name=$1 db=$2 method=$3 path=$4
    corpus=$5
    export WRK_METHOD=$method WRK_PATH=$path
    start_server "$db"
    local max half rate pause
    max=$(load_cpu 64 0)
    stop_server
    rate=$(field rate "$max")
    pause=$(half_pause 32 "$rate")
    start_server "$db"
    half=$(load 32 "$pause")
    stop_server
    echo "| $name | $rate/s ($(ratio "$rate" "$floor_rate")× serve's floor$([ -z "$floor_nginx" ] || echo ", $(ratio "$rate" "$floor_nginx")× nginx's")), p50 $(field p50_ms "$max") ms, p99 $(field p99_ms "$max") ms, server CPU $(field cpu_us "$max") µs/request, non-2xx $(field status_4xx_5xx "$max") | at $(field rate "$half")/s: p50 $(field p50_ms "$half") ms, p99 $(field p99_ms "$half") ms |"
    echo "  max: $max" >&2
    echo "  half: $half" >&2
}

floor
echo
ratio() { python3 -c "import sys; print(f'{int(sys.argv[1]) / int(sys.argv[2]):.2f}')" "$1" "$2"; }
echo "| route | as fast as answered (wrk -t$threads -c64, ${seconds} s) | at half that rate (-c32, rate-limited) |"
echo "|---|---|---|"
route "POST /v1/conversion-value (stateless)" "$(sqlite_db stateless)" POST "/v1/conversion-value?a=bench-key" "$states"
route "GET /api/v2/conversion_value, SQLite" "$(sqlite_db snippet)" GET /api/v2/conversion_value "$calls"

bench_postgres_wanted || exit 0
bench_postgres_start
pg=$(bench_postgres_database cv_snippet)
"$bin" models add --db "$pg" --bundle-id "$bundle" "$model" >/dev/null
psql -X -q "$pg_url" -c CHECKPOINT
route "GET /api/v2/conversion_value, PostgreSQL" "$pg" GET /api/v2/conversion_value "$calls"
