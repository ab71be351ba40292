#!/usr/bin/env bash
# dnsd-bench.sh -- dnsd vs dnsmasq vs unbound under dnsperf, side by side
# in one run, in network namespaces this script creates and removes:
#
#   guest ns "dev"/"web" (dnsperf) --> gw ns 10.77.0.1:53 (the resolver under
#   test, pinned to CPU 0) --> inet ns 203.0.113.53 (dnsmasq as a fast
#   authoritative upstream: address=/bench.test/203.0.113.10)
#
# Workloads, the same query files for every resolver:
#   hit   NAMES names of bench.test, warmed first, queried for SECONDS
#   miss  a unique name per query, each asked once (every query forwarded)
# dnsd runs with filtering on (policy lookup, rebinding filter, CNAME-chain
# check) and --rate 0; "dnsd allowlist" is sandbox web in allowlist mode
# with nft-rules' policy applied, so every answer also updates allow_web
# through the privileged parent before it is sent.  "dnsd-policy" is plain
# dnsd (sandbox dev, egress open) with the same nftables policy applied:
# the kernel's firewall and conntrack work on every packet is then the
# same as dnsd-allowlist's, and the allowlist mode is the only difference.
# The "-ct" rows are the same with the policy's notrack rules removed:
# guests' DNS to the gateway tracked by conntrack, as before they existed.
# With V6=1, gateway.ipv6 is on (web has IPv6) and the upstream also
# answers AAAA for bench.test (2001:db8:cafe::10, made public): the row
# "dnsd-allowlist-aaaa" is dnsd-allowlist asked AAAA instead of A, every
# answer opening allow6_web the same way, for AAAA hits against A hits:
#   V6=1 RESOLVERS="dnsd-allowlist dnsd-allowlist-aaaa" bash bench/dnsd-bench.sh
# With PREV_NFT_RULES=BINARY (another build of nft-rules, for example one
# from before a change to the policy), the row "dnsd-policy-prev" is
# dnsd-policy with that binary's policy, in the same run.
# The "dnsd-nft-min*" rows are plain dnsd behind the least nftables can
# be on the hooks the policy uses (min_rules below): the floor under any
# policy there.  "-ct" adds conntrack tracking the queries, "-nt" has
# conntrack loaded but the queries and answers untracked, as the policy
# does.  "dnsd-policy-noacct" and "dnsd-policy-nospoof" are dnsd-policy
# without the accounting lookups or without the bridge's address check
# on the query (policy_minus): measurement only, what each part costs.
# MISS=0 skips the miss runs.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one round of
# seconds-long loads, plain dnsd and dnsmasq only, never --write; proves
# the bench still starts its rows, measures nothing worth keeping.
#
# Prints a Markdown table; with --write replaces the measured block of the
# dnsd section of docs/benchmarks.md (between its markers; BLOCK=NAME picks
# the block <!-- NAME:begin --> ... <!-- NAME:end -->, default dnsd).  Nothing leaves
# the namespaces; loads stop by themselves (dnsperf -l / -n).
set -u
cd "$(dirname "$0")/.."
SECONDS_RUN=${SECONDS_RUN:-10}
NAMES=${NAMES:-1000}
MISSES=${MISSES:-60000}
RATE=${RATE:-2000}
PIN=${PIN:-1}		# 0: let the scheduler place resolver and dnsperf
cpu() { [ "$PIN" = 1 ] && echo "taskset -c $1"; }
# dnsd runs as gatewayd runs it, under the user the policy's output
# chain knows (falls back to nobody where the package is not installed).
DNSUSER=$(getent passwd moat-dns >/dev/null && echo moat-dns || echo nobody)
WRITE=0; [ "${1:-}" = "--write" ] && WRITE=1
BLOCK=${BLOCK:-dnsd}
LAT_SECONDS=${LAT_SECONDS:-3}
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	SECONDS_RUN=1 NAMES=100 MISSES=500 RATE=500 LAT_SECONDS=1 ROUNDS=1 WRITE=0
	RESOLVERS=${RESOLVERS:-dnsd dnsmasq}
