#!/usr/bin/env python3
"""Makes the audit sample (docs/auditing.md, the README's tour) from generated/network-a.jsonl:
what devices copied to the advertiser and what the network vdsbuozq6b.skadnetwork forwarded, for
that network's first 400 postbacks. Deterministic: run it again and the files are the same bytes.

- device-copies.jsonl: the winning postbacks of version 2.0 and later (Apple copies only
  those), except every 25th (a copy the device never delivered).
- vdsbuozq6b-forwards.jsonl.gz: every postback, winning or not, except every 30th (one the
  network kept back); every 20th forwarded with its fine value raised by 5 (at most 63), every
  33rd without its conversion value, every 35th without its country code.

Unsigned values only: every forward still verifies.
"""
import gzip
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
network = "vdsbuozq6b.skadnetwork"
lines = []
with open(os.path.join(here, "..", "generated", "network-a.jsonl"), encoding="utf-8") as source:
    for line in source:
        line = line.rstrip("\n")
        try:
            postback = json.loads(line)
        except ValueError:
            continue
        if isinstance(postback, dict) and postback.get("ad-network-id") == network:
            lines.append((line, postback))
        if len(lines) == 400:
            break

copies, forwards = [], []
for index, (line, postback) in enumerate(lines, start=1):
    version = postback.get("version", "1.0")
    winning = postback.get("did-win", True)
    if winning and version not in ("1.0",) and index % 25 != 0:
        copies.append(line)
    if index % 30 == 0:
        continue
    forward = dict(postback)
    if index % 20 == 0 and isinstance(forward.get("conversion-value"), int):
        forward["conversion-value"] = min(63, forward["conversion-value"] + 5)
    elif index % 33 == 0:
        forward.pop("conversion-value", None)
        forward.pop("coarse-conversion-value", None)
    elif index % 35 == 0:
        forward.pop("country-code", None)
    forwards.append(json.dumps(forward, separators=(",", ":")))

with open(os.path.join(here, "device-copies.jsonl"), "w", encoding="utf-8") as out:
    out.write("\n".join(copies) + "\n")
with open(os.path.join(here, "vdsbuozq6b-forwards.jsonl.gz"), "wb") as raw:
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(("\n".join(forwards) + "\n").encode("utf-8"))
print(f"{len(copies)} copies, {len(forwards)} forwards")
