#!/usr/bin/env bash
# Makes the upgrade fixtures of a release: a store written by that release's postbackd, as an
# SQLite file and as a PostgreSQL dump, with a row in every table a user's commands fill
# (postbacks, sightings, conflicts, quarantine, runs, models and app bundles, campaign
# mappings, Apple Ads tokens, aggregates, an export cursor, deliveries, a conversion value
# device). SchemaUpgradeTests open them with today's postbackd: every row must still be there
# and the schema must be exactly a new store's.
#
#   scripts/make-upgrade-fixture.sh NAME [POSTBACKD]
#
# NAME names the release (the fixtures go to Tests/Fixtures/upgrade/NAME.sqlite
# and NAME.pgdump.sql); POSTBACKD is that release's binary (default .build/release/postbackd, built
# from the release's commit). Needs Debian's postgresql (a throwaway cluster of
# scripts/postgres-dev.sh) and curl. Run it from the release's commit: the fixtures are written
# once, when a release ships, and never made again.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: make-upgrade-fixture.sh NAME [POSTBACKD]}
postbackd=$(realpath "${2:-.build/release/postbackd}")
receiver=$(realpath "$(dirname "$postbackd")/postbackd-bench-receiver")
out=Tests/Fixtures/upgrade
mkdir -p "$out"
work=$(mktemp -d)
chmod 755 "$work"
export POSTBACKD_PG_DIR="$work/pg"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    scripts/postgres-dev.sh stop || true
    rm -rf "$work"
}
trap cleanup EXIT

# The inputs: Apple's and the generated sample postbacks, one of them again with another
# value (a conflict), and a line that is not a postback (quarantined).
cp -r SamplePostbacks/apple SamplePostbacks/generated "$work/"
head -n 1 SamplePostbacks/generated/network-a.jsonl > "$work/again.jsonl"
echo '{"not": "a postback"}' >> "$work/again.jsonl"
cat > "$work/campaigns.csv" <<'CSV'
ad_network_id,source_identifier,valid_from,valid_to,campaign,ad_group,creative
fzbddbi26k.skadnetwork,1,,2026-11-15,"Winter, early",Search,
fzbddbi26k.skadnetwork,1,2026-11-16,,Winter late,Search,banner-a
3rpoyewmr9.skadnetwork,9,,,Nines,,
CSV
now_iso=$(date -u +%Y-%m-%dT%H:%M:%SZ)
old_iso=$(date -u -d '-2 days' +%Y-%m-%dT%H:%M:%SZ)
cat > "$work/tokens.jsonl" <<JSONL
{"app_id": 525463029, "token": "fixture-token-1", "obtained_at": "$now_iso"}
{"app_id": 525463029, "token": "fixture-token-expired", "obtained_at": "$old_iso"}
JSONL

# fill DB: every command of the release that writes, once.
fill() {
    local db=$1
    "$postbackd" models add --db "$db" --bundle-id com.example.game \
        SamplePostbacks/models/app-1254734734-game.json
    "$postbackd" models add --db "$db" SamplePostbacks/models/app-525463029-apple-examples.json \
        SamplePostbacks/models/app-421214301-marketplace.json SamplePostbacks/models/app-734771186-subscriptions.json
    "$postbackd" ingest --db "$db" --keys Keys/apple --keys Keys/test "$work/apple" "$work/generated"
    "$postbackd" ingest --db "$db" --keys Keys/apple --keys Keys/test "$work/again.jsonl" || true
    "$postbackd" campaigns add --db "$db" "$work/campaigns.csv"
    "$postbackd" apple-ads add --db "$db" "$work/tokens.jsonl"
    "$postbackd" aggregate --db "$db"
    "$postbackd" export --db "$db" --consumer warehouse --output "$work/export.jsonl"

    # forward: one destination, drained into a local receiver.
    "$receiver" 0 > "$work/receiver.out" &
    local receiver_pid=$!
    pids+=("$receiver_pid")
    for _ in $(seq 100); do grep -q '^listening on' "$work/receiver.out" 2>/dev/null && break; sleep 0.1; done
    local port
    port=$(sed -n 's/^listening on //p' "$work/receiver.out")
    echo "{\"destinations\": [{\"name\": \"partner\", \"url\": \"http://127.0.0.1:$port/partner\", \"payload\": \"raw\", \"filter\": {\"key_spaces\": [\"production\", \"test\", \"development\"]}}]}" \
        > "$work/forward.json"
    "$postbackd" forward --db "$db" --config "$work/forward.json" --drain
    kill "$receiver_pid"

    # serve: one call of the client snippet's protocol (a conversion value device).
    local serve_port=$((20000 + RANDOM % 20000))
    "$postbackd" serve --db "$db" --host 127.0.0.1 --port "$serve_port" > "$work/serve.log" 2>&1 &
    local serve_pid=$!
    pids+=("$serve_pid")
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$serve_port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$serve_port/api/v2/conversion_value?i=com.example.game&n=__SESSION__&idfv=00000000-0000-0000-0000-000000000001"
    echo
    kill "$serve_pid"
    wait "$serve_pid" 2>/dev/null || true
}

fill "$work/store.sqlite"
sqlite3 "$work/store.sqlite" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;" >/dev/null
cp "$work/store.sqlite" "$out/$name.sqlite"

url=$(scripts/postgres-dev.sh start)
fill "$url"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
"$bin/pg_dump" --no-owner --no-privileges --format=plain "$url" > "$out/$name.pgdump.sql"
echo "wrote $out/$name.sqlite and $out/$name.pgdump.sql" >&2
