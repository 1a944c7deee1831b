#!/usr/bin/env bash
# The main job, end to end on SamplePostbacks, into postbackd.sqlite in the working folder (or
# the database $POSTBACKD_DB names, an SQLite path or a postgres:// URL):
# store the sample conversion models, ingest the sample postbacks (Apple's vectors with
# Apple's keys, the generated ones with the test keys), aggregate every day, print a report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --product postbackd
postbackd=.build/release/postbackd

"$postbackd" models add SamplePostbacks/models/*.json
"$postbackd" ingest --keys Keys/apple --keys Keys/test SamplePostbacks/apple SamplePostbacks/generated
"$postbackd" aggregate
"$postbackd" report --by date,app_id
