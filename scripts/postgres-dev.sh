#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, CI and developers: its own data folder, a free
# TCP port on 127.0.0.1, trust authentication, the role and database "postbackd". A second
# role, "postbackd_password" (password "postbackd-dev-password": a throwaway cluster's, no
# secret), must authenticate with SCRAM, so that tests exercise password authentication.
#
#   scripts/postgres-dev.sh start     start the cluster (or find it running); print its URL
#   scripts/postgres-dev.sh url       print the running cluster's URL (exit 1 if none)
#   scripts/postgres-dev.sh status    say whether it runs (exit 0 if so, 3 if not)
#   scripts/postgres-dev.sh stop      stop it and remove its folder (exit 0 if nothing ran)
#   scripts/postgres-dev.sh halt      stop it and keep its folder: `start` resumes it, data and
#                                     port included (a database that goes away and comes back)
#   scripts/postgres-dev.sh restart [SECONDS]
#                                     stop the running server (fast: sessions are cut), wait
#                                     SECONDS (default 0), start it again on the same port
#   scripts/postgres-dev.sh standby PRIMARY_DIR
#                                     make this folder's cluster a streaming standby of the
#                                     cluster running in PRIMARY_DIR (pg_basebackup), on a
#                                     port of its own, and make it the primary's synchronous
#                                     standby (synchronous_standby_names); print its URL
#   scripts/postgres-dev.sh promote   promote the standby in this folder to a primary
#   scripts/postgres-dev.sh kill      SIGKILL the server and all its processes, as a machine
#                                     that dies (the folder is kept: `start` recovers it)
#
#   export POSTBACKD_TEST_POSTGRES_URL=$(scripts/postgres-dev.sh start)
#
# Only the URL goes to stdout (postgres://postbackd@127.0.0.1:PORT/postbackd); the rest to
# stderr. `start` on a stopped cluster whose folder remains starts it again with its data.
#
# Environment: POSTBACKD_PG_DIR (state folder, default $TMPDIR/postbackd-pg-UID, holding
# data/, port, log, sock/), POSTBACKD_PG_FSYNC (on or off; default on, for realistic
# durability in benchmarks), POSTBACKD_PG_BIN (server binaries; default the highest
# /usr/lib/postgresql/*/bin), POSTBACKD_PG_LISTEN (one more address to listen on, which the URL
# then names: scripts/netem.sh's namespace) and POSTBACKD_PG_CLIENTS (a CIDR trusted beside
# 127.0.0.1, for clients on that address).
# Needs: Debian's postgresql package (apt-get install -y postgresql). The server refuses to
# run as root: as root, the server and its tools run as the postgres system user, which must
# be able to reach the state folder (its parents need o+x).
set -euo pipefail

me=postgres-dev.sh
dir=${POSTBACKD_PG_DIR:-${TMPDIR:-/tmp}/postbackd-pg-$(id -u)}
dir=${dir%/}
fsync=${POSTBACKD_PG_FSYNC:-on}
listen=${POSTBACKD_PG_LISTEN:-}
clients=${POSTBACKD_PG_CLIENTS:-}
role=postbackd
database=postbackd
password_role=postbackd_password
marker="$dir/.postbackd-pg"   # marks a folder this script made (stop removes only such)

say() { echo "$me: $*" >&2; }
die() { say "$*"; exit 1; }

usage="usage: $me start|stop|halt|url|status|promote|kill|restart [SECONDS]|standby PRIMARY_DIR"
case "${1:-}" in
    start|stop|halt|url|status|promote|kill) command=$1; [ $# -eq 1 ] || { echo "$usage" >&2; exit 2; } ;;
    standby) command=$1; [ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }; primary_dir=${2%/} ;;
    restart) command=$1; pause=${2:-0}; [ $# -le 2 ] || { echo "$usage" >&2; exit 2; } ;;
    *) echo "$usage" >&2; exit 2 ;;
esac