fi
for t in dnsperf dnsmasq unbound; do
	command -v $t >/dev/null || { echo "bench: $t missing (apt-get install dnsperf dnsmasq unbound)" >&2; exit 1; }
done
[ -x build/dnsd ] || { echo "bench: build dnsd first (make)" >&2; exit 1; }
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_up >/dev/null || exit 1
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
W=$TOPO_TMP
V6=${V6:-0}
# The line is set here, not as a ${V6CONF:-...} default in the heredoc:
# bash 5.2 removes the quotes inside such a default, and dnsd then reads
# `[ 203.0.113.0/24 ]` (moat.conf:5: syntax error).
V6CONF='treat_as_public = [ "203.0.113.0/24" ];'; V6UP=
if [ "$V6" = 1 ]; then
	V6CONF='treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ]; ipv6 = { network = "fd77:0:0:1::/64"; uplink_mode = "nat66"; };'
	V6UP=--address=/bench.test/2001:db8:cafe::10
fi

cat >$W/moat.conf <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  state_dir = "$W/state";
  $V6CONF
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "*.bench.test" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
cat >$W/unbound.conf <<CONF
server:
  interface: 10.77.0.1
  port: 53
  access-control: 10.77.0.0/24 allow
  num-threads: 1
  do-ip6: no
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$W"
  pidfile: ""
  use-syslog: no
  module-config: "iterator"
  do-not-query-localhost: no
  private-domain: "bench.test"
  msg-cache-size: 16m
  rrset-cache-size: 32m
  verbosity: 0
  local-zone: "test." nodefault
forward-zone:
  name: "."
  forward-addr: 203.0.113.53
CONF
for q in A AAAA; do
	awk -v n=$NAMES -v q=$q 'BEGIN { for (i = 0; i < n; i++) printf "h%d.bench.test %s\n", i, q }' >$W/hit-$q.txt
done

topo_bg "$NS_INET" upstream $(cpu 1) dnsmasq -k --no-resolv --no-hosts \
	--listen-address=203.0.113.53 --bind-interfaces --user=nobody \
	--cache-size=0 --local-ttl=300 --address=/bench.test/203.0.113.10 $V6UP --log-facility=-
sleep 0.5

ct_count() { in_ns "$NS_GW" conntrack -C 2>/dev/null; }
ct_dns() { in_ns "$NS_GW" conntrack -L -p udp --orig-dst 10.77.0.1 --dport 53 2>/dev/null | wc -l; }

# track_dns -- the policy as it was before guests' DNS went untracked:
# the same rules but the notrack ones (the fast path's rule in raw_pre
# too: without it a query takes the rules after it), for the "-ct" rows.
track_dns() {
	local h
	for h in $(in_ns "$NS_GW" nft -a list chain inet moat raw_pre | awk '/notrack/ { print $NF }'); do
		in_ns "$NS_GW" nft delete rule inet moat raw_pre handle $h
	done
	in_ns "$NS_GW" nft flush chain inet moat raw_out 2>/dev/null
}

# min_rules MODE -- one accept rule on each hook the policy's DNS path
# meets: bridge prerouting; inet prerouting (raw), input, output (raw),
# output twice (filter, as the policy's output and acct_local).  MODE
# "min": nothing asks for conntrack; "ct": a ct expression registers
# conntrack's hooks and the queries are tracked; "nt": as ct, with the
# queries and answers untracked in the raw chains, as the policy does.
min_rules() {
	local ct= nt_in= nt_out=
	[ $1 != min ] && ct='ct state established,related counter'
	[ $1 = nt ] && { nt_in='udp dport 53 notrack'; nt_out='udp sport 53 notrack'; }
	in_ns "$NS_GW" nft -f - <<NFT
table bridge moat {
	chain prerouting { type filter hook prerouting priority filter; policy accept; accept; }
}
table inet moat {
	chain raw_pre { type filter hook prerouting priority raw; policy accept; $nt_in accept; }
	chain raw_out { type filter hook output priority raw; policy accept; $nt_out accept; }
	chain input { type filter hook input priority filter; policy accept; $ct accept; }
	chain output { type filter hook output priority filter; policy accept; accept; }
	chain acct_local { type filter hook output priority filter; policy accept; accept; }
}
NFT
}

