#!/usr/bin/env bash
# Checks what ships for operators in ops/ (docs/operations.md#alerts-and-a-dashboard):
#   - the Prometheus alert rules with promtool: `check rules`, and `test rules` on the series
#     of ops/prometheus/postbackd-rules.test.yml (each rule: series that fire, series that
#     must not);
#   - the Grafana dashboard: JSON, every panel with at least one query, ids unique.
# That every metric the rules and the dashboard name is one `serve` exposes is a test
# (OperationsMetricsTests, in `swift test`): it needs a running server.
#
# promtool: the one on PATH, else Debian's `prometheus` package's, unpacked into
# .build-tools/ (apt-get download: nothing installed, no Prometheus started).
set -euo pipefail
cd "$(dirname "$0")/.."

promtool=$(command -v promtool || true)
if [ -z "$promtool" ]; then
    tools="$PWD/.build-tools"
    promtool="$tools/usr/bin/promtool"
    if [ ! -x "$promtool" ]; then
        mkdir -p "$tools/deb"
        download() { (cd "$tools/deb" && apt-get download prometheus 2>&1 | grep -v "^W: Download is performed unsandboxed" || true); }
        download
        deb=$(ls "$tools"/deb/prometheus_*.deb 2>/dev/null | head -1)
        if [ -z "$deb" ]; then
            # A fresh machine may not have read the package lists yet.
            sudo=""
            [ "$(id -u)" -ne 0 ] && sudo="sudo"
            $sudo apt-get update -qq
            download
            deb=$(ls "$tools"/deb/prometheus_*.deb 2>/dev/null | head -1)
        fi
        if [ -z "$deb" ]; then
            echo "ops-check: no promtool on PATH and apt-get download prometheus failed" >&2
            exit 1
        fi
        dpkg-deb -x "$deb" "$tools"
    fi
fi
"$promtool" --version | head -1

"$promtool" check rules ops/prometheus/postbackd-rules.yml
"$promtool" test rules ops/prometheus/postbackd-rules.test.yml

python3 - ops/grafana/postbackd.json <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as f:
    dashboard = json.load(f)
panels = dashboard.get("panels") or []
problems = []
if not panels:
    problems.append("no panels")
ids = [panel.get("id") for panel in panels]
if len(set(ids)) != len(ids):
    problems.append(f"panel ids repeat: {ids}")
queries = 0
for panel in panels:
    targets = panel.get("targets") or []
    if not targets:
        problems.append(f"panel {panel.get('title')!r}: no query")
    for target in targets:
        if not (target.get("expr") or "").strip():
            problems.append(f"panel {panel.get('title')!r}: target {target.get('refId')} has no expr")
        queries += 1
if problems:
    sys.exit(f"{path}: " + "; ".join(problems))
print(f"{path}: {len(panels)} panels, {queries} queries")
PY