case "$dir" in
    /*) ;;
    *) dir="$PWD/$dir"; marker="$dir/.postbackd-pg" ;;
esac

# The server binaries: initdb, pg_ctl, postgres from the highest installed version.
bin=${POSTBACKD_PG_BIN:-}
if [ -z "$bin" ]; then
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
for tool in initdb pg_ctl postgres; do
    if [ -z "$bin" ] || [ ! -x "$bin/$tool" ]; then
        say "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin;" \
            "install Debian's postgresql package (apt-get install -y postgresql)"
        exit 2
    fi
done

# As root, run the server's tools as the postgres system user, from the state folder (a
# working folder it may not read, like /root, makes initdb and pg_ctl complain).
as_server() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd "$dir" && runuser -u postgres -- "$@")
    else
        (cd "$dir" && "$@")
    fi
}

running() {
    [ -f "$dir/data/PG_VERSION" ] && as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

url() {
    echo "postgres://$role@${listen:-127.0.0.1}:$(cat "$dir/port")/$database"
}

# A free TCP port on 127.0.0.1: the kernel's pick, or the first port nothing answers on.
free_port() {
    if command -v python3 >/dev/null 2>&1 && python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null; then
        return
    fi
    local port
    for port in $(seq 54320 54999); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    die "no free TCP port in 54320-54999"
}

remove_folder() {
    [ -e "$dir" ] || return 0
    if [ ! -f "$marker" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir was not made by $me; not removing it"
    fi
    rm -rf "$dir"
}

# An empty state folder (removed first), the postgres user's when root.
new_folder() {
    remove_folder
    mkdir -p "$dir/sock"
    touch "$marker" "$dir/log"
    if [ "$(id -u)" -eq 0 ]; then
        getent passwd postgres >/dev/null || die "running as root, but there is no postgres user"
        chown -R postgres: "$dir"
        runuser -u postgres -- test -x "$dir" \
            || die "the postgres user cannot reach $dir (its parents need o+x); set POSTBACKD_PG_DIR"
    fi
}

# A new cluster in $dir (removed first): initdb, settings, started on a free port.
create() {
    new_folder

    say "initdb in $dir/data"
    # -N (no sync): the cluster is throwaway; fsync stays on for the running server.
    as_server "$bin/initdb" -D "$dir/data" -U "$role" --auth=trust -E UTF8 --no-locale -N \
        >>"$dir/log" 2>&1 || { tail -n 20 "$dir/log" >&2; die "initdb failed"; }

    # The password role first: the first matching line wins, and initdb's lines trust everyone.
    {
        echo "host all $password_role 127.0.0.1/32 scram-sha-256"
        cat "$dir/data/pg_hba.conf"
        [ -z "$clients" ] || echo "host all all $clients trust"
    } >"$dir/pg_hba.conf.new"
    as_server cp "$dir/pg_hba.conf.new" "$dir/data/pg_hba.conf"
    rm -f "$dir/pg_hba.conf.new"

    local attempt port
    for attempt in 1 2 3; do
        port=$(free_port)
        echo "$port" >"$dir/port"
        # Later lines win over earlier ones (and over a previous attempt's).
        cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/postgres-dev.sh
listen_addresses = '127.0.0.1${listen:+,$listen}'
port = $port
unix_socket_directories = '${dir//\'/\'\'}/sock'
fsync = $fsync
max_connections = 300
EOF
        if server_start; then
            return 0
        fi
        say "start on port $port failed (attempt $attempt)"
    done
    tail -n 20 "$dir/log" >&2
    die "could not start PostgreSQL; log in $dir/log"
}

server_start() {
    as_server "$bin/pg_ctl" -w -t 60 -D "$dir/data" -l "$dir/log" start >&2
}

create_database() {
    local psql="$bin/psql"
    [ -x "$psql" ] || psql=psql
    local exists
    exists=$("$psql" -X -At -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$role" -d postgres \
        -c "select 1 from pg_database where datname = '$database'")
    if [ "$exists" != 1 ]; then
        "$psql" -X -q -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$role" -d postgres \
            -c "create database $database" >&2
    fi
    exists=$("$psql" -X -At -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$role" -d postgres \
        -c "select 1 from pg_roles where rolname = '$password_role'")
    if [ "$exists" != 1 ]; then
        "$psql" -X -q -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$role" -d postgres \
            -c "set password_encryption = 'scram-sha-256'" \
            -c "create role $password_role login createdb password 'postbackd-dev-password'" \
            -c "grant all on database $database to $password_role" >&2
    fi
}

psql_at() {
    local psql="$bin/psql"
    [ -x "$psql" ] || psql=psql
    "$psql" -X -q -At -h 127.0.0.1 -p "$1" -U "$role" -d postgres "${@:2}"
}

# This folder's cluster as a synchronous streaming standby of the one in $primary_dir.
make_standby() {
    [ -f "$primary_dir/port" ] || die "no cluster in $primary_dir"
    local primary_port port name=postbackd_standby attempt
    primary_port=$(cat "$primary_dir/port")
    new_folder
    say "pg_basebackup of 127.0.0.1:$primary_port into $dir/data"
    as_server "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U "$role" -D "$dir/data" \
        -R -X stream -c fast >>"$dir/log" 2>&1 || { tail -n 20 "$dir/log" >&2; die "pg_basebackup failed"; }
    for attempt in 1 2 3; do
        port=$(free_port)
        echo "$port" >"$dir/port"
        # cluster_name is the application name the standby streams under.
        cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/postgres-dev.sh standby
port = $port
unix_socket_directories = '${dir//\'/\'\'}/sock'
cluster_name = '$name'
EOF
        server_start && break
        say "start on port $port failed (attempt $attempt)"
        [ "$attempt" -lt 3 ] || { tail -n 20 "$dir/log" >&2; die "could not start the standby"; }
    done
    psql_at "$primary_port" -c "alter system set synchronous_standby_names = '$name'" -c "select pg_reload_conf()" >/dev/null
    for attempt in $(seq 1 60); do
        [ "$(psql_at "$primary_port" -c "select sync_state from pg_stat_replication where application_name = '$name'")" = sync ] \
            && return 0
        sleep 0.5
    done
    die "the standby in $dir did not become the primary's synchronous standby within 30 s"
}

case "$command" in
standby)
    make_standby
    say "a synchronous standby of $primary_dir in $dir"
    url
    ;;
promote)
    running || die "no PostgreSQL running in $dir"
    as_server "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >&2
    ;;
kill)
    [ -f "$dir/data/postmaster.pid" ] || die "no PostgreSQL running in $dir"
    pid=$(head -n 1 "$dir/data/postmaster.pid")
    # The postmaster and its children at once, as a machine that dies.
    kill -9 "$pid" $(pgrep -P "$pid" || true) 2>/dev/null || true
    for attempt in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    say "killed the server in $dir"
    ;;
start)
    if running; then
        say "already running in $dir"
    elif [ -f "$dir/data/PG_VERSION" ] && [ -f "$dir/port" ] && server_start; then
        say "started again in $dir"
    else
        [ -f "$dir/data/PG_VERSION" ] && say "could not start the cluster in $dir; making a new one"
        create
        say "started in $dir"
    fi
    create_database
    url
    ;;
url)
    running || die "no PostgreSQL running in $dir (scripts/postgres-dev.sh start)"
    url
    ;;
status)
    if running; then
        echo "running in $dir: $(url)"
    else
        echo "not running ($dir)"
        exit 3
    fi
    ;;
restart)
    running || die "no PostgreSQL running in $dir (scripts/postgres-dev.sh start)"
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2
    sleep "$pause"
    server_start
    url
    ;;
stop)
    # The folder goes with it: when a fast stop's shutdown checkpoint is slow (a loaded
    # machine, hundreds of test databases, fsync on), stop it at once instead.
    if running; then
        as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 \
            || as_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >&2
    fi
    remove_folder
    ;;
halt)
    running || die "no PostgreSQL running in $dir (scripts/postgres-dev.sh start)"
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2
    ;;
esac