# policy_minus PART -- measurement only: the policy without one part of
# what it does to a guest's query and its answer, to see what that part
# costs.  "acct": no accounting lookups (the fast path's rule in raw_pre
# without @acct_out, acct_local empty); "spoof": bridge prerouting accepts
# the query without checking port, MAC and address against @guest_ip.
policy_minus() {
	local h
	case $1 in
	acct)
		h=$(in_ns "$NS_GW" nft -a list chain inet moat raw_pre | awk '/@acct_out notrack accept/ { print $NF }')
		in_ns "$NS_GW" nft delete rule inet moat raw_pre handle $h
		# in its place: after the loopback rule
		in_ns "$NS_GW" nft add rule inet moat raw_pre position \
			"$(in_ns "$NS_GW" nft -a list chain inet moat raw_pre | awk '/iifname "lo" accept/ { print $NF }')" \
			iifname moat0 ip saddr 10.77.0.0/24 ip daddr 10.77.0.1 udp dport 53 notrack accept
		in_ns "$NS_GW" nft flush chain inet moat acct_local ;;
	spoof)
		h=$(in_ns "$NS_GW" nft -a list chain bridge moat prerouting | awk '/@guest_ip accept/ { print $NF }')
		in_ns "$NS_GW" nft replace rule bridge moat prerouting handle $h \
			ether type ip ip daddr 10.77.0.1 udp dport 53 accept ;;
	esac
}

# as_dnsd UID -- the policy's exemptions for dnsd's answers (untracked,
# the only UDP from port 53 to guests) also for UID: dnsmasq --nftset
# needs CAP_NET_ADMIN and runs as root, so it answers under the same
# rules as dnsd.
as_dnsd() {
	local uid; uid=$(id -u "$1")
	in_ns "$NS_GW" nft -f - <<NFT
insert rule inet moat raw_out oifname "moat0" ip saddr 10.77.0.1 ip daddr 10.77.0.0/24 udp sport 53 meta skuid $uid notrack
insert rule inet moat output meta skuid $uid oifname "moat0" ip saddr 10.77.0.1 ip daddr 10.77.0.0/24 udp sport 53 ct state untracked accept
NFT
}

# start_resolver NAME -- bring one resolver up on 10.77.0.1:53, pinned.
start_resolver() {
	case $1 in
	dnsd|dnsd-allowlist|dnsd-policy|dnsd-policy-ct|dnsd-allowlist-ct|dnsd-policy-prev|dnsd-policy-noacct|dnsd-policy-nospoof|dnsd-allowlist-aaaa)
		local nr=build/nft-rules
		[ $1 = dnsd-policy-prev ] && nr=${PREV_NFT_RULES:?PREV_NFT_RULES=BINARY for dnsd-policy-prev}
		[ $1 != dnsd ] && in_ns "$NS_GW" $nr -c $W/moat.conf apply
		case $1 in *-ct) track_dns;; *-noacct) policy_minus acct;; *-nospoof) policy_minus spoof;; esac
		topo_bg "$NS_GW" $1 $(cpu 0) build/dnsd -c $W/moat.conf -d \
			-u $DNSUSER --rate 0 --cache-size 67108864 \
			$([ $1 = dnsd ] && echo --no-nft) ;;
	dnsd-nft-min|dnsd-nft-min-ct|dnsd-nft-min-nt)
		local m=${1#dnsd-nft-}; m=${m#min-}
		min_rules $m
		topo_bg "$NS_GW" $1 $(cpu 0) build/dnsd -c $W/moat.conf -d \
			-u $DNSUSER --rate 0 --cache-size 67108864 --no-nft ;;
	dnsmasq)
		topo_bg "$NS_GW" dnsmasq $(cpu 0) dnsmasq -k --no-resolv --no-hosts \
			--listen-address=10.77.0.1 --bind-interfaces --user=nobody \
			--server=203.0.113.53 --cache-size=10000 --dns-forward-max=1000 \
			--log-facility=- ;;
	dnsmasq-nftset)
		# The same job as dnsd-allowlist: answers fill web's set.  It runs
		# as root, since nftset needs CAP_NET_ADMIN.
		in_ns "$NS_GW" build/nft-rules -c $W/moat.conf apply
		as_dnsd root
		topo_bg "$NS_GW" dnsmasq-nftset $(cpu 0) dnsmasq -k --no-resolv --no-hosts \
			--listen-address=10.77.0.1 --bind-interfaces --user=root \
			--server=203.0.113.53 --cache-size=10000 --dns-forward-max=1000 \
			--nftset=/bench.test/4#inet#moat#allow_web --log-facility=- ;;
	unbound)
		topo_bg "$NS_GW" unbound $(cpu 0) unbound -d -c $W/unbound.conf ;;
	*)
		RPID=; echo "bench: no resolver $1" >&2; return 1 ;;
	esac
	RPID=${TOPO_PIDS[-1]}
	for i in $(seq 50); do
		in_ns "$NS_GW" ss -Hlun "src 10.77.0.1:53" | grep -q . && return 0
		sleep 0.1
	done
	echo "bench: $1 did not start" >&2; cat $W/$1.log >&2; return 1
}
stop_resolver() {
	# "wait" with no pid would wait for the upstream too, forever.
	[ -n "$RPID" ] && { kill $RPID 2>/dev/null; wait $RPID 2>/dev/null; }
	in_ns "$NS_GW" nft delete table inet moat 2>/dev/null
	in_ns "$NS_GW" nft delete table bridge moat 2>/dev/null
	sleep 0.3
}

