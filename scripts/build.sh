#!/usr/bin/env bash
# The one build of postbackd: release configuration, without debug information. The tests
# (scripts/test.sh), the main job (scripts/main-job.sh), CI's checks and the Debian package
# (scripts/package.sh links the same objects with the Swift runtime inside) all use it, so that
# a fresh machine (and CI, on 2 cores) compiles the dependency tree once. Every script that
# builds goes through here: SwiftPM recompiles everything when its flags change.
#
#   scripts/build.sh [SWIFT-BUILD-OPTIONS]   e.g. --build-tests, --product postbackd, --show-bin-path
#   scripts/build.sh --flags                 prints its flags, for `swift package` (whose plugins
#                                            build too: scripts/reference.sh)
#
# POSTBACKD_BUILT=1: the one build is done (CI did it, and runs its checks beside `swift test`,
# which holds SwiftPM's lock while the tests run): SwiftPM is not asked; a build is nothing to do,
# and --show-bin-path prints .build/release's folder.
#
# Release, not debug: the tests then run the code that ships (and the whole suite ran in 490 s
# here, against 682–766 s in debug). No debug information: nothing here reads it (the package strips it; a crash's
# backtrace still names its functions), so none is made. The index store stays: the tests'
# discovery reads it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi
flags=(-c release -debug-info-format none)
if [ "${1:-}" = --flags ]; then
    echo "${flags[*]}"
    exit 0
fi
if [ "${POSTBACKD_BUILT:-}" = 1 ]; then
    case " $* " in *" --show-bin-path "*) readlink -f .build/release ;; esac
    exit 0
fi
exec swift build "${flags[@]}" "$@"
