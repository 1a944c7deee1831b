#!/usr/bin/env bash
# The Debian package: postbackd_VERSION_ARCH.deb, from the release build (scripts/build.sh)
# with the Swift runtime linked statically (the machine it installs on needs no Swift
# toolchain), into OUTPUT_DIR (default dist/, git-ignored). Installs /usr/bin/postbackd, the
# hardened systemd unit, the configuration file /etc/postbackd/postbackd.conf, Apple's keys,
# the man pages and the shell completions; the sources are packaging/debian/. Checked by
# scripts/package-check.sh.
#
#   scripts/package.sh [OUTPUT_DIR]
#
# POSTBACKD_PACKAGE_VERSION: the package's version (default: what `postbackd --version`
# says, followed by ~gitYYYYMMDDHHMMSS.COMMIT when the commit is not tagged vVERSION, so that
# snapshots sort by commit time and below the release).
# POSTBACKD_PACKAGE_MAINTAINER: the Maintainer field (default: postbackd maintainers <root@localhost>).
# POSTBACKD_BUILT=1 (scripts/build.sh): the one build is done; link its objects without asking
# SwiftPM, which a running `swift test` holds locked.
# POSTBACKD_MANIFEST: the copy of SwiftPM's manifest (.build/release.yaml) to read the link
# command from (CI's, taken right after the build).
# POSTBACKD_PACKAGE_XZ_LEVEL: xz's level, 0-9 (default 6, dpkg-deb's): CI, which checks the package
# and ships none, gives 1 (18 s of CPU against 68 s for the same files; 28 MB against 24 MB).
# Needs dpkg-dev (dpkg-shlibdeps computes Depends from the libraries the binary links) and
# python3-yaml.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist}

level=${POSTBACKD_PACKAGE_XZ_LEVEL:-6}
case "$level" in [0-9]) ;; *) echo "scripts/package.sh: POSTBACKD_PACKAGE_XZ_LEVEL is $level, not a level from 0 to 9" >&2; exit 2 ;; esac
for tool in dpkg-deb dpkg-shlibdeps strip readelf gzip; do
    command -v "$tool" >/dev/null 2>&1 || { echo "scripts/package.sh: $tool is missing (dpkg-dev, binutils, gzip)" >&2; exit 2; }
done
# The first python3 with PyYAML (Debian's python3-yaml), to read SwiftPM's build manifest.
python=""
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c "import yaml" 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "scripts/package.sh: no python3 with PyYAML (apt-get install -y python3-yaml)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The one release build (scripts/build.sh: nothing to do when CI or the tests built it), linked
# once more with the Swift runtime inside (-static-stdlib): the link command SwiftPM ran for
# postbackd, from its manifest, with that flag and without its RUNPATH $ORIGIN (nothing is
# loaded from beside the binary). SwiftPM's --static-swift-stdlib also puts the flag on every
# compile command, which would compile the whole tree again for one difference in the objects:
# compiled against the static runtime's modules, they name the libraries to link, and Foundation's
# static library needs one that its shared library holds inside, _FoundationCollections; the link
# here names it.
scripts/build.sh --product postbackd
bin_path=$(scripts/build.sh --show-bin-path)
[ -x "$bin_path/postbackd" ] || { echo "scripts/package.sh: no $bin_path/postbackd: run scripts/build.sh" >&2; exit 2; }
binary="$work/postbackd"
# SwiftPM's manifest of the build, or the copy CI took right after it (POSTBACKD_MANIFEST):
# `swift test`, even with --skip-build, writes the manifest again as it starts, and CI builds
# the package beside the tests (a read in the middle of that write failed once).
manifest=${POSTBACKD_MANIFEST:-.build/release.yaml}
"$python" - "$bin_path" "$binary" "$manifest" <<'PY'
import subprocess, sys, yaml

