#!/usr/bin/env bash
# docs/reference/: the command reference (Markdown, one page per command) and the man pages,
# generated from the commands themselves by swift-argument-parser's plugins
# (generate-docc-reference and generate-manual), so that they say what `--help` says.
#
#   scripts/reference.sh          regenerate docs/reference/
#   scripts/reference.sh --check  regenerate into a temporary folder; exit 1, with the
#                                 difference, when docs/reference/ is not what the commands say
#
# Builds the products as scripts/build.sh does (nothing to do after it: the plugins build with
# its flags). The man pages name MANUAL_DATE, not today, so that the same commands always give
# the same pages: move it with each release.
set -euo pipefail
cd "$(dirname "$0")/.."

MANUAL_DATE=2026-11-25

check=false
case "${1:-}" in
    --check) check=true ;;
    "") ;;
    *) echo "usage: scripts/reference.sh [--check]" >&2; exit 2 ;;
esac

out=$(mktemp -d)
trap 'rm -rf "$out"; rm -rf Sources/postbackd/postbackd.docc' EXIT

read -ra flags <<<"$(scripts/build.sh --flags)"

# generate-docc-reference writes into the target's own catalog folder; the pages are moved
# out at once (the executable ships no catalog).
rm -rf Sources/postbackd/postbackd.docc
swift package "${flags[@]}" --allow-writing-to-package-directory generate-docc-reference \
    --configuration release --style github >"$out/docc.log" 2>&1 || { cat "$out/docc.log" >&2; exit 2; }
mkdir -p "$out/reference/man"
mv Sources/postbackd/postbackd.docc/*.md "$out/reference/"

swift package "${flags[@]}" generate-manual --configuration release --multi-page --date "$MANUAL_DATE" \
    >"$out/manual.log" 2>&1 || { cat "$out/manual.log" >&2; exit 2; }
cp .build/plugins/GenerateManual/outputs/postbackd/*.1 "$out/reference/man/"

cat >"$out/reference/README.md" <<'EOF'
# Command reference

Generated from the commands themselves by `scripts/reference.sh` (swift-argument-parser's
`generate-docc-reference` and `generate-manual`): do not edit these files; change the command's
help and run the script. CI fails when they differ from what the commands say.

- [`postbackd`](postbackd.md): every command and option, one section per command.
- [`man/`](man): the man pages (`man ./docs/reference/man/postbackd.1`).

The manual, by topic, is in [docs/](../).
EOF

if $check; then
    if ! diff -ru docs/reference "$out/reference"; then
        echo "docs/reference/ differs from what the commands say: run scripts/reference.sh and commit it" >&2
        exit 1
    fi
    echo "docs/reference/ is what the commands say"
else
    rm -rf docs/reference
    cp -r "$out/reference" docs/reference
    echo "wrote docs/reference/ ($(find docs/reference -type f | wc -l) files)"
fi
