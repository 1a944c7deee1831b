#!/usr/bin/env bash
# The aggregate benchmark (BENCHMARKS.md): one corpus aggregated by a reference build and by
# this one, in one run on one machine, on SQLite and (when Debian's postgresql package is
# installed) PostgreSQL.
#
#   scripts/aggregate-bench.sh REFERENCE_BIN [COUNT]
#
# REFERENCE_BIN is a postbackd built from an earlier commit (copy .build/release/postbackd
# aside before changing the code). COUNT postbacks (default 1000000) of bench.sh's corpus
# (seed 7, SKAdNetwork 2.1-4.0, 20 apps, 8 networks, a week) are ingested by the reference
# into a fresh store, with the sample models given to every app and campaign mappings to every
# network (prefixes of one and two digits, each split in time); a copy of that store is opened
# by this build (the schema migration, timed), and both are aggregated (PostgreSQL: two
# databases so made, vacuumed and analyzed). Each aggregate runs AGG_RUNS times (default 3) from a warm page cache; the best is reported.
#
# Environment: BENCH_OUT (work folder, default bench-out/), AGG_RUNS, BENCH_POSTGRES (0 or 1).
# Needs: GNU time (/usr/bin/time), python3, sqlite3 for nothing (python's sqlite3 module).
set -euo pipefail
cd "$(dirname "$0")/.."

reference=${1:?usage: scripts/aggregate-bench.sh REFERENCE_BIN [COUNT]}
count=${2:-1000000}
out=${BENCH_OUT:-bench-out}
runs=${AGG_RUNS:-3}
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "aggregate-bench.sh: GNU time is missing (apt-get install -y time)" >&2; exit 2; }

scripts/build.sh --product postbackd >&2
bin=.build/release/postbackd

corpus="$out/corpus-$count-seed7.jsonl"
if [ ! -s "$corpus" ]; then
    "$bin" generate --key Keys/test/p256-private.pem --count "$count" --seed 7 \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0.02 --invalid 0.01 --apps 20 --networks 8 --days 7 \
        --output "$corpus.partial"
    mv "$corpus.partial" "$corpus"
fi

wall() { python3 - "$1" <<'PY'
import sys
for line in open(sys.argv[1]):
    if 'Elapsed (wall clock)' in line:
        seconds = 0.0
        for part in line.rsplit(' ', 1)[1].split(':'):
            seconds = seconds * 60 + float(part)
        print(f"{seconds:.3f}")
PY
}
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

# best NAME BIN DB: aggregates $runs times, keeping the fastest run's time file and summary.
best() {
    local name=$1 binary=$2 db=$3 i seconds best=""
    for ((i = 1; i <= runs; i++)); do
        /usr/bin/time -v -o "$out/$name-$i.time" "$binary" aggregate --db "$db" --format json >"$out/$name-$i.json"
        seconds=$(wall "$out/$name-$i.time")
        if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $seconds < $best else 1)"; then
            best=$seconds
            cp "$out/$name-$i.time" "$out/$name.time"
            cp "$out/$name-$i.json" "$out/$name.json"
        fi
    done
}

# A mapping for every network of the corpus: prefixes 1-9 split at the middle of the week, and
# ten two-digit prefixes inside them.
mapping="$out/aggregate-bench-mapping.csv"
write_mapping() { python3 - "$1" "$mapping" <<'PY'
import sqlite3, sys
networks = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT DISTINCT ad_network_id FROM postbacks ORDER BY 1")]
with open(sys.argv[2], "w") as out:
    out.write("ad_network_id,source_identifier,valid_from,valid_to,campaign,ad_group,creative\n")
    for n, network in enumerate(networks):
        for digit in range(1, 10):
            out.write(f"{network},{digit},,2026-11-17,Campaign {n}-{digit} early,Group {digit},\n")
            out.write(f"{network},{digit},2026-11-18,,Campaign {n}-{digit} late,Group {digit},Creative {digit}\n")
        for prefix in range(10, 20):
            out.write(f"{network},{prefix},,,Campaign {n}-{prefix},,\n")
PY
}

