#!/usr/bin/env bash
# load-bench.sh -- the proxy and dnsd under many sandboxes, with their
# memory, in network namespaces this script creates and removes.
#
#   bash bench/load-bench.sh [proxy|dns|all]     (root; dnsperf, python3)
#
# proxy: gatewayd with its policy and a pool of WORKERS (2) proxy workers
#   (gateway.proxy.workers); SANDBOXES (100) guest namespaces on the
#   bridge, each a sandbox of the configuration; IDLE (100) idle CONNECT
#   tunnels per sandbox (each carries one request, then idles), then
#   ACTIVE (10) keep-alive connections per sandbox sending plain-HTTP GETs
#   back to back for SECS (20) seconds while the tunnels stay open.  The
#   workers' RSS (summed) before, with the tunnels open and under load, and
#   whether any connection was refused (proxy.per_sandbox is set to 256,
#   above the 110 each sandbox opens; each worker's descriptor budget is a
#   third of the limit, and a worker gets the sandboxes of its share of
#   guest addresses, so neither is the limit either).
# dns: DNS_SANDBOXES (1000) sandboxes in a /22; dnsperf from one guest
#   namespace whose source addresses are spread over all of them by SNAT
#   in that namespace (a flow per dnsperf client, DNS_CLIENTS (1000) of
#   them, each given the next sandbox's address);
#   cache hits for DNS_SECS (10) seconds; dnsd's q/s and RSS.
#
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): 2 sandboxes of
# 2 idle and 1 active connections for 2 s on one worker; 10 DNS sandboxes,
# 8 clients, 2 s.
# Every loop is bounded in count and time; load generators stop by
# themselves (SIGALRM, dnsperf -l); nothing leaves the namespaces.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh
WHAT=${1:-all}
SANDBOXES=${SANDBOXES:-100}
IDLE=${IDLE:-100}
ACTIVE=${ACTIVE:-10}
WORKERS=${WORKERS:-2}
SECS=${SECS:-20}
DNS_SANDBOXES=${DNS_SANDBOXES:-1000}
DNS_CLIENTS=${DNS_CLIENTS:-1000}
DNS_SECS=${DNS_SECS:-10}
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	SANDBOXES=2 IDLE=2 ACTIVE=1 WORKERS=1 SECS=2 DNS_SANDBOXES=10 DNS_CLIENTS=8 DNS_SECS=2
fi
[ "$SANDBOXES" -le 150 ] || { echo "bench: at most 150 sandboxes (one /24)"; exit 2; }
[ "$DNS_SANDBOXES" -le 1000 ] || { echo "bench: at most 1000 DNS sandboxes"; exit 2; }
[ -x build/moat-proxy ] && [ -x build/dnsd ] && [ -x build/gatewayd ] || { echo "bench: make first"; exit 1; }
# Each proxy worker's connection budget is a third of its descriptor
# limit: lift the limit as far as this host lets us (a hard limit can only
# be raised with CAP_SYS_RESOURCE).  100 x (100 idle + 10 active) needs
# about 34,000 descriptors in all, 17,000 for each of two workers; the
# client holds 11,000 sockets and the server as many.
ulimit -Hn 262144 2>/dev/null || echo "# descriptor hard limit stays $(ulimit -Hn)" >&2
ulimit -n "$(ulimit -Hn)"
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/"$1"/status; }

