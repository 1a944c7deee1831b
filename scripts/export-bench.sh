#!/usr/bin/env bash
# The export benchmark (BENCHMARKS.md): `postbackd export` of COUNT stored postbacks and of a
# tenth of them, JSON Lines and CSV, decoded through the sample models, on SQLite and then
# PostgreSQL: rows per second and peak memory (GNU time), to show that memory does not grow
# with the rows.
#
#   scripts/export-bench.sh [COUNT]   COUNT postbacks (default 200000)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored), BENCH_POSTGRES (0 to
# skip PostgreSQL). Needs: GNU time, python3, and for PostgreSQL Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-200000}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "export-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
scripts/build.sh --product postbackd >&2
bin=$PWD/.build/release/postbackd
. scripts/bench-postgres.sh
trap bench_postgres_stop EXIT

corpus() {
    local n=$1 file="$out/export-corpus-$1.jsonl"
    if [ ! -s "$file" ]; then
        "$bin" generate --key Keys/test/p256-private.pem --count "$n" --seed 11 \
            --versions 2.1,2.2,3.0,4.0 --duplicates 0 --invalid 0 --apps 20 --networks 8 --days 7 \
            --output "$file.partial"
        mv "$file.partial" "$file"
    fi
    echo "$file"
}

# measure ENGINE DB ROWS FORMAT: one export to a file; prints a table row.
measure() {
    local engine=$1 db=$2 rows=$3 format=$4 file="$out/export.$4" started elapsed rss
    sync
    started=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$out/export.time" "$bin" export --db "$db" --format "$format" --output "$file" 2>/dev/null
    elapsed=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$started" "$(date +%s.%N)")
    rss=$(tail -n 1 "$out/export.time")
    echo "| $engine | $(printf "%'d" "$rows") | $format | $(python3 -c "import sys; print(f'{float(sys.argv[1]):.2f}')" "$elapsed") s | $(python3 -c "import sys; print(round(int(sys.argv[1]) / float(sys.argv[2])))" "$rows" "$elapsed")/s | $((rss / 1024)) MiB | $(du -m "$file" | cut -f1) MB |"
}

# models SQLITE-DB: a conversion model for each of the corpus's apps (the sample models, each
# given one of its app ids: scripts/bench-models.py), so that every postback decodes.
models() {
    mkdir -p "$out/export-models"
    rm -f "$out"/export-models/*.json
    python3 scripts/bench-models.py "$1" "$out/export-models" SamplePostbacks/models/*.json
}

# engine NAME MAKE-DB: ingests both corpora into fresh stores and measures each.
engine() {
    local name=$1 make=$2 n db
    for n in $((count / 10)) "$count"; do
        db=$($make "$n")
        "$bin" ingest --db "$db" --keys Keys/test "$(corpus "$n")" >/dev/null 2>&1
        [ -n "$(ls "$out"/export-models/*.json 2>/dev/null)" ] || models "$db"
        "$bin" models add --db "$db" "$out"/export-models/*.json >/dev/null
        measure "$name" "$db" "$n" jsonl
        measure "$name" "$db" "$n" csv
    done
}

sqlite_db() { local path="$out/export-$1.sqlite"; rm -f "$path" "$path-wal" "$path-shm"; echo "$path"; }

rm -f "$out"/export-models/*.json
echo "| engine | postbacks | format | time | rate | peak RSS | output |"
echo "|---|---|---|---|---|---|---|"
engine SQLite sqlite_db

bench_postgres_wanted || exit 0
bench_postgres_start
pg_db() { bench_postgres_database "export_$1"; }
engine PostgreSQL pg_db
