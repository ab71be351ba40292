#!/usr/bin/env bash
# dns-rules.sh -- how many of the policy's rules one guest DNS query and
# its answer are evaluated against, counted from the kernel's trace.
#
#   bash bench/dns-rules.sh [NFT_RULES...]     # default build/nft-rules
#
# In namespaces this script creates and removes: guest "dev" (an open
# sandbox) asks the gateway 10.77.0.1 one UDP question on port 53; a
# stand-in for dnsd, run as dnsd's user (moat-dns, where installed),
# answers it.  The policy of each NFT_RULES binary given (for example an
# older build next to the current one) is applied in turn, and the same
# query traced with `meta nftrace` set ahead of moat's tables in bridge
# prerouting, inet prerouting and inet output (tests/harness/nft-trace.sh).
# For each chain the packet met, the count is the position of the rule
# whose verdict ended the chain, or every rule of a chain it fell through:
# the kernel evaluates a chain's rules in order until one decides.  A
# rule is counted once whatever its number of expressions.
#
# One query per binary: BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh)
# changes nothing, the bench is already that small.
# Prints a Markdown table, one column per binary.  Nothing leaves the
# namespaces.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/nft-trace.sh
[ $# -gt 0 ] || set -- build/nft-rules
for b; do [ -x "$b" ] || { echo "bench: $b is not built" >&2; exit 1; }; done
topo_up >/dev/null || exit 1
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
W=$TOPO_TMP
cat >$W/moat.conf <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  state_dir = "$W/state";
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
topo_bg "$NS_GW" echo53 $(as_dns_user) python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.1", 53))
while True:
    d, a = s.recvfrom(512)
    s.sendto(d, a)'
ask() {
	in_ns "$TOPO-dev" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01", ("10.77.0.1", 53))
s.recvfrom(512)'
}
wait_for 30 in_ns "$NS_GW" ss -Hlun "src 10.77.0.1:53" >/dev/null ||
	{ echo "bench: the stand-in resolver did not start" >&2; exit 1; }

col=0
for b; do
	col=$((col + 1))
	in_ns "$NS_GW" "$b" -c $W/moat.conf apply || exit 1
	ask || { echo "bench: no answer with $b's policy" >&2; exit 1; }
	trace_start "$NS_GW" "ip saddr 10.77.0.0/24 ip daddr 10.77.0.0/24 meta l4proto udp th dport 53" ||
		exit 1
	in_ns "$NS_GW" nft add rule inet mtrace out ip saddr 10.77.0.1 ip daddr 10.77.0.0/24 udp sport 53 meta nftrace set 1
	ask || { echo "bench: no answer while tracing" >&2; exit 1; }
	trace_stop "$NS_GW"
	# One trace per hook; the query's (bridge, raw_pre, input) come
	# before the answer's (raw_out, output, acct_post).
	trace_walk "$NS_GW" | awk -v c=$col '{ print c, $2, $3, $4, $5 }' >>$W/walk
	in_ns "$NS_GW" nft delete table inet moat
	in_ns "$NS_GW" nft delete table bridge moat
done

awk -v ncol=$col -v names="$*" '
	BEGIN { split(names, nm, " ") }
	{ k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	  v[k, $1] = $4 " (" $5 ")"; tot[$1] += $4
	  side = ($3 ~ /^(raw_out|output|acct_post|dns_out)$/) ? "answer" : "query"
	  part[$1, side] += $4 }
	END {
		printf "| chain |"; for (c = 1; c <= ncol; c++) printf " %s |", nm[c]; print ""
		printf "|---|"; for (c = 1; c <= ncol; c++) printf "---:|"; print ""
		for (i = 1; i <= n; i++) {
			printf "| %s |", order[i]
			for (c = 1; c <= ncol; c++) printf " %s |", ((order[i], c) in v) ? v[order[i], c] : "-"
			print ""
		}
		printf "| query |"; for (c = 1; c <= ncol; c++) printf " %d |", part[c, "query"]; print ""
		printf "| answer |"; for (c = 1; c <= ncol; c++) printf " %d |", part[c, "answer"]; print ""
		printf "| **total** |"; for (c = 1; c <= ncol; c++) printf " **%d** |", tot[c]; print ""
	}' $W/walk
