# Shared by scripts/serve-bench.sh and scripts/conversion-value-bench.sh (sourced; not run on
# its own): start and stop `serve`, load it with wrk, read wrk's RESULT line, and the HTTP floor.
# Expects $out, $seconds and $threads; `serve` gets "${keys[@]}" and "${serve_args[@]}".
# Also brings in scripts/bench-postgres.sh, and on exit stops the server and the cluster.

. scripts/bench-postgres.sh
cleanup() {
    stop_server
    bench_postgres_stop
}
trap cleanup EXIT

# serve_bench_prepare NAME: checks the tools (exit 2 naming what is missing), builds the
# release binary and sets $bin; BENCH_BIN names another binary instead (a build of another
# commit, to compare).
serve_bench_prepare() {
    local tool
    for tool in wrk python3; do
        command -v "$tool" >/dev/null || { echo "$1: $tool is missing (apt-get install -y $tool)" >&2; exit 2; }
    done
    [ -x /usr/bin/time ] || { echo "$1: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
    if [ -n "${BENCH_BIN:-}" ]; then
        bin=$(realpath "$BENCH_BIN")
        return 0
    fi
    scripts/build.sh --product postbackd >&2
    bin=$PWD/.build/release/postbackd
}

# make_corpus PATH COUNT SEED DAYS: COUNT generated postbacks (test keys; 2% duplicates, 1%
# invalid; 20 apps, 8 networks over DAYS days) in PATH, unless it is there already.
make_corpus() {
    [ -s "$1" ] && return 0
    "$bin" generate --key Keys/test/p256-private.pem --count "$2" --seed "$3" \
        --versions 2.1,2.2,3.0,4.0 --duplicates 0.02 --invalid 0.01 --apps 20 --networks 8 --days "$4" \
        --output "$1.partial"
    mv "$1.partial" "$1"
}

server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
# start_server DB: starts `serve` on a free port; sets $server_pid and $port.
start_server() {
    # Writes left in the page cache by the previous step would otherwise be flushed during
    # this one, delaying its commits' flushes.
    sync
    local log="$out/serve.out"
    : >"$log"
    "$bin" serve --db "$1" "${keys[@]}" "${serve_args[@]}" --port 0 --max-connections 512 >"$log" 2>"$out/serve.err" &
    server_pid=$!
    for _ in $(seq 1 300); do
        grep -q '^listening on ' "$log" && break
        sleep 0.1
    done
    port=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$log")
    [ -n "$port" ] || { echo "serve did not start: $(cat "$out/serve.err")" >&2; exit 1; }
}

# load CONNECTIONS DELAY_MS: wrk for $seconds over the lines of $corpus (POST bodies; with
# WRK_PATH and WRK_METHOD=GET, queries); prints its RESULT line.
load() {
    WRK_CORPUS="$corpus" WRK_THREADS=$threads WRK_DELAY_MS=$2 \
        wrk -t$threads -c"$1" -d"${seconds}s" --timeout 10s -s scripts/wrk-postbacks.lua \
        "http://127.0.0.1:$port" | grep '^RESULT'
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
peak_rss_mib() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# cpu_ticks: the server's CPU time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }

# load_cpu CONNECTIONS DELAY_MS: as load, with the server's CPU time per request appended
# (cpu_us=N).
load_cpu() {
    local before after result
    before=$(cpu_ticks)
    result=$(load "$1" "$2")
    after=$(cpu_ticks)
    echo "$result cpu_us=$(python3 -c "import sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[4]) * 1e6 / int(sys.argv[3])))" \
        "$before" "$after" "$(field requests "$result")" "$(getconf CLK_TCK)")"
}

# half_pause CONNECTIONS RATE: the pause per connection (ms) for CONNECTIONS to send RATE/2 in all.
half_pause() {
    python3 -c "import sys; print(max(1, round(int(sys.argv[1]) * 1000 / (int(sys.argv[2]) // 2))))" "$1" "$2"
}

