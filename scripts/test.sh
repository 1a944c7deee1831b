#!/usr/bin/env bash
# The README's test command: builds the package and its tests (scripts/build.sh, the one
# release build) and runs every test. Arguments go to `swift test`, e.g. --filter IngestTests.
#
# The PostgreSQL cases run when POSTBACKD_TEST_POSTGRES_URL names a server
# (`POSTBACKD_TEST_POSTGRES_URL=$(scripts/postgres-dev.sh start) scripts/test.sh`), and the
# dashboard's browser cases when headless Chromium is installed; each skips with a notice
# otherwise, and CI=1 makes a skip a failure.
#
# Tests use the modules' `package` API, not `@testable import`: a release build for testing
# then compiles the modules exactly as the shipped binary does (`swift test -c release` alone
# would recompile them all with -enable-testing). A plain `swift test` (debug) works too.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi
scripts/build.sh --build-tests
read -ra flags <<<"$(scripts/build.sh --flags)"
exec swift test "${flags[@]}" --skip-build "$@"
