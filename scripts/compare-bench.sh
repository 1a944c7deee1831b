#!/usr/bin/env bash
# Paired benchmark of two postbackd builds (BENCHMARKS.md; docs/benchmarks/2026-11-25-storage-written-once.md): the ingest path,
# aggregate and check on SQLite and PostgreSQL, the same corpus, the two builds in turn (A B A B …) so
# that a comparison holds while the machine's speed drifts. Prints each figure's median wall
# seconds for A and B and the median of the pairs' ratios B/A.
#
#   scripts/compare-bench.sh A_BIN B_BIN [COUNT]
#
# A_BIN and B_BIN are release builds of postbackd (the reference first): for example a
# `git worktree` of the reference commit built with `swift build -c release`, and this tree's
# .build/release/postbackd. COUNT postbacks (default 100000). Environment: BENCH_OUT (work
# folder, default bench-out/compare), BENCH_PAIRS (default 5), BENCH_POSTGRES (0 to skip
# PostgreSQL), BENCH_SQLITE (0 to skip SQLite's figures, to rerun PostgreSQL's with more pairs;
# its aggregate's models still come from A's SQLite store, made untimed). Needs python3, and
# Debian's postgresql for PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
a=$(realpath "${1:?usage: compare-bench.sh A_BIN B_BIN [COUNT]}")
b=$(realpath "${2:?usage: compare-bench.sh A_BIN B_BIN [COUNT]}")
count=${3:-100000}
out=${BENCH_OUT:-bench-out/compare}
pairs=${BENCH_PAIRS:-5}
mkdir -p "$out"
out=$(realpath "$out")

corpus="$out/corpus-$count.jsonl"
if [ ! -s "$corpus" ]; then
    "$a" generate --key Keys/test/p256-private.pem --count "$count" --seed 7 \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0.02 --invalid 0.01 --apps 20 --networks 8 --days 7 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi

# seconds COMMAND...: the command's wall seconds (its output discarded). Exit status 1 is
# expected (the corpus's invalid postbacks are quarantined); 2 and above stop the benchmark.
seconds() {
    local status=0 start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || status=$?
    end=$(date +%s.%N)
    [ "$status" -le 1 ] || { echo "failed ($status): $*" >&2; exit 1; }
    python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$start" "$end"
}

# pair NAME PREPARE RUN: PREPARE LABEL BIN (untimed), then RUN LABEL BIN (timed), for A then B,
# BENCH_PAIRS times; prints a Markdown row.
pair() {
    local name=$1 prepare=$2 run=$3 ta=() tb=()
    for _ in $(seq "$pairs"); do
        "$prepare" a "$a"
        ta+=("$(seconds "$run" a "$a")")
        "$prepare" b "$b"
        tb+=("$(seconds "$run" b "$b")")
    done
    python3 - "$name" "${ta[*]}" "${tb[*]}" <<'PY'
import statistics, sys
name, ta, tb = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ratios = [y / x for x, y in zip(ta, tb)]
print(f"| {name} | {statistics.median(ta):.2f} | {statistics.median(tb):.2f} | "
      f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
PY
}

models() { # models DB BIN: the sample models for the corpus's apps
    mkdir -p "$out/models-$(basename "$1")"
    python3 scripts/bench-models.py "$1" "$out/models-$(basename "$1")" SamplePostbacks/models/*.json
    "$2" models add --db "$1" "$out/models-$(basename "$1")"/*.json >/dev/null
}

fresh_sqlite() { rm -f "$out/$1.sqlite" "$out/$1.sqlite-wal" "$out/$1.sqlite-shm"; }
ingest_sqlite() { "$2" ingest --db "$out/$1.sqlite" --keys Keys/test --format json "$corpus"; }
aggregate_prepare_sqlite() {
    if [ ! -s "$out/agg-$1.sqlite" ]; then
        "$2" ingest --db "$out/agg-$1.sqlite" --keys Keys/test --format json "$corpus" >/dev/null 2>&1
        models "$out/agg-$1.sqlite" "$2"
    fi
}
aggregate_sqlite() { "$2" aggregate --db "$out/agg-$1.sqlite" --format json; }
check_sqlite() { "$2" check --db "$out/agg-$1.sqlite"; }

echo "| figure (wall seconds, median of $pairs pairs) | A | B | B/A (min–max) |"
echo "|---|---|---|---|"
if [ "${BENCH_SQLITE:-1}" = 0 ]; then
    aggregate_prepare_sqlite a "$a"
else
    pair "SQLite ingest, $count postbacks, all cores" fresh_sqlite ingest_sqlite
    pair "SQLite aggregate, 7 days" aggregate_prepare_sqlite aggregate_sqlite
    pair "SQLite check (reads every row)" aggregate_prepare_sqlite check_sqlite
fi

[ "${BENCH_POSTGRES:-1}" = 0 ] && exit 0
export POSTBACKD_PG_DIR="$out/pg"
export POSTBACKD_PG_FSYNC=on
trap 'scripts/postgres-dev.sh stop >/dev/null 2>&1 || true' EXIT
url=$(scripts/postgres-dev.sh start 2>/dev/null)
base=${url%/*}
psql_admin() { psql -X -q -d "$url" -c "$1" >/dev/null; }
fresh_postgres() { psql_admin "DROP DATABASE IF EXISTS ingest_$1" && psql_admin "CREATE DATABASE ingest_$1"; }
ingest_postgres() { "$2" ingest --db "$base/ingest_$1" --keys Keys/test --format json "$corpus"; }
aggregate_prepare_postgres() {
    if ! psql -X -At -d "$url" -c "SELECT 1 FROM pg_database WHERE datname = 'agg_$1'" | grep -q 1; then
        psql_admin "CREATE DATABASE agg_$1"
        "$2" ingest --db "$base/agg_$1" --keys Keys/test --format json "$corpus" >/dev/null 2>&1
        mkdir -p "$out/models-pg"
        python3 scripts/bench-models.py "$out/agg-a.sqlite" "$out/models-pg" SamplePostbacks/models/*.json
        "$2" models add --db "$base/agg_$1" "$out/models-pg"/*.json >/dev/null
    fi
}
aggregate_postgres() { "$2" aggregate --db "$base/agg_$1" --format json; }
check_postgres() { "$2" check --db "$base/agg_$1"; }
pair "PostgreSQL ingest, $count postbacks, one worker" fresh_postgres ingest_postgres
pair "PostgreSQL aggregate, 7 days" aggregate_prepare_postgres aggregate_postgres
pair "PostgreSQL check (reads every row)" aggregate_prepare_postgres check_postgres
