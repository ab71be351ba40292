#!/usr/bin/env bash
# containment-scan.sh -- wall time and probe count of the default
# containment-check scan, inside this run's namespace topology only, with
# moat's full policy applied (nft-rules) and without any policy.
# Usage: bash bench/containment-scan.sh [RUNS]   (default 5, at most 20)
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh
runs=${1:-5}; [ "$runs" -ge 1 ] && [ "$runs" -le 20 ] || runs=5
cc_topo >/dev/null || { echo "bench: topology failed" >&2; exit 1; }
conf=$TOPO_TMP/bench.conf
sed -n '/^gateway: {/,/^);/p' tests/integration/40-containment-policy.sh >"$conf"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_msgs_per_sec=100000 \
	net.ipv4.icmp_msgs_burst=100000 2>/dev/null

series() {	# series LABEL -- RUNS scans, one line of numbers
	local i t=() p
	for i in $(seq "$runs"); do
		cc_scan web
		t+=("$(cc_q 'r["elapsed_ms"]')"); p=$(cc_q 'r["probes"]')
	done
	printf '%s\n' "${t[@]}" | sort -n | awk -v l="$1" -v p="$p" -v n="$runs" \
		'{v[NR]=$1} END {printf "%-44s probes %s  runs %d  min %.0f ms  median %.0f ms  max %.0f ms\n", l, p, n, v[1], v[int((NR+1)/2)], v[NR]}'
}
in_ns "$NS_GW" build/nft-rules -c "$conf" apply >/dev/null || exit 1
series "full policy, ICMP rate limit lifted"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=1000 net.ipv6.icmp.ratelimit=1000
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_msgs_per_sec=1000 net.ipv4.icmp_msgs_burst=50 2>/dev/null
series "full policy, kernel default ICMP rate limit"
in_ns "$NS_GW" build/nft-rules -c "$conf" flush >/dev/null
ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1
series "no policy (every gateway port answers RST)"
