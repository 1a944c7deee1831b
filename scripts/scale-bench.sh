#!/usr/bin/env bash
# The scale benchmark (issue 39, BENCHMARKS.md): what it costs to keep going as the store grows.
# For each SIZE, a store holding SIZE postbacks at a million a year (a million over the last
# 365 days, five million over five years ending on the same day: a store grows in time, a day
# holds as many postbacks at every size), aggregated; then, in that store: `ingest` of PROBE new
# postbacks of the last year (its rate, beside the same PROBE ingested into an empty store in
# the same run), `aggregate --date` of a day in the middle of the last year, the dashboard's
# last year (`report --format html` over it: the dashboard page, read as `serve` reads it, by
# day received and by install date), `check --quick`, and the store's size on disk with its
# largest tables and indexes. A day's work and the year's should not grow with SIZE. SQLite,
# then PostgreSQL in a throwaway cluster (scripts/postgres-dev.sh).
#
#   scripts/scale-bench.sh [SIZE...]     default: 1000000 5000000 20000000
#
# Environment: BENCH_OUT (work folder, default bench-out/scale, git-ignored; corpora are kept
# and reused), BENCH_PROBE (postbacks ingested into each store, default 1000000),
# BENCH_POSTGRES (0 to skip PostgreSQL). Needs: GNU time, sqlite3, and for PostgreSQL Debian's
# postgresql. Disk: about 1.2 GB per million postbacks per engine, plus the corpora (400 MB per
# million).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(1000000 5000000 20000000); fi
out=${BENCH_OUT:-bench-out/scale}
probe=${BENCH_PROBE:-1000000}
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "scale-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "scale-bench.sh: sqlite3 is missing (apt-get install -y sqlite3)" >&2; exit 2; }
. scripts/bench-postgres.sh
trap bench_postgres_stop EXIT

swift build -c release --product postbackd >&2
bin=$PWD/.build/release/postbackd

# corpus NAME COUNT SEED: COUNT postbacks over COUNT / 1,000,000 years (at least one) ending on
# generate's last day (20 apps, 8 networks, 2% exact duplicates, 1% broken signatures),
# generated once (the name says the days).
corpus() {
    local days=$(($2 * 365 / 1000000))
    [ "$days" -lt 365 ] && days=365
    local file="$out/$1-${days}d.jsonl"
    if [ ! -s "$file" ]; then
        echo "generating $2 postbacks over $days days into $file" >&2
        "$bin" generate --key Keys/test/p256-private.pem --versions 2.1,2.2,3.0,4.0 --count "$2" --seed "$3" \
            --days "$days" --apps 20 --networks 8 --duplicates 0.02 --invalid 0.01 --output "$file.partial"
        mv "$file.partial" "$file"
    fi
    echo "$file"
}

# seconds COMMAND...: runs COMMAND (its output discarded) and prints its wall seconds.
seconds() {
    sync
    /usr/bin/time -f %e -o "$out/time" "$@" >/dev/null 2>"$out/stderr" || {
        echo "failed: $* $(tail -3 "$out/stderr")" >&2
        exit 1
    }
    cat "$out/time"
}

# size DB: the store's size on disk (MB) and its largest tables and indexes.
size() {
    case $1 in
    postgres://*)
        psql -X -q -t -A -F ' ' "$1" -c "SELECT round(pg_database_size(current_database()) / 1e6)" | tr -d '\n'
        echo -n " MB ("
        psql -X -q -t -A -F ' ' "$1" -c "
            SELECT string_agg(relname || ' ' || round(pg_relation_size(oid) / 1e6) || ' MB', ', ' ORDER BY pg_relation_size(oid) DESC)
            FROM (SELECT oid, relname FROM pg_class WHERE relkind IN ('r', 'i') AND relnamespace = 'public'::regnamespace
                  ORDER BY pg_relation_size(oid) DESC LIMIT 6) t" | tr -d '\n'
        echo ")"
        ;;
    *)
        echo -n "$(($(stat -c %s "$1") / 1000000)) MB ("
        sqlite3 "$1" "SELECT group_concat(name || ' ' || mb || ' MB', ', ') FROM (SELECT name, round(SUM(pgsize) / 1e6) AS mb FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC LIMIT 6)" | tr -d '\n'
        echo ")"
        ;;
    esac
}

