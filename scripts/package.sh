#!/usr/bin/env bash
# The Debian package: postbackd_VERSION_ARCH.deb, from a release build with the Swift runtime
# linked statically (the machine it installs on needs no Swift toolchain), into OUTPUT_DIR
# (default dist/, git-ignored). Installs /usr/bin/postbackd, the hardened systemd unit, the
# configuration file /etc/postbackd/postbackd.conf, Apple's keys, the man pages and the shell
# completions; the sources are packaging/debian/. Checked by scripts/package-check.sh.
#
#   scripts/package.sh [OUTPUT_DIR]
#
# POSTBACKD_PACKAGE_SCRATCH: the release build's folder (default .build-package, git-ignored;
# a cold build takes about 16 minutes on 2 cores, a warm one seconds).
# POSTBACKD_PACKAGE_VERSION: the package's version (default: what `postbackd --version`
# says, followed by ~gitYYYYMMDDHHMMSS.COMMIT when the commit is not tagged vVERSION, so that
# snapshots sort by commit time and below the release).
# POSTBACKD_PACKAGE_MAINTAINER: the Maintainer field (default: postbackd maintainers <root@localhost>).
# Needs dpkg-dev (dpkg-shlibdeps computes Depends from the libraries the binary links).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist}
scratch=${POSTBACKD_PACKAGE_SCRATCH:-.build-package}

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH=/opt/swift/usr/bin:$PATH
fi
for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
    command -v "$tool" >/dev/null 2>&1 || { echo "scripts/package.sh: $tool is missing (dpkg-dev, binutils, gzip)" >&2; exit 2; }
done

# --disable-local-rpath: no RUNPATH $ORIGIN (nothing is loaded from beside the binary).
# -debug-info-format none and --disable-index-store: the package strips the debug information
# and no editor reads this folder's index, so neither is made (the same code, less to write).
build=(swift build -c release --static-swift-stdlib --disable-local-rpath -debug-info-format none --disable-index-store
    --product postbackd --scratch-path "$scratch")
echo "${build[*]}"
"${build[@]}"
binary="$("${build[@]}" --show-bin-path)/postbackd"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
