#!/usr/bin/env bash
# Examples/HummingbirdVerify (PostbackKit's getting-started article, a package of its own that
# sees only PostbackKit's public API): starts it on a free loopback port and posts Apple's sample
# postbacks to it: every valid one answers 200, a tampered one 400 naming the field.
#
#   scripts/example-check.sh              the main package's HummingbirdVerifyExample target (the same
#                                         source, without package access: public API alone),
#                                         built by scripts/build.sh, here when missing; the example's
#                                         own manifest is read and must pin what the main one pins
#   scripts/example-check.sh --package    the example built as a package of its own, as a reader
#                                         builds it (a second build of Hummingbird and SwiftNIO)
set -euo pipefail
cd "$(dirname "$0")/.."
example=Examples/HummingbirdVerify
if [ "${1:-}" = "--package" ]; then
    swift build --package-path "$example" >&2
    bin=$(swift build --package-path "$example" --show-bin-path)/HummingbirdVerify
else
    # The example's manifest is valid and depends on the Hummingbird the main package builds.
    swift package --package-path "$example" dump-package >/dev/null
    pin='hummingbird-project/hummingbird", exact: "[0-9.]*"'
    [ "$(grep -o "$pin" "$example/Package.swift")" = "$(grep -o "$pin" Package.swift)" ] || {
        echo "example-check: $example/Package.swift pins another Hummingbird than Package.swift" >&2
        exit 1
    }
    bin="$(scripts/build.sh --show-bin-path)/HummingbirdVerifyExample"
    [ -x "$bin" ] || scripts/build.sh --product HummingbirdVerifyExample >&2
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
PORT=$port "$bin" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done

failed=0
post() { # post FILE PATH EXPECTED
    local status
    status=$(curl -s -o /tmp/example-answer.$$ -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary @"$1" "http://127.0.0.1:$port$2")
    if [ "$status" = "$3" ]; then echo "ok   $status $(basename "$1") $(cat /tmp/example-answer.$$)"; else
        echo "FAIL $status (wanted $3) $(basename "$1") $(cat /tmp/example-answer.$$)"; failed=1; fi
    rm -f /tmp/example-answer.$$
}
for file in SamplePostbacks/apple/apple-*win*.json SamplePostbacks/apple/real-*.json; do
    post "$file" /.well-known/skadnetwork/report-attribution 200
done
post SamplePostbacks/apple/apple-aak-dev1-reengagement.json /.well-known/appattribution/report-attribution 200
post SamplePostbacks/apple/thirdparty-branch-3.0-example.json /.well-known/skadnetwork/report-attribution 400
# A signed field changed after signing.
tampered=$(mktemp)
sed 's/"ad-network-id" *: *"[^"]*"/"ad-network-id":"tampered.skadnetwork"/' SamplePostbacks/apple/apple-3.0-win.json >"$tampered"
post "$tampered" /.well-known/skadnetwork/report-attribution 400
rm -f "$tampered"
[ "$failed" = 0 ] && echo "the getting-started example verifies as documented"
exit "$failed"
