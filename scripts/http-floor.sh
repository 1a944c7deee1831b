#!/usr/bin/env bash
# The HTTP floor alone (BENCHMARKS.md): `GET /healthz` through `serve`, HummingbirdCore with a
# bare responder, a plain SwiftNIO pipeline and nginx, in one run (scripts/serve-bench-lib.sh's
# floor, which scripts/serve-bench.sh and scripts/conversion-value-bench.sh also run).
#
#   scripts/http-floor.sh [SECONDS]   SECONDS per wrk run (default 15)
#
# Environment: BENCH_OUT (work folder, default bench-out/, git-ignored). Needs: wrk, GNU time,
# python3, curl; nginx for the machine's floor (apt-get install -y nginx-light).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-15}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
BENCH_POSTGRES=0
. scripts/serve-bench-lib.sh
serve_bench_prepare http-floor.sh
keys=()
serve_args=()
threads=2
sqlite_db() { local path="$out/floor-$1.sqlite"; rm -f "$path" "$path-wal" "$path-shm"; echo "$path"; }
floor