# perf GUEST FILE ARGS... -- throughput run (no per-query output, which
# would make dnsperf the bottleneck), then a latency run at a fixed
# $RATE q/s with per-query output; prints "qps p50 p99 p99.9 lost"
# (latencies in ms).
# res_cpu -- CPU time (user + system, ms) of the resolver's processes (the
# one started and its children: dnsd's worker), whatever else the machine
# runs: CPU per query is steadier than q/s on a shared machine.
res_cpu() {
	local p t=0 hz; hz=$(getconf CLK_TCK)
	for p in $RPID $(pgrep -P $RPID) $(pgrep -P "$(pgrep -P $RPID | head -1)" 2>/dev/null); do
		[ -r /proc/$p/stat ] || continue
		t=$((t + $(awk -v hz=$hz '{ sub(/.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' /proc/$p/stat)))
	done
	echo $t
}
perf() {
	local g=$1 f=$2 lf=$3; shift 3
	local c0 c1 nq us
	c0=$(res_cpu)
	# PROFILE=DIR: a system-wide profile of each throughput run (the
	# resolver, the parent that fills the sets, and the kernel's side).
	local pp=
	if [ -n "${PROFILE:-}" ]; then
		mkdir -p "$PROFILE"
		command perf record -q -a -g -o "$PROFILE/$CUR-$(basename "$f" .txt).data" \
			>/dev/null 2>&1 & pp=$!
		sleep 0.5
	fi
	# dnsperf's own CPU too: this kernel charges the softirq work of a
	# packet (veth, bridge, netfilter, the receiving socket) to the task
	# that sends it, so resolver + client is the whole path's cost.
	in_ns "$TOPO-$g" $(cpu 1) /usr/bin/time -f "%U %S" -o $W/time.out \
		dnsperf -s 10.77.0.1 -d "$f" -q 100 -t 2 "$@" >$W/perf.out 2>&1
	[ -n "$pp" ] && { kill -INT $pp; wait $pp; }
	c1=$(res_cpu)
	nq=$(awk "/Queries completed/ {print \$3}" $W/perf.out)
	us=$(awk -v c=$((c1 - c0)) -v n="${nq:-0}" 'BEGIN { printf "%.1f", (n > 0 ? c * 1000 / n : 0) }')
	local cus
	cus=$(awk -v n="${nq:-0}" '{ printf "%.1f", (n > 0 ? ($1 + $2) * 1e6 / n : 0) }' $W/time.out)
	local qps lost n
	qps=$(awk '/Queries per second/ {printf "%d", $4}' $W/perf.out)
	lost=$(awk '/Queries lost/ {print $3}' $W/perf.out)
	in_ns "$TOPO-$g" $(cpu 1) dnsperf -s 10.77.0.1 -d "$lf" -q 100 -t 2 -v \
		-Q $RATE -l $LAT_SECONDS >$W/perf.out 2>&1
	awk '$1 == ">" && $2 == "NOERROR" {print $NF * 1000}' $W/perf.out | sort -n >$W/lat
	n=$(wc -l <$W/lat)
	pct() { [ "$n" -gt 0 ] && sed -n "$(( (n * $1 + 999) / 1000 ))p" $W/lat | awk '{printf "%.3f", $1}' || echo -; }
	echo "${qps:-0} $(pct 500) $(pct 990) $(pct 999) ${lost:-?} $us $cus"
}

