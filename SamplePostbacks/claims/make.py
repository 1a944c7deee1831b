#!/usr/bin/env python3
"""Makes the claims sample (docs/claims.md): one claims file per network of generated/, in
postbackd's own shape, by the day the postbacks arrived (date_basis postback). Deterministic:
run it again and the files are the same bytes.

Each network claims, per day and app, the installs it was sent (winning, postback 0, not a
re-download, not test mode, each once), with the gaps networks' figures usually have: the first network
claims 8% more (installs whose device never sent a copy), the second the same, the third 3%
fewer, and the AdAttributionKit networks claim modeled figures 12% over.
"""
import base64
import collections
import datetime
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
generated = os.path.join(here, "..", "generated")


def day(timestamp):
    # Seconds or, over 10^11, milliseconds, a number or its text, as ingest reads them.
    timestamp = float(timestamp)
    if timestamp > 10**11:
        timestamp = timestamp / 1000
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%d")


def installs(path, kind):
    """(network, day, app) -> installs, from a JSON Lines file of generated postbacks."""
    counts = collections.Counter()
    seen = set()
    with open(path, encoding="utf-8") as source:
        for line in source:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or "timestamp" not in entry:
                continue
            if kind == "aak":
                payload = entry.get("jws-string", "").split(".")
                if len(payload) != 3:
                    continue
                text = payload[1] + "=" * (-len(payload[1]) % 4)
                postback = json.loads(base64.urlsafe_b64decode(text))
                network = postback.get("ad-network-identifier")
                app = postback.get("advertised-item-identifier")
                if postback.get("conversion-type", "download") != "download":
                    continue
            else:
                postback = entry
                network = postback.get("ad-network-id")
                app = postback.get("app-id")
                if postback.get("redownload") or postback.get("source-app-id") == 0:
                    continue
            if postback.get("did-win") is False or postback.get("postback-sequence-index", 0) != 0:
                continue
            # A repeated postback (the generator writes duplicates) is one install.
            identifier = postback.get("transaction-id") or postback.get("postback-identifier")
            if (network, identifier) in seen:
                continue
            seen.add((network, identifier))
            counts[(network, day(entry["timestamp"]), app)] += 1
    return counts


skan = installs(os.path.join(generated, "network-a.jsonl"), "skan")
aak = installs(os.path.join(generated, "network-b-aak.jsonl"), "aak")
factors = [1.08, 1.0, 0.97]
files = []
for index, network in enumerate(sorted({key[0] for key in skan})):
    files.append((network, skan, factors[index % len(factors)], False))
for network in sorted({key[0] for key in aak}):
    files.append((network, aak, 1.12, True))
for network, counts, factor, modeled in files:
    rows = sorted(key for key in counts if key[0] == network)
    with open(os.path.join(here, network + ".csv"), "w", encoding="utf-8") as out:
        out.write("date,ad_network_id,app_id,installs,date_basis,modeled\n")
        for _, date, app in rows:
            claimed = int(counts[(network, date, app)] * factor + 0.5)
            out.write(f"{date},{network},{app},{claimed},postback,{'true' if modeled else 'false'}\n")