# The floor under every figure below: what HTTP alone costs on this machine. `GET /healthz`
# (no body, no verification, no store) as fast as answered by wrk -t2 -c64, through four
# stacks: `serve` itself, HummingbirdCore's HTTP/1 server with a bare responder, a plain
# SwiftNIO HTTP/1 pipeline (both postbackd-bench-receiver --floor), and nginx answering a
# static body (the machine's floor). Each with the server's CPU per request (from /proc, every
# process of it) and wrk's (GNU time). Prints a table; sets $floor_rate (serve's) and
# $floor_nginx. nginx is skipped, and said so, when it is not installed.
floor() {
    local receiver=$PWD/.build/release/postbackd-bench-receiver
    scripts/build.sh --product postbackd-bench-receiver >&2
    exec 3>&1
    echo "| GET /healthz through | rate (wrk -t$threads -c64, ${seconds} s) | server CPU per request | wrk CPU per request |"
    echo "|---|---|---|---|"
    start_server "$(sqlite_db floor)"
    floor_rate=$(floor_row "serve (Hummingbird's Application: request context, responder, date)" "$server_pid")
    stop_server
    local mode label
    for mode in core nio; do
        [ "$mode" = core ] && label="HummingbirdCore HTTP/1, bare responder" || label="SwiftNIO HTTP/1 pipeline, one handler"
        "$receiver" --floor "$mode" >"$out/floor.out" 2>&1 &
        server_pid=$!
        wait_for_port "$out/floor.out"
        floor_row "$label" "$server_pid" >/dev/null
        stop_server
    done
    floor_nginx=""
    if command -v nginx >/dev/null; then
        local prefix
        prefix=$(mktemp -d)
        chmod 755 "$prefix"
        port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
        cat >"$prefix/nginx.conf" <<CONF
worker_processes $(nproc);
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path $prefix/body;
    server {
        listen 127.0.0.1:$port;
        location = /healthz { default_type application/json; return 200 '{"status":"up"}\n'; }
    }
}
CONF
        nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" 2>/dev/null &
        server_pid=$!
        for _ in $(seq 1 100); do
            curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
            sleep 0.1
        done
        floor_nginx=$(floor_row "nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), static answer, $(nproc) workers" "$server_pid")
        stop_server
        rm -rf "$prefix"
    else
        echo "| nginx | not installed (apt-get install -y nginx-light): no machine floor in this run | | |"
    fi
}

# wait_for_port LOG: waits for `listening on PORT` in LOG; sets $port.
wait_for_port() {
    for _ in $(seq 1 100); do
        port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$1")
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    echo "the floor's server did not start: $(cat "$1")" >&2
    exit 1
}

# tree_ticks PID: CPU time so far of PID and its children, in clock ticks.
tree_ticks() {
    local total=0 pid
    for pid in $1 $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$total"
}

# floor_row LABEL PID: writes one row of the floor's table to fd 3 and prints the rate.
floor_row() {
    local before after result
    before=$(tree_ticks "$2")
    result=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t$threads -c64 -d"${seconds}s" "http://127.0.0.1:$port/healthz"; } 2>&1)
    after=$(tree_ticks "$2")
    python3 - "$1" "$result" "$seconds" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import re, sys
label, result, seconds, before, after, tick = sys.argv[1:]
requests = int(re.search(r"(\d+) requests in", result).group(1))
wrk_user, wrk_sys = map(float, re.search(r"WRKCPU (\S+) (\S+)", result).groups())
server_us = (int(after) - int(before)) / int(tick) * 1e6 / requests
wrk_us = (wrk_user + wrk_sys) * 1e6 / requests
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", result)
note = f" ({non2xx.group(1)} non-2xx)" if non2xx else ""
import os
os.write(3, f"| {label} | {requests / float(seconds):.0f}/s{note} | {server_us:.0f} µs | {wrk_us:.0f} µs |\n".encode())
print(f"{requests / float(seconds):.0f}")
PY
}
