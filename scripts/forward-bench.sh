#!/usr/bin/env bash
# The forward benchmark (BENCHMARKS.md): `postbackd forward --drain` of COUNT stored postbacks
# to a fast local receiver (postbackd-bench-receiver, 200 at once), raw and decoded, at
# concurrency 8 (the default) and 32, on SQLite and then PostgreSQL: deliveries per second,
# peak memory (GNU time), and the receiver's count (every delivery id once).
#
#   scripts/forward-bench.sh [COUNT]   COUNT postbacks (default 50000)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored), BENCH_POSTGRES (0 to
# skip PostgreSQL). Needs: GNU time, python3, and for PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-50000}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "forward-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
scripts/build.sh --product postbackd >&2
scripts/build.sh --product postbackd-bench-receiver >&2
bin=$PWD/.build/release/postbackd
receiver_bin=$PWD/.build/release/postbackd-bench-receiver
. scripts/bench-postgres.sh
receiver_pid=
stop_all() {
    [ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null || true
    bench_postgres_stop
}
trap stop_all EXIT

corpus="$out/forward-corpus-$count.jsonl"
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p256-private.pem --count "$count" --seed 13 \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0 --invalid 0 --apps 20 --networks 8 --days 7 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi
mkdir -p "$out/forward-models"
rm -f "$out"/forward-models/*.json

# receiver: starts a fresh receiver; sets receiver_pid and port.
receiver() {
    [ -n "$receiver_pid" ] && { kill "$receiver_pid" 2>/dev/null || true; wait "$receiver_pid" 2>/dev/null || true; }
    rm -f "$out/receiver.out"
    "$receiver_bin" 0 > "$out/receiver.out" &
    receiver_pid=$!
    for _ in $(seq 100); do grep -q '^listening on' "$out/receiver.out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/^listening on //p' "$out/receiver.out")
}

# measure ENGINE DB PAYLOAD CONCURRENCY: one drain into a fresh receiver; prints a table row.
measure() {
    local engine=$1 db=$2 payload=$3 concurrency=$4 started elapsed rss delivered
    receiver
    cat > "$out/forward.json" <<JSON
{"destinations": [{"name": "bench-$payload-$concurrency", "url": "http://127.0.0.1:$port/bench",
  "payload": "$payload", "concurrency": $concurrency}]}
JSON
    started=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$out/forward.time" "$bin" forward --db "$db" --config "$out/forward.json" --drain \
        2> "$out/forward.err" || { cat "$out/forward.err" >&2; exit 1; }
    elapsed=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$started" "$(date +%s.%N)")
    rss=$(tail -n 1 "$out/forward.time")
    delivered=$(sed -n 's/^forwarded: \([0-9,]*\) delivered.*/\1/p' "$out/forward.err" | tr -d ,)
    kill "$receiver_pid"; wait "$receiver_pid" 2>/dev/null || true; receiver_pid=
    echo "| $engine | $payload | $concurrency | $(printf "%'d" "$delivered") | $(python3 -c "import sys; print(f'{float(sys.argv[1]):.2f}')" "$elapsed") s | $(python3 -c "import sys; print(round(int(sys.argv[1]) / float(sys.argv[2])))" "$delivered" "$elapsed")/s | $((rss / 1024)) MiB | $(sed -n 's/^answered //p' "$out/receiver.out") |"
}

engine() {
    local name=$1 db=$2
    "$bin" ingest --db "$db" --keys Keys/test "$corpus" >/dev/null 2>&1
    [ -n "$(ls "$out"/forward-models/*.json 2>/dev/null)" ] || python3 scripts/bench-models.py "$db" "$out/forward-models" SamplePostbacks/models/*.json
    "$bin" models add --db "$db" "$out"/forward-models/*.json >/dev/null
    for payload in raw decoded; do
        for concurrency in 8 32; do measure "$name" "$db" "$payload" "$concurrency"; done
    done
}

echo "| engine | payload | concurrency | delivered | time | rate | peak RSS | receiver |"
echo "|---|---|---|---|---|---|---|---|"
db="$out/forward-$count.sqlite"
rm -f "$db" "$db-wal" "$db-shm"
engine SQLite "$db"

bench_postgres_wanted || exit 0
bench_postgres_start
engine PostgreSQL "$(bench_postgres_database "forward_$count")"
