# Sourced by scripts/bench.sh, scripts/export-bench.sh and scripts/serve-bench-lib.sh: PostgreSQL measured beside SQLite in
# the same run, in a throwaway cluster of its own (scripts/postgres-dev.sh, fsync on), one
# database per measurement.

# Whether to measure PostgreSQL: BENCH_POSTGRES (0 or 1), by default 1 when Debian's
# postgresql package is installed.
bench_postgres_wanted() {
    local wanted=${BENCH_POSTGRES:-}
    if [ -z "$wanted" ]; then
        wanted=0
        ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 && wanted=1
    fi
    [ "$wanted" = 1 ]
}

# Starts the cluster in a new temporary folder; sets pg_url (its default database) and pg_base
# (the URL without the database). Call bench_postgres_stop on exit.
bench_postgres_start() {
    pg_parent=$(mktemp -d)
    chmod 755 "$pg_parent"   # the postgres user must reach the cluster's folder
    export POSTBACKD_PG_DIR="$pg_parent/pg"
    pg_url=$(scripts/postgres-dev.sh start 2>/dev/null)
    pg_base=${pg_url%/*}
}

# Stops the cluster and removes its folder, if one was started.
bench_postgres_stop() {
    if [ -n "${pg_parent:-}" ]; then
        scripts/postgres-dev.sh stop >/dev/null 2>&1 || true
        rmdir "$pg_parent" 2>/dev/null || true
        pg_parent=""
    fi
}

# bench_postgres_database NAME: a new, empty database NAME (dropped first); prints its URL.
bench_postgres_database() {
    psql -X -q "$pg_url" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
    echo "$pg_base/$1"
}
