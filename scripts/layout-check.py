#!/usr/bin/env python3
"""docs/layout.md against the tree: CI fails when they disagree.

The layout's code blocks name paths: a line that starts at the left margin names a path from the
repository's root (`Sources/PostbackKit/`, `scripts/bench.sh`, `Package.swift`); a line indented by
two spaces names a path below the last such line (`  Postback/`, `  PostbackStorage.swift`, or
several, comma-separated); deeper indentation continues a description. Checked both ways:

- every path the layout names exists;
- every target folder under Sources/ and Tests/, every folder one level below a target folder,
  every script in scripts/ and every entry at the repository's root that git tracks is named.

    scripts/layout-check.py          prints what disagrees, exit 1; silent and 0 when they agree
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYOUT = os.path.join(ROOT, "docs", "layout.md")
NAME = re.compile(r"[A-Za-z0-9_.+-][A-Za-z0-9_./+-]*")


def named_paths(text):
    """The paths the layout's code blocks name, each with the line it is on."""
    named = {}
    in_block = False
    top = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
            top = None
            continue
        if not in_block or not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            match = NAME.match(line)
            if not match:
                continue
            path = match.group(0)
            named[path.rstrip("/")] = number
            top = path if path.endswith("/") else None
        elif indent == 2 and top is not None:
            # "  Postback/   description" or "  A.swift, B.swift, C.swift" (then its description
            # on the next line).
            head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            for part in head.split(","):
                part = part.strip()
                if NAME.fullmatch(part):
                    named[(top + part).rstrip("/")] = number
    return named


def tracked():
    output = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True, text=True,
    ).stdout
    return [line for line in output.splitlines() if line]


def expected(files):
    """What the layout must name: targets, their folders, scripts, the root's entries."""
    wanted = set()
    for path in files:
        parts = path.split("/")
        if parts[0] in ("Sources", "Tests") and len(parts) >= 3:
            wanted.add("/".join(parts[:2]))
            if parts[0] == "Sources" and len(parts) >= 4:
                wanted.add("/".join(parts[:3]))
        elif parts[0] == "scripts" and len(parts) == 2:
            wanted.add(path)
        elif len(parts) == 1 and not parts[0].startswith(".") and parts[0].endswith(".swift"):
            wanted.add(parts[0])
        elif len(parts) > 1 and not parts[0].startswith(".") and parts[0] not in ("Sources", "Tests", "scripts"):
            wanted.add(parts[0])
    # Prose at the root (README, CHANGELOG, BENCHMARKS) is the manual's, not the layout's.
    return wanted


def main():
    with open(LAYOUT, encoding="utf-8") as handle:
        named = named_paths(handle.read())
    files = tracked()
    present = set(files)
    for path in files:
        parts = path.split("/")
        for end in range(1, len(parts)):
            present.add("/".join(parts[:end]))
    # A named path names the folders above it too (`packaging/debian/` names `packaging`).
    covered = set(named)
    for path in named:
        parts = path.split("/")
        for end in range(1, len(parts)):
            covered.add("/".join(parts[:end]))
    problems = []
    for path, line in sorted(named.items(), key=lambda item: item[1]):
        if path not in present:
            problems.append(f"docs/layout.md:{line}: {path} is named but not in the tree")
    for path in sorted(expected(files) - covered):
        problems.append(f"docs/layout.md: {path} is in the tree but the layout does not name it")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("docs/layout.md and the tree disagree: change the layout (or the tree) so they agree",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