probe_corpus=$(corpus "probe-$probe" "$probe" 39)
results="$out/results.md"
: >"$results"

# run ENGINE NAME DB: the measurements of one store (NAME for the table).
measure_store() {
    local db=$1 size=$2 empty=$3
    local ingest day received install check rate ratio
    ingest=$(seconds "$bin" ingest --db "$db" --keys Keys/test "$probe_corpus")
    rate=$(python3 -c "print(f'{$probe / $ingest:,.0f}')")
    ratio=$(python3 -c "print(f'{$empty / $ingest:.2f}')")
    [ "$size" = 0 ] && ratio="1.00"
    echo "  aggregated every day in $(seconds "$bin" aggregate --db "$db") s" >&2
    # The last year (the probe's, and every store's last 365 days) and its middle day.
    local first last middle
    last=$("$bin" report --db "$db" --by date --format csv | cut -d, -f1 | grep -E '^[0-9]{4}-' | sort | tail -1)
    first=$(python3 -c "import datetime as d; print(d.date.fromisoformat('$last') - d.timedelta(days=364))")
    middle=$(python3 -c "import datetime as d; print(d.date.fromisoformat('$last') - d.timedelta(days=182))")
    day=$(seconds "$bin" aggregate --db "$db" --date "$middle")
    received=$(seconds "$bin" report --db "$db" --format html --from "$first" --to "$last")
    install=$(seconds "$bin" report --db "$db" --format html --from "$first" --to "$last" --date-basis install)
    check=$(seconds "$bin" check --db "$db" --quick)
    echo "| $size | $ingest s ($rate/s) | $ratio | $day s | $received s | $install s | $check s | $(size "$db") |" >>"$results"
    echo "$ingest"
}

engines=(sqlite)
bench_postgres_wanted && engines+=(postgres)
for engine in "${engines[@]}"; do
    [ "$engine" = postgres ] && bench_postgres_start
    {
        echo
        echo "### $engine: $probe postbacks ingested into a store of SIZE; then, in it"
        echo
        echo "| stored before | ingest of $probe | rate vs empty | a day's aggregate | dashboard year, received | by install date | check --quick | store on disk (largest) |"
        echo "|---|---|---|---|---|---|---|---|"
    } >>"$results"
    db_for() {
        if [ "$engine" = sqlite ]; then
            rm -f "$out/$1.sqlite" "$out/$1.sqlite-wal" "$out/$1.sqlite-shm"
            echo "$out/$1.sqlite"
        else
            bench_postgres_database "$1"
        fi
    }
    # Empty: the probe alone (aggregated first, so that the same measurements apply).
    empty_db=$(db_for scale_empty)
    echo "$engine: the probe into an empty store" >&2
    empty=$(measure_store "$empty_db" 0 1)
    for size in "${sizes[@]}"; do
        base=$(corpus "base-$size" "$size" "$size")
        db=$(db_for "scale_$size")
        echo "$engine: storing $size postbacks" >&2
        echo "  stored in $(seconds "$bin" ingest --db "$db" --keys Keys/test "$base") s" >&2
        measure_store "$db" "$size" "$empty" >/dev/null
        [ "$engine" = sqlite ] && rm -f "$db" "$db-wal" "$db-shm"
        [ "$engine" = postgres ] && psql -X -q "$pg_url" -c "DROP DATABASE IF EXISTS scale_$size" >/dev/null
    done
    [ "$engine" = postgres ] && bench_postgres_stop
done
cat "$results"
