#!/usr/bin/env bash
# containment-scan.sh -- wall time and probe count of the default
# containment-check scan, inside this run's namespace topology only, with
# moat's full policy applied (nft-rules), with it for a dual-stack guest,
# and without any policy.
# Usage: bash bench/containment-scan.sh [RUNS]   (default 5, at most 20)
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one scan, the
# policy as applied by default only.
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh
runs=${1:-5}; [ "$runs" -ge 1 ] && [ "$runs" -le 20 ] || runs=5
SMOKE=0; [ "${BENCH_SMOKE:-0}" = 1 ] && SMOKE=1 runs=1
cc_topo >/dev/null || { echo "bench: topology failed" >&2; exit 1; }
conf=$TOPO_TMP/bench.conf
mkdir -p "$TOPO_TMP/state"
sed -n '/^gateway: {/,/^);/p' tests/integration/40-containment-policy.sh |
	sed "s|\$TOPO_TMP|$TOPO_TMP|" >"$conf"
# The same policy with the kernel's ICMP rate limits left as they are.
sed 's/^gateway: {/gateway: {\n  refusals: { fast = false; };/' "$conf" >"$conf.slow"
# A fresh namespace starts at the kernel's default sysctls: say so.
echo "# gateway namespace before apply: $(in_ns "$NS_GW" sysctl -n \
	net.ipv4.icmp_ratelimit net.ipv4.icmp_msgs_per_sec net.ipv4.icmp_msgs_burst |
	paste -sd/) (icmp_ratelimit ms / msgs_per_sec / burst)"

series() {	# series LABEL -- RUNS scans, one markdown row
	local i t=() p
	for i in $(seq "$runs"); do
		cc_scan web
		t+=("$(cc_q 'r["elapsed_ms"]')"); p=$(cc_q 'r["probes"]')
	done
	printf '%s\n' "${t[@]}" | sort -n | awk -v l="$1" -v p="$p" -v n="$runs" \
		'{v[NR]=$1} END {printf "| %s | %s | %d | %.1f s | %.1f–%.1f s |\n", l, p, n, v[int((NR+1)/2)]/1000, v[1]/1000, v[NR]/1000}'
}
echo "| setup | probes | runs | median wall time | range |"
echo "|---|---|---|---|---|"
# The policy test's proxy behind interception (the default), as there.
topo_bg "$NS_GW" moat-proxy build/moat-proxy -d -c "$conf" --user nobody
topo_wait_port "$NS_GW" $GW_ADDR 3128 || exit 1
if [ $SMOKE = 0 ]; then
	in_ns "$NS_GW" build/nft-rules -c "$conf.slow" --proxy-user nobody apply >/dev/null || exit 1
	series "full policy, kernel default ICMP rate limits (\`refusals.fast = false\`)"
fi
in_ns "$NS_GW" build/nft-rules -c "$conf" --proxy-user nobody apply >/dev/null || exit 1
series "full policy as applied by default (fast refusals: per-host limit off, global cap 100,000/s)"
[ $SMOKE = 1 ] && exit 0
# The same guest dual-stack, as 41-containment-v6 makes it: a global /64
# on the sandbox network and a route into 2000::/3 through the gateway,
# so that every IPv6 probe is routed.  The bench's sandboxes have no IPv6
# in moat.conf, so the policy drops the guest's IPv6 at the bridge, its
# neighbour solicitations for the next hop included.
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add 2001:db8:77::1/64 dev moat0 nodad
ip -n "$TOPO-web" addr add 2001:db8:77::10/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add 2000::/3 via 2001:db8:77::1
series "full policy as applied by default, the guest dual-stack (a global IPv6 /64 and route)"
ip -n "$TOPO-web" -6 route del 2000::/3 via 2001:db8:77::1
ip -n "$TOPO-web" addr del 2001:db8:77::10/64 dev eth0
in_ns "$NS_GW" build/nft-rules -c "$conf" flush >/dev/null
ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1
series "no policy (bare topology; every gateway port answers RST)"
echo "# $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