proxy_load() {
	local extra="" i mac pid srv
	topo_up >/dev/null || return 1
	for i in $(seq 0 $((SANDBOXES - 1))); do
		mac=$(printf '52:54:00:00:01:%02x' "$i")
		topo_guest "l$i" 10.77.0.$((100 + i)) "$mac" "mt-l$i" || return 1
		extra="$extra,
  { name = \"l$i\"; mac = \"$mac\"; address = \"10.77.0.$((100 + i))\"; tap = \"mt-l$i\"; egress = \"open\"; }"
	done
	ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1
	srv=$TOPO_TMP/bench-server
	cc -O2 -o "$srv" bench/bench-server.c -lssl -lcrypto -lpthread || return 1
	proxy_certs && proxy_conf "$TOPO_TMP/moat.conf" "$extra" || return 1
	sed -i "s/intercept = true; }/intercept = true; per_sandbox = 256; workers = $WORKERS; }/" "$TOPO_TMP/moat.conf"
	ip -n "$NS_INET" addr add $PX_OTHER/24 dev eth0
	topo_bg "$NS_INET" px-dns python3 tests/harness/cc-dns.py 203.0.113.53 \
	    other.test=$PX_OTHER --lifetime 600
	topo_bg "$NS_INET" srv-tls "$srv" $PX_OTHER 443 "$PX_DIR/other.test.crt" \
	    "$PX_DIR/other.test.key" 600
	topo_bg "$NS_INET" srv-plain "$srv" $PX_OTHER 80 - - 600
	topo_wait_port "$NS_INET" $PX_OTHER 443 && topo_wait_port "$NS_INET" $PX_OTHER 80 || return 1
	chmod 711 "$TOPO_TMP"
	gw_start >&2 || return 1
	wait_for 60 gw_proxy_new "" && topo_wait_port "$NS_GW" $GW_ADDR 3128 || return 1
	pid=$(gw_proxy_pids | tr ' ' ,)
	echo "# proxy: gatewayd with $WORKERS workers (pids $pid); $SANDBOXES sandboxes x ($IDLE idle + $ACTIVE active), ${SECS} s of load; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	local nses=()
	for i in $(seq 0 $((SANDBOXES - 1))); do nses+=("$TOPO-l$i"); done
	PROXY_RESULT=$(timeout $((SECS + 300)) python3 bench/load-clients.py "$pid" \
	    $GW_ADDR 3128 $PX_OTHER:80 "http://$PX_OTHER/small" \
	    "$IDLE" "$ACTIVE" "$SECS" "${nses[@]}")
	echo "# $PROXY_RESULT" >&2
	echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	grep -c 'too many connections' "$GW_LOG" | sed 's/^/# per-sandbox refusals logged: /' >&2
	local p lim
	for p in $(gw_proxy_pids); do	# each worker's own budget
		lim=$(awk '/^Max open files/ {print $4}' /proc/$p/limits)
		echo "# worker pid $p: descriptor limit $lim, connection budget $((lim / 3 - 16))" >&2
	done
	echo "# workers still the same: $(gw_proxy_pids | tr ' ' ,)" >&2
	topo_down
}

dns_load() {
	local extra="" i a pid hi lo
	TOPO=moatd$$ TOPO_TMP=$(mktemp -d /tmp/moatd$$.XXXXXX)
	NS_GW=$TOPO-gw NS_INET=$TOPO-inet NS_LAN=$TOPO-lan
	topo_up >/dev/null || return 1
	topo_guest q 10.77.0.10 52:54:00:00:00:0a mt-q || return 1
	# the /24 becomes a /22 on both ends; the guest holds every
	# sandbox's address, so that it answers ARP for them all
	ip -n "$NS_GW" addr del 10.77.0.1/24 dev moat0
	ip -n "$NS_GW" addr add 10.77.0.1/22 dev moat0
	ip -n "$TOPO-q" addr del 10.77.0.10/24 dev eth0
	ip -n "$TOPO-q" route del default 2>/dev/null
	for i in $(seq 0 $((DNS_SANDBOXES - 1))); do
		a=$((10 + i)); echo "addr add 10.77.$((a / 256)).$((a % 256))/22 dev eth0"
	done | ip -n "$TOPO-q" -batch - || return 1
	ip -n "$TOPO-q" route add default via 10.77.0.1
	for i in $(seq 0 $((DNS_SANDBOXES - 1))); do
		a=$((10 + i)); hi=$((a / 256)); lo=$((a % 256))
		extra="$extra
  { name = \"s$i\"; mac = \"52:54:00:01:$(printf '%02x:%02x' $hi $lo)\"; address = \"10.77.$hi.$lo\"; tap = \"mt-s$i\"; egress = \"open\"; },"
	done
	cat >"$TOPO_TMP/moat.conf" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/22"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$TOPO_TMP/state";
};
sandboxes = (${extra%,}
);
CONF
	# Source addresses: each new flow from the guest (a dnsperf client)
	# gets the next sandbox's address, round robin (numgen).
	in_ns "$TOPO-q" nft -f - <<NFT || return 1
table ip loadsnat {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		udp dport 53 snat to numgen inc mod $DNS_SANDBOXES map { $(awk -v n=$DNS_SANDBOXES \
		    'BEGIN { for (i = 0; i < n; i++) printf "%s%d : 10.77.%d.%d", i ? ", " : "", i, int((10 + i) / 256), (10 + i) % 256 }') }
	}
}
NFT
	awk 'BEGIN { for (i = 0; i < 1000; i++) printf "h%d.bench.test A\n", i }' >"$TOPO_TMP/hit.txt"
	topo_bg "$NS_INET" upstream dnsmasq -k --no-resolv --no-hosts \
	    --listen-address=203.0.113.53 --bind-interfaces --user=nobody \
	    --cache-size=0 --local-ttl=300 --address=/bench.test/203.0.113.10 --log-facility=-
	topo_bg "$NS_GW" dnsd build/dnsd -c "$TOPO_TMP/moat.conf" -d -u nobody \
	    --rate 0 --no-nft
	wait_for 30 bash -c "ip netns exec $NS_GW ss -Hlun 'src 10.77.0.1:53' | grep -q ." || return 1
	# dnsd's processes (the privileged parent and the worker): RSS summed
	pid=$(in_ns "$NS_GW" ss -Hlunp "src 10.77.0.1:53" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
	local r0 r1 out
	rss_all() { local p t=0; for p in $pid; do t=$((t + $(rss_kb $p))); done; echo $t; }
	r0=$(rss_all)
	in_ns "$TOPO-q" dnsperf -s 10.77.0.1 -d "$TOPO_TMP/hit.txt" -n 1 -q 50 >/dev/null 2>&1
	# dnsperf takes at most 256 clients: DNS_CLIENTS over 4 of them
	local k dps=()
	for k in 1 2 3 4; do
		in_ns "$TOPO-q" dnsperf -s 10.77.0.1 -d "$TOPO_TMP/hit.txt" \
		    -c $((DNS_CLIENTS / 4)) -q 100 -l "$DNS_SECS" >"$TOPO_TMP/perf$k.out" 2>&1 &
		dps+=($!)
	done
	sleep $((DNS_SECS / 2))
	r1=$(rss_all)
	wait "${dps[@]}"
	local qps lost srcs
	qps=$(cat "$TOPO_TMP"/perf[1-4].out | awk '/Queries per second/ {s += $4} END {printf "%d", s}')
	lost=$(cat "$TOPO_TMP"/perf[1-4].out | awk '/Queries lost/ {s += $3} END {print s + 0}')
	# the reply tuple's destination is the address the flow was given
	srcs=$(in_ns "$TOPO-q" conntrack -L -p udp 2>/dev/null |
	    awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^dst=/ && ++n == 2) print $i }' |
	    sort -u | wc -l)
	DNS_RESULT="sandboxes=$DNS_SANDBOXES sources_seen=$srcs qps=$qps lost=$lost rss0_kb=$r0 rss_load_kb=$r1"
	echo "# $DNS_RESULT" >&2
	topo_down
}

topo_trap
case $WHAT in
proxy) proxy_load ;;
dns) dns_load ;;
all) proxy_load && dns_load ;;
*) echo "usage: load-bench.sh [proxy|dns|all]"; exit 2 ;;
esac
echo
[ -n "${PROXY_RESULT:-}" ] && echo "proxy: $PROXY_RESULT"
[ -n "${DNS_RESULT:-}" ] && echo "dns: $DNS_RESULT"
exit 0
