#!/usr/bin/env bash
# Rebuilds SamplePostbacks/ from its sources: Apple's vectors (../shared/vectors) and
# postbacks generated with the test keys in Keys/test (never Apple's). Deterministic: running
# it again gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --product postbackd >/dev/null
bin=.build/release/postbackd

mkdir -p SamplePostbacks/apple SamplePostbacks/generated
if [ -d ../shared/vectors ]; then
    cp ../shared/vectors/*.json ../shared/vectors/INDEX.md SamplePostbacks/apple/
    chmod 644 SamplePostbacks/apple/*
fi

"$bin" generate --key Keys/test/p192-private.pem --key Keys/test/p256-private.pem \
    --versions 1.0,2.0,2.1,2.2,3.0,4.0 --count 3000 --seed 2026 --test-mode 0.005 \
    --apps 4 --networks 3 --days 7 --output SamplePostbacks/generated/network-a.jsonl

# Network B receives AdAttributionKit postbacks for the same four apps (same seed, so the same
# app ids), some signed under the development kid.
"$bin" generate --key Keys/test/p256-private.pem --kind aak --count 400 --seed 2026 \
    --apps 4 --networks 2 --days 7 --development 0.05 --output SamplePostbacks/generated/network-b-aak.jsonl

# A partner forwards 40 of network A's postbacks as a JSON array: exact copies (duplicates),
# except two whose unsigned conversion-value was changed on the way (conflicts).
python3 - <<'PY'
import json
lines = open('SamplePostbacks/generated/network-a.jsonl').read().splitlines()
out = []
for i, line in enumerate(lines[100:140]):
    entry = json.loads(line)
    if i in (3, 17) and isinstance(entry.get('conversion-value'), int):
        entry['conversion-value'] = (entry['conversion-value'] + 7) % 64
        out.append(json.dumps(entry, separators=(',', ':')))
    else:
        out.append(line)
open('SamplePostbacks/generated/partner-forward.json', 'w').write('[\n' + ',\n'.join(out) + '\n]\n')
PY
# The audit sample (docs/auditing.md): a network's copies and forwards, from generated/.
python3 SamplePostbacks/audit/make.py
echo "SamplePostbacks rebuilt."
