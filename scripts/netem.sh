#!/usr/bin/env bash
# PostgreSQL behind a bad network, on this machine only: a network namespace joined to this
# one by a veth pair, a throwaway cluster (scripts/postgres-dev.sh) inside it, and on that link
# a delay, packet loss or a partition. For the tests (FailoverTests) and for people measuring.
#
#   scripts/netem.sh up              make the namespace and start PostgreSQL in it; print the URL
#   scripts/netem.sh url             print the URL again
#   scripts/netem.sh delay MS        delay each packet MS milliseconds each way (a round trip
#                                    gains 2 x MS); 0 removes the delay
#   scripts/netem.sh loss PERCENT    drop PERCENT % of the packets each way (0.1 steps); 0 none
#   scripts/netem.sh partition       drop every packet both ways: connections hang, half-open
#   scripts/netem.sh heal            no delay, no loss, no partition
#   scripts/netem.sh down            stop PostgreSQL, remove the namespace and the folder
#
# Environment: POSTBACKD_NETEM_DIR (state folder, default $TMPDIR/postbackd-netem-UID),
# POSTBACKD_NETEM_NAME (namespace and link names' stem, default pbnet), POSTBACKD_NETEM_NET
# (the link's /30, default 10.231.0: the host side is .1, the namespace .2).
#
# Needs root (ip netns), iproute2 and nftables (apt-get install -y iproute2 nftables).
# Loss and the partition are nftables rules in the namespace (packets dropped on the link;
# TCP retransmits as on a real network). The delay is tc netem on both ends of the link when
# the kernel has sch_netem; a kernel without it (CONFIG_NET_SCH_NETEM unset, as in some
# micro-VMs) gets scripts/netem-relay.py in the namespace instead, between the link and
# PostgreSQL, which holds each chunk MS milliseconds each way. The URL always goes through
# the relay, so that it stays the same whatever the delay.
set -euo pipefail
cd "$(dirname "$0")/.."

me=netem.sh
dir=${POSTBACKD_NETEM_DIR:-${TMPDIR:-/tmp}/postbackd-netem-$(id -u)}
dir=${dir%/}
name=${POSTBACKD_NETEM_NAME:-pbnet}
net=${POSTBACKD_NETEM_NET:-10.231.0}
ns=$name
host_link=${name}h
ns_link=${name}n
host_address=$net.1
ns_address=$net.2

say() { echo "$me: $*" >&2; }
die() { say "$*"; exit 1; }
usage="usage: $me up|url|down|heal|partition|delay MS|loss PERCENT"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "needs root (ip netns); run it with sudo"
for tool in ip nft; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install -y iproute2 nftables)"
done

in_ns() { ip netns exec "$ns" "$@"; }
pg() { POSTBACKD_PG_DIR="$dir/pg" POSTBACKD_PG_LISTEN=$ns_address POSTBACKD_PG_CLIENTS=$net.0/30 \
    in_ns scripts/postgres-dev.sh "$@"; }
# Whether the kernel has sch_netem: found out once, by `up` (a netem qdisc added and removed on
# the fresh link), and kept in the state folder.
has_netem() { [ "$(cat "$dir/delay_kind" 2>/dev/null)" = netem ]; }

# The nftables rules in the namespace: $1 is the drop rule's condition ("" for none).
rules() {
    in_ns nft delete table inet postbackd_netem 2>/dev/null || true
    [ -n "$1" ] || return 0
    in_ns nft -f - <<NFT
table inet postbackd_netem {
    chain input { type filter hook input priority 0; iifname "$ns_link" $1 drop; }
    chain output { type filter hook output priority 0; oifname "$ns_link" $1 drop; }
}
NFT
}

delay() {
    local ms=$1
    if has_netem; then
        local link
        for link in "$host_link" "in_ns:$ns_link"; do
            if [ "$link" = "$host_link" ]; then
                tc qdisc del dev "$link" root 2>/dev/null || true
                [ "$ms" = 0 ] || tc qdisc add dev "$link" root netem delay "${ms}ms"
            else
                in_ns tc qdisc del dev "$ns_link" root 2>/dev/null || true
                [ "$ms" = 0 ] || in_ns tc qdisc add dev "$ns_link" root netem delay "${ms}ms"
            fi
        done
        echo 0 >"$dir/delay_ms"
    else
        echo "$ms" >"$dir/delay_ms"
    fi
    # The relay reads its delay each second.
    sleep 1.2
}

url() {
    [ -f "$dir/url" ] || die "nothing is up ($me up)"
    cat "$dir/url"
}

case "$1" in
up)
    [ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
    ip netns list | grep -qw "$ns" && die "namespace $ns exists already ($me down first)"
    # Whatever fails on the way up, nothing is left behind.
    trap '"$0" down >/dev/null 2>&1 || true' ERR
    mkdir -p "$dir"
    chmod 755 "$dir"
    ip netns add "$ns"
    ip link add "$host_link" type veth peer name "$ns_link"
    ip link set "$ns_link" netns "$ns"
    ip addr add "$host_address/30" dev "$host_link"
    ip link set "$host_link" up
    in_ns ip addr add "$ns_address/30" dev "$ns_link"
    in_ns ip link set "$ns_link" up
    in_ns ip link set lo up
    if tc qdisc add dev "$host_link" root netem delay 0ms 2>/dev/null; then
        tc qdisc del dev "$host_link" root
        echo netem >"$dir/delay_kind"
    else
        echo relay >"$dir/delay_kind"
    fi
    direct=$(pg start)
    port=${direct##*:}; port=${port%%/*}
    relay_port=$(in_ns python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo 0 >"$dir/delay_ms"
    in_ns python3 scripts/netem-relay.py "$ns_address" "$relay_port" 127.0.0.1 "$port" "$dir/delay_ms" \
        >"$dir/relay.log" 2>&1 &
    echo $! >"$dir/relay.pid"
    for _ in $(seq 1 50); do
        grep -q relaying "$dir/relay.log" && break
        sleep 0.1
    done
    grep -q relaying "$dir/relay.log" || die "the relay did not start: $(cat "$dir/relay.log")"
    echo "${direct%:*}:$relay_port/${direct##*/}" >"$dir/url"
    has_netem && say "delay by tc netem" || say "this kernel has no sch_netem: delay by scripts/netem-relay.py"
    url
    ;;
url) url ;;
delay)
    [ $# -eq 2 ] && [[ $2 =~ ^[0-9]+$ ]] || { echo "$usage" >&2; exit 2; }
    delay "$2"
    ;;
loss)
    [ $# -eq 2 ] && [[ $2 =~ ^[0-9]+(\.[0-9])?$ ]] || { echo "$usage" >&2; exit 2; }
    permille=$(awk -v p="$2" 'BEGIN { printf "%d", p * 10 + 0.5 }')
    if [ "$permille" -eq 0 ]; then rules ""; else rules "numgen random mod 1000 < $permille"; fi
    ;;
partition) rules "meta l4proto { tcp, udp, icmp }" ;;
heal)
    rules ""
    delay 0
    ;;
down)
    [ -f "$dir/relay.pid" ] && kill "$(cat "$dir/relay.pid")" 2>/dev/null || true
    if ip netns list | grep -qw "$ns"; then
        rules "" || true
        pg stop || true
        ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
        ip netns del "$ns"
    fi
    ip link del "$host_link" 2>/dev/null || true
    rm -rf "$dir"
    ;;
*) echo "$usage" >&2; exit 2 ;;
esac