bin_path, output, manifest_path = sys.argv[1], sys.argv[2], sys.argv[3]
manifest = yaml.load(open(manifest_path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
links = [c["args"] for c in manifest["commands"].values()
         if "-emit-executable" in c.get("args", []) and f"{bin_path}/postbackd" in c["args"]]
if len(links) != 1:
    sys.exit(f"package.sh: {manifest_path} holds {len(links)} link commands of {bin_path}/postbackd, not 1")
args, link = links[0], []
i = 0
while i < len(args):
    if args[i] == "-o":
        link += ["-o", output]
        i += 2
    elif args[i] == "-Xlinker" and args[i + 1].startswith("-rpath="):
        i += 2
    else:
        link.append(args[i])
        i += 1
link += ["-static-stdlib"] + ["-Xlinker", "--start-group"] + [
    f"-l{library}" for library in ("Foundation", "CoreFoundation", "FoundationEssentials", "FoundationInternationalization",
                                   "_FoundationCollections", "_FoundationCShims", "_FoundationICU")
] + ["-Xlinker", "--end-group"]
print(" ".join(link), flush=True)
subprocess.run(link, check=True)
PY
if readelf -d "$binary" | grep -q 'libswift'; then
    echo "package.sh: $binary still links the Swift runtime dynamically" >&2
    exit 1
fi
root="$work/root"

# The binary, stripped of its symbols and debug information (the Swift metadata it needs at
# run time is in sections of its own, which strip keeps).
install -D -m 0755 "$binary" "$root/usr/bin/postbackd"
strip --strip-all "$root/usr/bin/postbackd"
installed="$root/usr/bin/postbackd"
"$installed" --version >/dev/null

version=${POSTBACKD_PACKAGE_VERSION:-}
if [ -z "$version" ]; then
    version=$("$installed" --version)
    if git rev-parse --git-dir >/dev/null 2>&1 && ! git describe --exact-match --tags --match "v$version" >/dev/null 2>&1; then
        version="$version~git$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).$(git rev-parse --short=7 HEAD)"
    fi
fi
architecture=$(dpkg --print-architecture)

# Apple's public keys (the same as the built-in ones), for the unit's --keys.
install -d -m 0755 "$root/usr/share/postbackd/keys/apple"
install -m 0644 Keys/apple/*.pem "$root/usr/share/postbackd/keys/apple/"

# The unit, the configuration (a conffile), the man pages, the completions, the docs.
install -D -m 0644 packaging/debian/postbackd.service "$root/lib/systemd/system/postbackd.service"
install -D -m 0644 packaging/debian/postbackd.conf "$root/etc/postbackd/postbackd.conf"
install -d -m 0755 "$root/usr/share/man/man1"
for page in docs/reference/man/*.1; do
    gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
done
install -d -m 0755 "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
"$installed" --generate-completion-script bash >"$root/usr/share/bash-completion/completions/postbackd"
"$installed" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_postbackd"
"$installed" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/postbackd.fish"
install -D -m 0644 packaging/debian/copyright "$root/usr/share/doc/postbackd/copyright"
gzip -9n <CHANGELOG.md >"$root/usr/share/doc/postbackd/changelog.gz"
chmod 0644 "$root"/usr/share/bash-completion/completions/postbackd "$root"/usr/share/zsh/vendor-completions/_postbackd \
    "$root"/usr/share/fish/vendor_completions.d/postbackd.fish "$root"/usr/share/doc/postbackd/changelog.gz \
    "$root"/usr/share/man/man1/*.gz

# Depends: the packages of the shared libraries the binary links (readelf -d: libc, libm,
# libstdc++, libgcc_s, zlib, libcrypto, libsqlite3), at the versions their symbols need,
# as dpkg-shlibdeps computes them; adduser for postinst.
mkdir -p "$work/shlibs/debian"
touch "$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$installed" 2>"$work/shlibdeps.log") || {
    cat "$work/shlibdeps.log" >&2
    exit 1
}
depends="${shlibs#shlibs:Depends=}, adduser"

install -d -m 0755 "$root/DEBIAN"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"
echo /etc/postbackd/postbackd.conf >"$root/DEBIAN/conffiles"
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: postbackd
Version: $version
Architecture: $architecture
Maintainer: ${POSTBACKD_PACKAGE_MAINTAINER:-postbackd maintainers <root@localhost>}
Installed-Size: $installed_size
Depends: $depends
Section: net
Priority: optional
Description: SKAdNetwork and AdAttributionKit install postback receiver
 postbackd parses Apple's privacy-preserving install postbacks (SKAdNetwork 1.0 to
 4.0 and AdAttributionKit), verifies Apple's signatures, stores each one exactly
 once in SQLite or PostgreSQL, aggregates and reports them, serves them over HTTP
 and forwards them. This package installs the postbackd command, a hardened systemd
 unit running "postbackd serve" as the postbackd user (not enabled), and its
 configuration in /etc/postbackd/postbackd.conf.
EOF

mkdir -p "$out"
deb="$out/postbackd_${version}_${architecture}.deb"
dpkg-deb --root-owner-group -Zxz -z"$level" --build "$root" "$deb" >/dev/null
echo "$deb"