# Rounds interleave the resolvers (A B C D, A B C D, ...) so that a burst
# of load from elsewhere on the machine hits every one alike; each cell of
# the table is the median over the rounds.
ROUNDS=${ROUNDS:-3}
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
RESOLVERS=${RESOLVERS:-dnsd dnsd-policy-ct dnsd-policy dnsd-allowlist-ct dnsd-allowlist dnsmasq dnsmasq-nftset unbound}
: >$W/rows; : >$W/rounds
for round in $(seq $ROUNDS); do
	for q in A AAAA; do
		awk -v n=$MISSES -v r=$round -v q=$q 'BEGIN { for (i = 0; i < n; i++) printf "m%d-%d.bench.test %s\n", i, r, q }' >$W/miss-$q.txt
	done
	for r in $RESOLVERS; do
		q=A; case $r in *-aaaa) q=AAAA;; esac
		awk -v n=$((RATE * 4)) -v r=$r -v k=$round -v q=$q 'BEGIN { for (i = 0; i < n; i++) printf "l%d-%d.%s.bench.test %s\n", i, k, r, q }' >$W/miss-lat-$r.txt
		g=dev; case $r in dnsd-allowlist*|dnsmasq-nftset) g=web;; esac
		start_resolver $r || { stop_resolver; echo "$round $r" >>$W/failed; continue; }
		CUR=$r
		ct0=$(ct_count)
		in_ns "$TOPO-$g" dnsperf -s 10.77.0.1 -d $W/hit-$q.txt -n 1 -q 50 >/dev/null 2>&1	# warm
		hit=$(perf $g $W/hit-$q.txt $W/hit-$q.txt -l $SECONDS_RUN)
		miss="- - - - - - -"
		[ "${MISS:-1}" = 0 ] ||
			miss=$(perf $g $W/miss-$q.txt $W/miss-lat-$r.txt -n 1 -l $SECONDS_RUN)
		stop_resolver
		echo "$r $hit $miss" >>$W/rows
		echo "$round $r $hit" >>$W/rounds
		echo "  round $round $r: hit [$hit] miss [$miss] conntrack $ct0 -> $(ct_count) (guests' DNS to the gateway: $(ct_dns)); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	done
done
rows=()
for r in $RESOLVERS; do
	rows+=("$(awk -v r=$r '$1 == r { n++; for (i = 2; i <= NF; i++) v[i, n] = $i; nf = NF }
		END { printf "%s", r; for (i = 2; i <= nf; i++) {
			m = 0; for (a = 1; a <= n; a++) c[a] = v[i, a]
			for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++) if (c[b] + 0 < c[a] + 0) { t = c[a]; c[a] = c[b]; c[b] = t }
			printf " %s", c[int((n + 1) / 2)] } print "" }' $W/rows)")
done

