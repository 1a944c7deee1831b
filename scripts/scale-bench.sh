#!/usr/bin/env bash
# The scale benchmark (issue 39, BENCHMARKS.md): what it costs to keep going as the store grows.
# For each SIZE, a store holding SIZE postbacks at a million a year (a million over the last
# 365 days, twenty million over the 3,200 days since 2018, ending on the same day: a store grows
# in time), aggregated; then, in that store: `ingest` of PROBE
# new postbacks of the last year (its rate, beside the same PROBE ingested into an empty store
# in the same run), `aggregate` of that year, `aggregate --date` of a day in its middle, the
# dashboard's last year as `serve` answers it (GET /dashboard over the year, by day received
# and by install date: the median of 5 requests after one that warms the cache), `check
# --quick`, and the store's size on disk with its largest tables and indexes. A day's work and
# the year's should not grow with SIZE. SQLite, then PostgreSQL in a cluster of its own
# (scripts/postgres-dev.sh).
#
#   scripts/scale-bench.sh [SIZE...]     default: 1000000 5000000 20000000
#
# Environment: BENCH_OUT (work folder, default bench-out/scale, git-ignored; corpora are kept
# and reused), BENCH_BIN (the postbackd to measure instead of a release build of this tree),
# BENCH_PROBE (postbacks ingested into each store, default 1000000),
# BENCH_POSTGRES (0 to skip PostgreSQL, BENCH_SQLITE 0 to skip SQLite), BENCH_KEEP (1: keep
# each aggregated base store in BENCH_OUT, with PostgreSQL's cluster, and measure a copy of it,
# so that a later run, of another build, measures the same stores without storing them again;
# a store of 20 M takes most of an hour to build here; BENCH_KEEP=last measures the kept
# stores themselves and drops them, where the disk holds no copy). Needs: GNU time, sqlite3, curl, python3,
# and for PostgreSQL Debian's postgresql. Disk: about 1.2 GB per million postbacks per engine
# (twice that for a kept store while its copy is measured), plus the corpora (400 MB per
# million).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(1000000 5000000 20000000); fi
out=${BENCH_OUT:-bench-out/scale}
probe=${BENCH_PROBE:-1000000}
keep=${BENCH_KEEP:-0}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for tool in sqlite3 curl python3; do
    command -v "$tool" >/dev/null || { echo "scale-bench.sh: $tool is missing (apt-get install -y $tool)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "scale-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
# serve's start and stop (start_server, stop_server) and the cluster's (bench-postgres.sh).
. scripts/serve-bench-lib.sh
keys=()
serve_args=()
finish() {
    stop_server
    if [ "$keep" != 0 ] && [ -n "${pg_parent:-}" ]; then
        scripts/postgres-dev.sh halt >/dev/null 2>&1 || true
    else
        bench_postgres_stop
    fi
}
trap finish EXIT

if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN   # a build of its own, so that this run is not touched by a later build
else
    scripts/build.sh --product postbackd >&2
    bin=$PWD/.build/release/postbackd
fi

# The generated corpora end on the day before generate's last; the year measured is the 365
# days to it.
last=2026-11-20
first=$(python3 -c "import datetime as d; print(d.date.fromisoformat('$last') - d.timedelta(days=364))")
middle=$(python3 -c "import datetime as d; print(d.date.fromisoformat('$last') - d.timedelta(days=182))")

# corpus NAME COUNT SEED: COUNT postbacks over COUNT / 1,000,000 years (at least one, at most
# 3,200 days) ending on generate's last day (20 apps, 8 networks, 2% exact duplicates, 1% broken
# signatures), generated once (the name says the days). `generate` signs on one core (89 s a
# million here): a part per core, each with its own seed, joined.
#
# At most 3,200 days: ingest reads a forwarder's timestamp before 2018 (SKAdNetwork's first
# year) as no timestamp and stores the postback as received when ingested, so a corpus of 20
# years put 10.8 M of its 20 M postbacks on the day it was ingested (the figures of 2026-11-26
# in docs/benchmarks/). 20 M postbacks then hold 6,250 a day, 2.3 times the 1 M store's.
corpus() {
    local days=$(($2 * 365 / 1000000))
    [ "$days" -lt 365 ] && days=365
    [ "$days" -gt 3200 ] && days=3200
    local file="$out/$1-${days}d.jsonl"
    if [ ! -s "$file" ]; then
        echo "generating $2 postbacks over $days days into $file" >&2
        local parts pids=() part
        parts=$(nproc)
        for part in $(seq 1 "$parts"); do
            "$bin" generate --key Keys/test/p256-private.pem --versions 2.1,2.2,3.0,4.0 \
                --count $(($2 / parts + (part <= $2 % parts ? 1 : 0))) --seed "$3$part" \
                --days "$days" --apps 20 --networks 8 --duplicates 0.02 --invalid 0.01 --output "$file.part$part" &
            pids+=($!)
        done
        for part in "${pids[@]}"; do wait "$part"; done
        for part in $(seq 1 "$parts"); do cat "$file.part$part" && rm "$file.part$part"; done >"$file.partial"
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

# dashboard DB QUERY: the median milliseconds of 5 answers of `serve` to GET /dashboard?QUERY, after
# one that warms the cache (the year's page as a person at a browser asks for it).
dashboard() {
    start_server "$1"
    local times=()
    for i in 0 1 2 3 4 5; do
        local t
        t=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' "http://127.0.0.1:$port/dashboard?$2")
        [ "${t% *}" = 200 ] || { echo "GET /dashboard?$2 answered ${t% *}" >&2; exit 1; }
        [ "$i" -gt 0 ] && times+=("${t#* }")
    done
    stop_server
    printf '%s\n' "${times[@]}" | sort -g | sed -n 3p | awk '{ printf "%.0f", $1 * 1000 }'
}

probe_corpus=$(corpus "probe-$probe" "$probe" 39)
results="$out/results-$(date -u +%Y%m%dT%H%M%S).md"
: >"$results"

# measure_store DB SIZE EMPTY_SECONDS: the measurements of one store, a line of the table;
# prints the probe's ingest seconds.
measure_store() {
    local db=$1 size=$2 empty=$3
    local ingest year day received install check rate ratio
    # Migrated first (a store built by an older postbackd), so that no migration is timed.
    "$bin" aggregate --db "$db" --date 1970-01-01 >/dev/null 2>&1
    ingest=$(seconds "$bin" ingest --db "$db" --keys Keys/test "$probe_corpus")
    rate=$(python3 -c "print(f'{$probe / $ingest:,.0f}')")
    ratio=$(python3 -c "print(f'{$empty / $ingest:.2f}')")
    [ "$size" = 0 ] && ratio="1.00"
    # The probe's year, which its postbacks joined (the base's older days are aggregated).
    year=$(seconds "$bin" aggregate --db "$db" --from "$first" --to "$last")
    day=$(seconds "$bin" aggregate --db "$db" --date "$middle")
    received=$(dashboard "$db" "from=$first&to=$last")
    install=$(dashboard "$db" "from=$first&to=$last&date_basis=install")
    # The nightly check of the year's last day (the quarantine's rows, received when ingested,
    # are all in it: the corpora's bad signatures get no forwarder's time).
    check=$(seconds "$bin" check --db "$db" --quick --since "$last")
    echo "| $size | $ingest s ($rate/s) | $ratio | $year s | $day s | $received ms | $install ms | $check s | $(size "$db") |" >>"$results"
    echo "$ingest"
}

engines=()
[ "${BENCH_SQLITE:-1}" = 1 ] && engines+=(sqlite)
bench_postgres_wanted && engines+=(postgres)
for engine in "${engines[@]}"; do
    if [ "$engine" = postgres ]; then
        if [ "$keep" != 0 ]; then
            # A cluster kept in the work folder beside the stores (the postgres user must reach it).
            pg_parent=$out
            chmod o+x "$out"
            export POSTBACKD_PG_DIR="$out/pg"
            pg_url=$(scripts/postgres-dev.sh start 2>/dev/null)
            pg_base=${pg_url%/*}
        else
            bench_postgres_start
        fi
    fi
    {
        echo
        echo "### $engine: $probe postbacks ingested into a store of SIZE; then, in it"
        echo
        echo "| stored before | ingest of $probe | rate vs empty | aggregate of the year | a day's aggregate | dashboard year, received | by install date | check --quick | store on disk (largest) |"
        echo "|---|---|---|---|---|---|---|---|---|"
    } >>"$results"
    # new_store NAME: an empty store NAME (removed first); prints its location.
    new_store() {
        if [ "$engine" = sqlite ]; then
            rm -f "$out/$1.sqlite" "$out/$1.sqlite-wal" "$out/$1.sqlite-shm"
            echo "$out/$1.sqlite"
        else
            bench_postgres_database "$1"
        fi
    }
    # copy_store FROM TO: TO, a copy of the store FROM (names); prints its location.
    copy_store() {
        if [ "$engine" = sqlite ]; then
            rm -f "$out/$2.sqlite" "$out/$2.sqlite-wal" "$out/$2.sqlite-shm"
            sqlite3 "$out/$1.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
            cp "$out/$1.sqlite" "$out/$2.sqlite"
            echo "$out/$2.sqlite"
        else
            psql -X -q "$pg_url" -c "DROP DATABASE IF EXISTS $2" \
                -c "CREATE DATABASE $2 TEMPLATE $1 STRATEGY FILE_COPY" >/dev/null
            echo "$pg_base/$2"
        fi
    }
    store_location() {
        if [ "$engine" = sqlite ]; then echo "$out/$1.sqlite"; else echo "$pg_base/$1"; fi
    }
    drop_store() {
        if [ "$engine" = sqlite ]; then
            rm -f "$out/$1.sqlite" "$out/$1.sqlite-wal" "$out/$1.sqlite-shm"
        else
            psql -X -q "$pg_url" -c "DROP DATABASE IF EXISTS $1" >/dev/null
        fi
    }
    # Empty: the probe alone (aggregated first, so that the same measurements apply).
    echo "$engine: the probe into an empty store" >&2
    empty=$(measure_store "$(new_store scale_empty)" 0 1)
    drop_store scale_empty
    for size in "${sizes[@]}"; do
        base=$(corpus "base-$size" "$size" "$size")
        built="$out/scale_$size.$engine.built"
        if [ "$keep" = 0 ] || [ ! -f "$built" ]; then
            rm -f "$built"
            db=$(new_store "scale_$size")
            echo "$engine: storing $size postbacks" >&2
            echo "  stored in $(seconds "$bin" ingest --db "$db" --keys Keys/test "$base") s" >&2
            echo "  aggregated every day in $(seconds "$bin" aggregate --db "$db") s" >&2
            [ "$keep" != 0 ] && touch "$built"
        fi
        if [ "$keep" = 1 ]; then
            echo "$engine: measuring a copy of the kept store of $size" >&2
            measure_store "$(copy_store "scale_$size" "scale_${size}_measured")" "$size" "$empty" >/dev/null
            drop_store "scale_${size}_measured"
        else
            [ "$keep" = last ] && echo "$engine: measuring the kept store of $size, its last use" >&2
            measure_store "$(store_location "scale_$size")" "$size" "$empty" >/dev/null
            drop_store "scale_$size"
            rm -f "$built"
        fi
    done
    if [ "$engine" = postgres ]; then
        if [ "$keep" != 0 ]; then scripts/postgres-dev.sh halt >/dev/null 2>&1 || true; pg_parent=""; else bench_postgres_stop; fi
    fi
done
cat "$results"
