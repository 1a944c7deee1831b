#!/usr/bin/env bash
# Checks the Debian package scripts/package.sh built, on this machine, as CI does: installs it,
# verifies the systemd unit, runs the main job (scripts/main-job.sh's four steps on
# SamplePostbacks) as the postbackd user into a store under /var/lib/postbackd, starts
# `postbackd serve` as that user with the configuration file's settings and asks /healthz and
# /readyz, then purges the package and checks that nothing of it is left. The jobs and serve
# run under the unit's seccomp filters (scripts/unit-confine.py). Needs root (or sudo),
# systemd-analyze (Debian's systemd package; systemd need not be running), /usr/bin/python3 and curl.
#
#   scripts/package-check.sh dist/postbackd_VERSION_ARCH.deb
#
# POSTBACKD_CHECK_REFERENCE: a postbackd binary whose main job's report the packaged one's
# must equal (default .build/release/postbackd, linked with the Swift runtime as a library;
# skipped when it does not exist).
#
# It refuses to run where postbackd is installed or its user exists: the purge at the end
# would take the store with it. The package is purged on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=${1:?usage: scripts/package-check.sh PACKAGE.deb}
[ -f "$deb" ] || { echo "scripts/package-check.sh: $deb: no such file" >&2; exit 2; }
deb=$(realpath "$deb")

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
fail() { echo "scripts/package-check.sh: $*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' postbackd 2>/dev/null | grep -qv "not-installed"; then
    fail "postbackd is already installed here (dpkg -s postbackd): this check would purge it and its store"
fi
if getent passwd postbackd >/dev/null || [ -e /var/lib/postbackd ] || [ -e /etc/postbackd ]; then
    fail "the postbackd user, /var/lib/postbackd or /etc/postbackd exists: this check would remove it"
fi

work=$(mktemp -d)
chmod 0755 "$work"
serve_pid=""
installed=false
cleanup() {
    status=$?
    if [ -n "$serve_pid" ] && [ -d "/proc/$serve_pid" ]; then
        $sudo kill "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    if $installed; then
        $sudo dpkg --purge postbackd >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

echo "== dpkg -i $(basename "$deb")"
dpkg-deb --info "$deb" | sed -n 's/^ \(Version\|Depends\|Installed-Size\):/  \1:/p'
installed=true
$sudo dpkg -i "$deb"

echo "== the installed files"
for path in /usr/bin/postbackd /lib/systemd/system/postbackd.service /etc/postbackd/postbackd.conf \
    /usr/share/postbackd/keys/apple/p256.pem /usr/share/man/man1/postbackd.1.gz \
    /usr/share/man/man1/postbackd.serve.1.gz /usr/share/bash-completion/completions/postbackd \
    /usr/share/zsh/vendor-completions/_postbackd /usr/share/fish/vendor_completions.d/postbackd.fish \
    /usr/share/doc/postbackd/copyright /usr/share/doc/postbackd/changelog.gz; do
    [ -s "$path" ] || fail "$path is missing or empty"
done
dpkg-query -W -f='${Conffiles}\n' postbackd | grep -q "/etc/postbackd/postbackd.conf" \
    || fail "/etc/postbackd/postbackd.conf is not a conffile"
gzip -t /usr/share/man/man1/*.gz
if command -v man >/dev/null 2>&1; then
    man -w postbackd.serve >/dev/null || fail "man -w postbackd.serve finds no page"
fi
bash -n /usr/share/bash-completion/completions/postbackd || fail "the bash completion does not parse"
version=$(/usr/bin/postbackd --version)
package_version=$(dpkg-query -W -f='${Version}' postbackd)
case "$package_version" in
    "$version" | "$version~"*) ;;
    *) fail "postbackd --version says $version, the package is $package_version" ;;
esac
echo "postbackd --version: $version (package $package_version)"

echo "== the user, the store's folder, the configuration's owner"
[ "$(getent passwd postbackd | cut -d: -f6,7)" = "/var/lib/postbackd:/usr/sbin/nologin" ] \
    || fail "the postbackd user: $(getent passwd postbackd)"
[ "$(stat -c '%U:%G %a' /var/lib/postbackd)" = "postbackd:postbackd 750" ] \
    || fail "/var/lib/postbackd is $(stat -c '%U:%G %a' /var/lib/postbackd)"
[ "$(stat -c '%U:%G %a' /etc/postbackd/postbackd.conf)" = "root:postbackd 640" ] \
    || fail "/etc/postbackd/postbackd.conf is $(stat -c '%U:%G %a' /etc/postbackd/postbackd.conf)"

echo "== systemd-analyze verify"
# It loads the unit as systemd would (systemd need not be PID 1) and checks that ExecStart's
# binary and the Documentation= man pages exist; anything it prints about our unit fails.
verify_log="$work/verify.log"
$sudo systemd-analyze verify /lib/systemd/system/postbackd.service >"$verify_log" 2>&1 \
    || { cat "$verify_log" >&2; fail "systemd-analyze verify failed"; }
if grep -i "postbackd" "$verify_log"; then
    fail "systemd-analyze verify printed the lines above about postbackd.service"
fi
echo "verified"
# Its exposure as systemd scores the hardening (0 to 10; 1.6 as made): above 2.0 fails.
security_log="$work/security.log"
$sudo systemd-analyze security --offline=yes --threshold=20 /lib/systemd/system/postbackd.service \
    >"$security_log" 2>&1 || { grep -E "✗|exposure" "$security_log" >&2; fail "the unit's exposure is over 2.0"; }
tail -n 1 "$security_log"

# The configuration file's value of NAME (its last line NAME=value), read, not executed.
conf() { $sudo sed -n "s/^$1=//p" /etc/postbackd/postbackd.conf | tail -n 1; }
db=$(conf POSTBACKD_DB)
keys=$(conf POSTBACKD_KEYS)
host=$(conf POSTBACKD_HOST)
[ "$db" = /var/lib/postbackd/postbackd.sqlite ] || fail "POSTBACKD_DB is $db"

# As the postbackd user, with nothing but the configuration's environment, and under the
# unit's RestrictAddressFamilies= and MemoryDenyWriteExecute= (scripts/unit-confine.py: the
# binary must tolerate them). The samples are copied where that user can read them (the clone
# may be under /root).
cp scripts/unit-confine.py "$work/unit-confine.py"
confined=(setpriv --reuid=postbackd --regid=postbackd --init-groups --no-new-privs --
    /usr/bin/python3 "$work/unit-confine.py" /usr/bin/env -i PATH=/usr/bin:/bin POSTBACKD_DB="$db" POSTBACKD_LOG_LEVEL=warning)
as_postbackd() { $sudo "${confined[@]}" "$@"; }
cp -r SamplePostbacks "$work/SamplePostbacks"
mkdir -p "$work/Keys" && cp -r Keys/test "$work/Keys/test"
chmod -R a+rX "$work/SamplePostbacks" "$work/Keys"

echo "== the main job as the postbackd user, confined, into $db"
(
    cd "$work"
    as_postbackd /usr/bin/postbackd models add SamplePostbacks/models/*.json
    # The first quarantined postbacks go to standard error: kept out of the log unless it fails.
    as_postbackd /usr/bin/postbackd ingest --keys "$keys" --keys Keys/test SamplePostbacks/apple \
        SamplePostbacks/generated >"$work/ingest.out" 2>"$work/ingest.err" || { cat "$work/ingest.err" >&2; exit 1; }
    cat "$work/ingest.out"
    as_postbackd /usr/bin/postbackd aggregate
    as_postbackd /usr/bin/postbackd report --by date,app_id >"$work/report.txt"
)
grep -Eq "accepted +3,301 " "$work/ingest.out" || fail "ingest did not accept the samples' 3,301 postbacks"
grep -i "^total" "$work/report.txt" || tail -n 5 "$work/report.txt"
[ "$($sudo stat -c %U "$db")" = postbackd ] || fail "$db is not the postbackd user's"

# The same job by the build's own binary, when there is one (CI's scripts/main-job.sh ran it), or by
# the binary POSTBACKD_CHECK_REFERENCE names: the packaged binary prints the same report.
reference=${POSTBACKD_CHECK_REFERENCE:-.build/release/postbackd}
if [ -x "$reference" ]; then
    debug=$(realpath "$reference")
    (
        cd "$work"
        export POSTBACKD_DB="$work/debug.sqlite"
        "$debug" models add SamplePostbacks/models/*.json >/dev/null
        "$debug" ingest --keys "$keys" --keys Keys/test SamplePostbacks/apple SamplePostbacks/generated \
            >/dev/null 2>"$work/debug-ingest.err" || { cat "$work/debug-ingest.err" >&2; exit 1; }
        "$debug" aggregate >/dev/null
        "$debug" report --by date,app_id >"$work/debug-report.txt"
    )
    diff -u "$work/debug-report.txt" "$work/report.txt" || fail "the packaged binary's report differs from $reference's"
    echo "the report is $reference's, line for line"
fi

echo "== postbackd serve as the postbackd user, confined ($host, a free port)"
# Started as a simple command (not through as_postbackd, whose subshell would stand between),
# so that serve_pid is serve's own: setpriv, python3 and env exec it. The log exists before it
# starts: the background command opens it, and the first read below could come first.
: >"$work/serve.out"
$sudo "${confined[@]}" /usr/bin/postbackd serve --host "$host" --port 0 --keys "$keys" >"$work/serve.out" 2>&1 &
serve_pid=$!
url=""
for _ in $(seq 1 100); do
    url=$(sed -n 's/^listening on //p' "$work/serve.out")
    [ -n "$url" ] && break
    [ -d "/proc/$serve_pid" ] || { cat "$work/serve.out" >&2; fail "serve stopped"; }
    sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.out" >&2; fail "serve did not listen within 10 s"; }
[ "$(awk '/^(Uid|Seccomp|NoNewPrivs):/ { printf "%s%s ", $1, $2 }' "/proc/$serve_pid/status")" \
    = "Uid:$(id -u postbackd) NoNewPrivs:1 Seccomp:2 " ] || fail "serve does not run confined as postbackd"
curl -fsS --max-time 5 "$url/healthz"
curl -fsS --max-time 5 "$url/readyz"
# SIGTERM, as systemd stops it: exit status 0.
$sudo kill -TERM "$serve_pid"
status=0
wait "$serve_pid" || status=$?
serve_pid=""
[ "$status" -eq 0 ] || { cat "$work/serve.out" >&2; fail "serve exited $status on SIGTERM"; }
tail -n 1 "$work/serve.out"

echo "== dpkg --purge postbackd"
$sudo dpkg --purge postbackd
installed=false
for path in /usr/bin/postbackd /lib/systemd/system/postbackd.service /etc/postbackd /var/lib/postbackd \
    /usr/share/postbackd /usr/share/doc/postbackd /usr/share/man/man1/postbackd.1.gz; do
    [ ! -e "$path" ] || fail "$path is left after the purge"
done
! getent passwd postbackd >/dev/null || fail "the postbackd user is left after the purge"
! getent group postbackd >/dev/null || fail "the postbackd group is left after the purge"
echo "nothing is left"
echo "the package checks out: $(basename "$deb")"
