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
# release binary and sets $bin.
serve_bench_prepare() {
    local tool
    for tool in wrk python3; do
        command -v "$tool" >/dev/null || { echo "$1: $tool is missing (apt-get install -y $tool)" >&2; exit 2; }
    done
    [ -x /usr/bin/time ] || { echo "$1: GNU time is missing (apt-get install -y time)" >&2; exit 2; }
    swift build -c release --product postbackd >&2
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

# The floor under every figure below: what the HTTP stack alone costs. GET /healthz as fast as
# answered (no body, no verification, no store), with the CPU time per request of the server
# (from /proc) and of wrk (GNU time).
floor() {
    start_server "$(sqlite_db floor)"
    local before after result
    before=$(cpu_ticks)
    result=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t$threads -c64 -d"${seconds}s" "http://127.0.0.1:$port/healthz"; } 2>&1)
    after=$(cpu_ticks)
    stop_server
    python3 - "$result" "$seconds" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import re, sys
result, seconds, before, after, tick = sys.argv[1:]
requests = int(re.search(r"(\d+) requests in", result).group(1))
wrk_user, wrk_sys = map(float, re.search(r"WRKCPU (\S+) (\S+)", result).groups())
server_us = (int(after) - int(before)) / int(tick) * 1e6 / requests
wrk_us = (wrk_user + wrk_sys) * 1e6 / requests
print(f"HTTP floor (GET /healthz, wrk -t2 -c64): {requests / float(seconds):.0f}/s; CPU per request: server {server_us:.0f} µs, wrk {wrk_us:.0f} µs")
PY
}
