#!/usr/bin/env bash
# nft-v6.sh -- forwarding through moat's policy over IPv6 against IPv4,
# side by side in one run (a script that prints a table, not a timed
# test).  One policy with gateway.ipv6 on (nat66) and 1,000 other
# sandboxes configured; a guest with both families sends small UDP
# datagrams, and bulk TCP, to the internet namespace: to its IPv4 address
# and to an IPv6 one (both masqueraded by the gateway).  Each round runs
# both families, the first alternating between rounds, so that drift in
# the machine's load hits both alike.  Each figure is the median of RUNS
# rounds with its range; the difference is the median (range) of each
# round's own IPv6-vs-IPv4 difference; the load average is shown at the
# start and the end.
# Everything runs in network namespaces this script creates and removes;
# no packet leaves them.
#
# usage: bench/nft-v6.sh   (as root, after make)
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one round of
# 10,000 datagrams and 16 MB.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_trap
RUNS=${RUNS:-11}
COUNT=${COUNT:-1000000}		# datagrams per run
SIZE=${SIZE:-64}
TPUT_MB=${TPUT_MB:-512}
[ "${BENCH_SMOKE:-0}" = 1 ] && RUNS=1 COUNT=10000 TPUT_MB=16
NFTR=$ROOT/build/nft-rules
BLAST=$TOPO_TMP/udp-blast
NET6=fd77:0:0:1
SINK6=2001:db8:cafe::80		# the internet's IPv6 address (public here)

make -s build/nft-rules >/dev/null || exit 1
cc -O2 -std=c17 -D_GNU_SOURCE -o "$BLAST" bench/udp-blast.c || exit 1
. bench/gen-conf.sh

topo_up || exit 1
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
ip -n "$TOPO-dev" addr add $NET6::b/64 dev eth0 nodad
ip -n "$TOPO-dev" -6 route add default via $NET6::1
ip -n "$NS_INET" addr add $SINK6/128 dev lo
topo_bg "$NS_INET" usink socat -u UDP-RECV:5002,bind=$INET_HTTP OPEN:/dev/null
topo_bg "$NS_INET" usink6 socat -u UDP6-RECV:5002,bind="[$SINK6]" OPEN:/dev/null
topo_bg "$NS_INET" tsink socat -u TCP-LISTEN:5001,bind=$INET_HTTP,reuseaddr,fork OPEN:/dev/null
topo_bg "$NS_INET" tsink6 socat -u TCP6-LISTEN:5001,bind="[$SINK6]",reuseaddr,fork OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 5001 && topo_wait_port "$NS_INET" $SINK6 5001 || exit 1
topo_wait_dad "$TOPO-dev" eth0 || exit 1
# 2001:db8::/32 is public here: the sink's address is documentation space.
GEN_GATEWAY="  ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };" \
	gen_conf 1000 "$TOPO_TMP/s.conf" dev
sed -i 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];|' \
	"$TOPO_TMP/s.conf"
in_ns "$NS_GW" "$NFTR" -c "$TOPO_TMP/s.conf" apply || exit 1
n6=$(in_ns "$NS_GW" nft list set inet moat guest6 | grep -o 'fd77:[0-9a-f:]*' | wc -l)
[ "$n6" -gt 300 ] || { echo "guest6 holds $n6 addresses, not the open sandboxes'" >&2; exit 1; }

dst() { [ "$1" = v6 ] && echo "$SINK6" || echo "$INET_HTTP"; }
udp() { in_ns "$TOPO-dev" "$BLAST" "$(dst "$1")" 5002 "$SIZE" "$COUNT"; }
tcp() {
	local a; a=$(dst "$1")
	[ "$1" = v6 ] && a="[$a]"
	in_ns "$TOPO-dev" bash -c '
		t0=$EPOCHREALTIME
		dd if=/dev/zero bs=1M count='"$TPUT_MB"' 2>/dev/null | socat -u - TCP:'"$a"':5001
		t1=$EPOCHREALTIME
		echo "'"$TPUT_MB"' / ($t1 - $t0)" | bc -l'
}
# Both paths work before anything is timed.
for v in v4 v6; do
	read -r pps ns < <(COUNT=1000 udp $v)
	[ "${pps:-0}" -gt 0 ] || { echo "no UDP over $v" >&2; exit 1; }
done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
order=(v4 v6)
for i in $(seq "$RUNS"); do
	for j in 0 1; do
		v=${order[$(((i + j) % 2))]}
		read -r pps ns < <(udp $v)
		echo "$v udp ${pps:-0}"
		echo "$v cpu ${ns:-0}"
		echo "$v tcp $(tcp $v)"
	done
done >"$TOPO_TMP/runs"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# The IPv6 flows went through the policy: conntrack saw them
# masqueraded to the uplink's address (nat66).
in_ns "$NS_GW" conntrack -L -f ipv6 2>/dev/null | grep -q "src=$NET6::b .*dst=$GW_UP6" ||
	in_ns "$NS_GW" grep -q "src=$NET6::b .*dst=$GW_UP6" /proc/net/nf_conntrack 2>/dev/null ||
	echo "# (could not confirm the nat66 translation from conntrack)" >&2
stat() {	# stat FAMILY KIND -- "median min max" of the runs
	awk -v v=$1 -v k=$2 '$1 == v && $2 == k {print $3}' "$TOPO_TMP/runs" | sort -n |
		awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)], x[1], x[NR]}'
}
paired() {	# paired KIND -- median (range) of each round's v6-vs-v4 difference, %
	awk -v k=$1 '$2 == k && $1 == "v4" {o[++no] = $3}
	    $2 == k && $1 == "v6" {x[++nx] = $3}
	    END {for (i = 1; i <= nx; i++) print (x[i] - o[i]) * 100 / o[i]}' "$TOPO_TMP/runs" |
		sort -g | awk '{x[NR] = $1} END {printf "%+.1f%% (%+.1f to %+.1f)", x[int((NR + 1) / 2)], x[1], x[NR]}'
}
row() {	# row LABEL KIND
	local a a0 a1 b b0 b1
	read -r a a0 a1 < <(stat v4 $2)
	read -r b b0 b1 < <(stat v6 $2)
	printf "| %s | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %s |\n" \
		"$1" "$a" "$a0" "$a1" "$b" "$b0" "$b1" "$(paired $2)"
}
echo "Kernel $(uname -r), $(nproc) CPUs, nftables $(nft --version | awk '{print $2}'); one policy"
echo "with gateway.ipv6 (nat66) and 1,000 other sandboxes ($n6 with IPv6, the open ones);"
echo "median (range) of $RUNS rounds, both families in each (the first alternating); the"
echo "difference is the median (range) of each round's IPv6-vs-IPv4 difference;"
echo "load average $load0 at the start, $load1 at the end; $(date -u +%Y-%m-%d)."
echo
echo "| guest -> internet | IPv4 | IPv6 | IPv6 vs IPv4 |"
echo "|---|---:|---:|---:|"
row "UDP, $SIZE-byte datagrams (per second)" udp
row "UDP, sender's CPU per datagram, forwarding included (ns)" cpu
row "TCP bulk, $TPUT_MB MB (MB/s)" tcp
echo "# all runs:" >&2; cat "$TOPO_TMP/runs" >&2
