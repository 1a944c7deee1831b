#!/usr/bin/env bash
# PostbackKit's microbenchmarks (Benchmarks/, on ordo-one/benchmark; BENCHMARKS.md): runs them
# and checks their instructions and malloc counts against the thresholds committed for this
# toolchain (Benchmarks/Thresholds/SWIFT_VERSION/), as swift-nio keeps them.
#
#   scripts/microbench.sh           check; exits non-zero on a regression past the tolerance
#   scripts/microbench.sh update    write this toolchain's thresholds anew (after a change
#                                   that is meant to move them; commit them with it)
#
# The first run builds the benchmark package in release (its own .build under Benchmarks/),
# at the lowest priority: minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

toolchain=$(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1)
thresholds="Thresholds/$toolchain"

case "${1:-check}" in
check)
    if [ ! -d "$thresholds" ]; then
        echo "microbench: no thresholds for Swift $toolchain in Benchmarks/$thresholds;" \
            "write them with: scripts/microbench.sh update" >&2
        exit 1
    fi
    # The plugin exits 1 whatever went wrong; its last words say whether the thresholds were
    # missed for the worse (benchmarkThresholdRegression) or for the better (…Improvement).
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    status=0
    nice -n 19 swift package benchmark thresholds check --path "$thresholds" --no-progress 2>&1 |
        tee "$log" || status=$?
    if [ "$status" -eq 0 ]; then
        echo "microbench: within the thresholds of Benchmarks/$thresholds"
    elif grep -q 'benchmarkThresholdImprovement' "$log" && ! grep -q 'benchmarkThresholdRegression' "$log"; then
        echo "microbench: better than the thresholds of Benchmarks/$thresholds;" \
            "tighten them with: scripts/microbench.sh update"
    else
        echo "microbench: failed against the thresholds of Benchmarks/$thresholds (see above)" >&2
        exit 1
    fi
    ;;
update)
    mkdir -p "$thresholds"
    nice -n 19 swift package --allow-writing-to-package-directory benchmark thresholds update \
        --path "$thresholds" --no-progress
    ;;
*)
    echo "usage: scripts/microbench.sh [check|update]" >&2
    exit 64
    ;;
esac
