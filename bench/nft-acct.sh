#!/usr/bin/env bash
# nft-acct.sh -- what per-sandbox traffic accounting and egress budgets
# cost on the forwarding path (a script that prints a table, not a timed
# test).  A guest sends small UDP datagrams, and bulk TCP, to the internet
# namespace through the gateway with 1,000 other sandboxes configured,
# under three policies loaded in turn each round, so that drift in the
# machine's load hits all alike:
#   off     the policy without the accounting rules (those naming an
#           acct_* set, and chain acct_local) and without budgets;
#   acct    the policy as nft-rules renders it (accounting on);
#   budget  the same with egress_bytes_per_day on every sandbox, and the
#           1,000 others' addresses in budget_spent (as if all were spent:
#           the set is as full as it gets; the guest itself is not in it).
# Each figure is the median of RUNS rounds with its range, each
# difference the median of the rounds' own differences; the load
# average is shown at the start and the end.
# Everything runs in network namespaces this script creates and removes;
# no packet leaves them.
#
# usage: bench/nft-acct.sh   (as root, after make)
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

make -s build/nft-rules >/dev/null || exit 1
cc -O2 -std=c17 -D_GNU_SOURCE -o "$BLAST" bench/udp-blast.c || exit 1
. bench/gen-conf.sh
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

topo_up || exit 1
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_bg "$NS_INET" usink socat -u UDP-RECV:5002,bind=$INET_HTTP OPEN:/dev/null
topo_bg "$NS_INET" tsink socat -u TCP-LISTEN:5001,bind=$INET_HTTP,reuseaddr,fork OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 5001 || exit 1
gen_conf 1000 "$TOPO_TMP/s.conf" dev
GEN_GATEWAY='  egress_bytes_per_day = "1T";' gen_conf 1000 "$TOPO_TMP/b.conf" dev
"$NFTR" -c "$TOPO_TMP/s.conf" render >"$TOPO_TMP/acct.nft" || exit 1
"$NFTR" -c "$TOPO_TMP/b.conf" render >"$TOPO_TMP/budget.nft" || exit 1
# The same text without the accounting rules (the sets stay, unused).
awk '/^\tchain acct_local \{/ {skip = 1} !skip && !/^\t\t.*@acct_/ {print} skip && /^\t\}/ {skip = 0}' \
	"$TOPO_TMP/acct.nft" >"$TOPO_TMP/off.nft"
grep -q '@acct_' "$TOPO_TMP/off.nft" && { echo "accounting rule left in" >&2; exit 1; }
grep -q '@budget_spent' "$TOPO_TMP/budget.nft" || { echo "no budget rule" >&2; exit 1; }
# The other sandboxes' addresses, for budget_spent.
spent=$(grep -o 'address = "10\.77\.[0-9]*\.[0-9]*"' "$TOPO_TMP/b.conf" | grep -v '10\.77\.0\.11"' |
	cut -d'"' -f2 | sed 's/$/ timeout 1h/' | paste -sd, -)
