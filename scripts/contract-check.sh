#!/usr/bin/env bash
# The HTTP contract, checked by a property-based fuzzer: schemathesis (PyPI) reads
# docs/openapi.yaml from a `serve` on 127.0.0.1 (GET /openapi.json), on a store with the sample
# postbacks and a model, and sends every operation generated requests, valid and not; each
# answer must be no server error (a 503 only where documented), a documented status code,
# a documented content type, and a body valid against the documented schema.
#
#   scripts/contract-check.sh [MAX_EXAMPLES]   examples per operation (default 60)
#   scripts/contract-check.sh --prepare         only makes schemathesis's virtualenv (CI, beside
#                                               the build, which this check needs)
#
# Environment: POSTBACKD_BIN (the binary; default the release build, scripts/build.sh, built when missing),
# SCHEMATHESIS (the st command; default a virtualenv in .build/schemathesis-venv, made and
# filled from PyPI with the pinned version when missing; needs python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

version=4.32.5
st=${SCHEMATHESIS:-}
if [ -z "$st" ]; then
    venv=.build/schemathesis-venv
    if ! "$venv/bin/st" --version 2>/dev/null | grep -q "$version"; then
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q "schemathesis==$version"
    fi
    st=$venv/bin/st
fi
[ "${1:-}" != --prepare ] || exit 0
examples=${1:-60}
bin=${POSTBACKD_BIN:-.build/release/postbackd}
[ -x "$bin" ] || scripts/build.sh --product postbackd >&2

work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -z "$server_pid" ] || { kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT

# A store with data for the report, summary, dashboard and pull routes to read.
"$bin" ingest --db "$work/store.sqlite" --keys Keys/apple SamplePostbacks >/dev/null 2>&1 || true
"$bin" models add --db "$work/store.sqlite" --bundle-id com.example.game \
    SamplePostbacks/models/app-1254734734-game.json >/dev/null
"$bin" aggregate --db "$work/store.sqlite" >/dev/null

# start_server DB: serve on a free loopback port; sets base and server_pid.
start_server() {
    "$bin" serve --db "$1" --keys Keys/apple --keys Keys/test --host 127.0.0.1 --port 0 \
        >"$work/serve.out" 2>>"$work/serve.err" &
    server_pid=$!
    for _ in $(seq 1 300); do
        grep -q '^listening on ' "$work/serve.out" && break
        sleep 0.1
    done
    base=$(sed -n 's/^listening on //p' "$work/serve.out")
    [ -n "$base" ] || { echo "serve did not start: $(cat "$work/serve.err")" >&2; exit 1; }
}
stop_server() {
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
fuzz() {
    "$st" run "$base/openapi.json" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
        --max-examples "$examples" --workers 1 --request-timeout 30 --seed 40 \
        --suppress-health-check all --no-color "$@" || status=$?
}

status=0
# 1. A server without keys: every route open.
echo "== serve without keys"
start_server "$work/store.sqlite"
fuzz
stop_server

# 2. With a key in the store (every app, every scope and channel) and sent with every request:
# the pull API and the forwards route (which always take a key), and the routes as a keyed
# server answers them. The snippet
# and the sign-in are left out: their generated wrong keys only meet the limiter again.
echo "== serve with a key"
cp "$work/store.sqlite" "$work/keyed.sqlite"
key=$("$bin" keys add --db "$work/keyed.sqlite" contract --all-apps \
    --scope report,dashboard,export,conversion-value,apple-ads,forwards 2>/dev/null)
start_server "$work/keyed.sqlite"
fuzz -H "Authorization: Bearer $key" --exclude-path /api/v2/conversion_value --exclude-path /login
stop_server

if grep -q "Fatal error\|Crash" "$work/serve.err"; then
    echo "serve crashed:" >&2
    tail -n 40 "$work/serve.err" >&2
    status=1
fi
exit "$status"