table() {
	echo "| resolver | cache hit q/s | hit p50 ms | hit p99 ms | hit p99.9 ms | resolver CPU µs per hit | resolver + dnsperf CPU µs per hit | miss q/s | miss p50 ms | miss p99 ms | miss lost | CPU µs per miss |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for row in "${rows[@]}"; do
		set -- $row
		# A resolver that never started in any round has its name alone.
		if [ $# -lt 14 ]; then
			echo "| $1 | failed: did not start (see above) | | | | | | | | | | |"
			continue
		fi
		echo "| $1 | $2 | $3 | $4 | $5 | $7 | $(awk -v a=$7 -v b=$8 'BEGIN { printf "%.1f", a + b }') | ${9} | ${10} | ${11} | ${13} | ${14} |"
	done
}
out=$(table)
# Each row's hits against plain dnsd's in the same round (the first of
# RESOLVERS when dnsd is not among them): median (range) of the rounds,
# for q/s and for the resolver's CPU per hit.
base=dnsd; case " $RESOLVERS " in *" dnsd "*) ;; *) base=${RESOLVERS%% *};; esac
ratios=$(awk -v base=$base '
	{ q[$1, $2] = $3; c[$1, $2] = $8; t[$1, $2] = $8 + $9; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
	  if ($1 > nr) nr = $1 }
	function stat(a, k,   i, j, t, m) {
		m = 0; for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return sprintf("%.2f (%.2f-%.2f)", a[int((k + 1) / 2)], a[1], a[k]) }
	END {
		for (i = 1; i <= n; i++) { r = order[i]; if (r == base) continue
			k = 0; delete qa; delete ca; delete ta
			for (d = 1; d <= nr; d++) if (((d, r) in q) && ((d, base) in q) && q[d, base] > 0 && c[d, base] > 0) {
				k++; qa[k] = q[d, r] / q[d, base]; ca[k] = c[d, r] / c[d, base]; ta[k] = t[d, r] / t[d, base] }
			if (k) printf "| %s | %s | %s | %s |\n", r, stat(qa, k), stat(ca, k), stat(ta, k)
		} }' $W/rounds)
echo "load average $LOAD0 at the start, $(cut -d' ' -f1 /proc/loadavg) at the end; ROUNDS=$ROUNDS SECONDS_RUN=$SECONDS_RUN"
echo "$out"
echo
echo "| against $base, same round | hit q/s | resolver CPU per hit | resolver + dnsperf CPU per hit |"
echo "|---|---:|---:|---:|"
echo "$ratios"

# A table with a failed row is printed, never written, and the run fails.
if [ -s $W/failed ]; then
	echo "bench: did not start (round resolver): $(paste -sd, $W/failed)" >&2
	exit 1
fi
if [ $WRITE -eq 1 ]; then
	# Only the measured block between the markers is replaced; the text
	# around it (what each row is, what limits it) is kept.
	f=docs/benchmarks.md
	[ -e $f ] || echo "# moat benchmarks" >$f
	sec=$(mktemp)
	{
		echo "<!-- $BLOCK:begin -->"
		echo "$(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load average $LOAD0 at the start and $(cut -d' ' -f1 /proc/loadavg) at the end;"
		echo "dnsperf $(dnsperf -h 2>&1 | sed -n 's/^Version //p' | head -1), dnsmasq $(dnsmasq --version | head -1 | awk '{print $3}'), unbound $(unbound -V 2>/dev/null | sed -n 's/^Version //p');"
		echo "SECONDS_RUN=$SECONDS_RUN ROUNDS=$ROUNDS PIN=$PIN."
		echo
		echo "$out"
		echo
		echo "| against $base, same round | hit q/s | resolver CPU per hit | resolver + dnsperf CPU per hit |"
		echo "|---|---:|---:|---:|"
		echo "$ratios"
		echo "<!-- $BLOCK:end -->"
	} >$sec
	awk -v sec=$sec -v b="<!-- $BLOCK:begin -->" -v e="<!-- $BLOCK:end -->" '
		$0 == b { skip = 1; while ((getline l < sec) > 0) print l; done = 1; next }
		skip && $0 == e { skip = 0; next }
		!skip { print }
		END { if (!done) { print ""; print "## dnsd"; print ""; while ((getline l < sec) > 0) print l } }' $f >$f.new && mv $f.new $f
	rm -f $sec
	echo "bench: wrote the dnsd section of $f" >&2
fi