echo "SQLite: the reference ingests $corpus" >&2
reference_db="$out/aggregate-reference.sqlite"
rm -f "$reference_db" "$reference_db-wal" "$reference_db-shm"
"$reference" ingest --db "$reference_db" --keys Keys/test --format json "$corpus" >"$out/aggregate-ingest.json" 2>/dev/null
mkdir -p "$out/models"
rm -f "$out"/models/*.json
python3 scripts/bench-models.py "$reference_db" "$out/models" SamplePostbacks/models/*.json
"$reference" models add --db "$reference_db" "$out"/models/*.json >/dev/null
write_mapping "$reference_db"
# Both stores get the mappings (from the reference, when it has `campaigns`), so that both
# aggregates do the same work.
reference_mappings() { "$reference" campaigns add --db "$1" "$mapping" >/dev/null 2>&1 || echo "aggregate-bench.sh: the reference build takes no campaign mappings" >&2; }
reference_mappings "$reference_db"
current_db="$out/aggregate-current.sqlite"
rm -f "$current_db" "$current_db-wal" "$current_db-shm"
cp "$reference_db" "$current_db"

echo "SQLite: reference aggregate" >&2
best sqlite-reference "$reference" "$reference_db"
echo "SQLite: this build's migration, mappings and aggregate" >&2
/usr/bin/time -v -o "$out/sqlite-migrate.time" "$bin" campaigns list --db "$current_db" >/dev/null
"$bin" campaigns add --db "$current_db" "$mapping" >/dev/null
best sqlite-current "$bin" "$current_db"

postgres=0
. scripts/bench-postgres.sh
if bench_postgres_wanted; then
    postgres=1
    trap bench_postgres_stop EXIT
    bench_postgres_start
    echo "PostgreSQL: the reference ingests the corpus (twice: one store each)" >&2
    reference_pg=$(bench_postgres_database agg_reference)
    current_pg=$(bench_postgres_database agg_current)
    for db in "$reference_pg" "$current_pg"; do
        "$reference" ingest --db "$db" --keys Keys/test --format json "$corpus" >/dev/null 2>&1
        "$reference" models add --db "$db" "$out"/models/*.json >/dev/null
        reference_mappings "$db"
        psql -X -q "$db" -c "VACUUM ANALYZE" >/dev/null
    done
    best pg-reference "$reference" "$reference_pg"
    /usr/bin/time -v -o "$out/pg-migrate.time" "$bin" campaigns list --db "$current_pg" >/dev/null
    "$bin" campaigns add --db "$current_pg" "$mapping" >/dev/null
    best pg-current "$bin" "$current_pg"
fi

python3 - "$out" "$postgres" "$runs" "$(nproc)" <<'PY'
import json, sys, re
out, postgres, runs, cores = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
def wall(name):
    for line in open(f"{out}/{name}.time"):
        if "Elapsed (wall clock)" in line:
            seconds = 0.0
            for part in line.rsplit(" ", 1)[1].split(":"):
                seconds = seconds * 60 + float(part)
            return seconds
def rss(name):
    for line in open(f"{out}/{name}.time"):
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) / 1024
ingest = json.load(open(f"{out}/aggregate-ingest.json"))
print(f"{ingest['read']:,} postbacks read, {ingest['accepted']:,} stored; best of {runs} aggregate runs; {cores} cores.")
print()
print("| engine | build | aggregate s | rows written | peak RSS MiB | × reference |")
print("|---|---|---:|---:|---:|---:|")
for engine, label in [("sqlite", "SQLite")] + ([("pg", "PostgreSQL")] if postgres else []):
    reference = wall(f"{engine}-reference")
    for build in ("reference", "current"):
        name = f"{engine}-{build}"
        summary = json.load(open(f"{out}/{name}.json"))
        seconds = wall(name)
        print(f"| {label} | {build} | {seconds:.2f} | {summary['rows']:,} | {rss(name):.0f} | {seconds / reference:.2f} |")
print()
for engine, label in [("sqlite", "SQLite")] + ([("pg", "PostgreSQL")] if postgres else []):
    print(f"{label}: the migration (install dates, tiers and digits filled in for every stored postback) took "
          f"{wall(f'{engine}-migrate'):.2f} s.")
PY