load_policy() {
	in_ns "$NS_GW" nft -f "$TOPO_TMP/$1.nft" || return 1
	[ "$1" = budget ] || return 0
	in_ns "$NS_GW" nft add element inet moat budget_spent "{ $spent }"
}
# Rules a datagram of the guest's established flow meets, from the
# rendered text: raw_pre, forward, guest_fwd up to its established
# accept, nat_post (acct_local is at output: forwarded packets never
# meet it).
rules_met() {
	awk '/^\tchain (raw_pre|nat_post|forward) \{/ {c = 1; next}
	     /^\tchain guest_fwd \{/ {c = 2; next}
	     c && /^\t\}/ {c = 0}
	     c == 1 && /^\t\t[a-z]/ && !/^\t\ttype / {n++}
	     c == 2 && /^\t\t[a-z]/ {n++; if (/established,related accept/) c = 3}
	     END {print n}' "$TOPO_TMP/$1.nft"
}
udp() { in_ns "$TOPO-dev" "$BLAST" $INET_HTTP 5002 "$SIZE" "$COUNT"; }
tcp() {
	in_ns "$TOPO-dev" bash -c '
		t0=$EPOCHREALTIME
		dd if=/dev/zero bs=1M count='"$TPUT_MB"' 2>/dev/null | socat -u - TCP:'"$INET_HTTP"':5001
		t1=$EPOCHREALTIME
		echo "'"$TPUT_MB"' / ($t1 - $t0)" | bc -l'
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
order=(off acct budget)
for i in $(seq "$RUNS"); do
	# Each round starts with the next policy, so that none always runs
	# first or last (the machine's caches and load drift alike for all).
	for j in 0 1 2; do
		v=${order[$(((i + j) % 3))]}
		load_policy $v || exit 1
		read -r pps ns < <(udp)
		echo "$v udp ${pps:-0}"
		echo "$v cpu ${ns:-0}"
		echo "$v tcp $(tcp)"
	done
done >"$TOPO_TMP/runs"
load_policy acct || exit 1	# its counts are checked
udp >/dev/null
load1=$(cut -d' ' -f1-3 /proc/loadavg)
n=$(in_ns "$NS_GW" nft list set inet moat acct_out | grep -o '10\.77\.0\.11 counter packets [0-9]*' | awk '{print $4}')
[ "${n:-0}" -ge "$COUNT" ] || { echo "accounting did not count the datagrams ($n)" >&2; exit 1; }
# stat VARIANT KIND -- "median min max" of the runs
stat() {
	awk -v v=$1 -v k=$2 '$1 == v && $2 == k {print $3}' "$TOPO_TMP/runs" | sort -n |
		awk '{x[NR] = $1} END {print x[int((NR + 1) / 2)], x[1], x[NR]}'
}
# paired VARIANT KIND -- the median, over rounds, of the variant's
# difference from "off" in the same round, in percent, and its range
paired() {
	awk -v v=$1 -v k=$2 '$2 == k && $1 == "off" {o[++no] = $3}
	    $2 == k && $1 == v {x[++nx] = $3}
	    END {for (i = 1; i <= nx; i++) print (x[i] - o[i]) * 100 / o[i]}' "$TOPO_TMP/runs" |
		sort -g | awk '{x[NR] = $1} END {printf "%+.1f%% (%+.1f to %+.1f)", x[int((NR + 1) / 2)], x[1], x[NR]}'
}
row() {	# row LABEL KIND
	local o a b
	read -r o o0 o1 < <(stat off $2)
	read -r a a0 a1 < <(stat acct $2)
	read -r b b0 b1 < <(stat budget $2)
	printf "| %s | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %s | %s |\n" \
		"$1" "$o" "$o0" "$o1" "$a" "$a0" "$a1" "$b" "$b0" "$b1" \
		"$(paired acct $2)" "$(paired budget $2)"
}
echo "Kernel $(uname -r), $(nproc) CPUs, nftables $(nft --version | awk '{print $2}'); 1,000"
echo "other sandboxes; median (range) of $RUNS rounds, the three policies in turn in each"
echo "(each round starting with the next); the differences are the median (range) of each"
echo "round's difference from accounting off in that round;"
echo "load average $load0 at the start, $load1 at the end; $(date -u +%Y-%m-%d)."
echo
echo "| guest -> internet | accounting off | accounting on | on, with budgets | on vs off | with budgets vs off |"
echo "|---|---:|---:|---:|---:|---:|"
row "UDP, $SIZE-byte datagrams (per second)" udp
row "UDP, sender's CPU per datagram, forwarding included (ns)" cpu
row "TCP bulk, $TPUT_MB MB (MB/s)" tcp
echo
echo "Rules an established datagram meets (raw_pre, forward, guest_fwd to its established"
echo "accept, nat_post): off $(rules_met off), on $(rules_met acct), with budgets $(rules_met budget)."
echo "# all runs:" >&2; cat "$TOPO_TMP/runs" >&2
