#!/usr/bin/env bash
# nft-acct.sh -- what per-sandbox traffic accounting costs on the
# forwarding path (a script that prints a table, not a timed test).  A
# guest sends small UDP datagrams to the internet namespace through the
# gateway with 1,000 other sandboxes configured, under the whole policy
# and under the same policy without the accounting rules (those naming an
# acct_* set, and chain acct_post), loaded alternately so that drift in
# the machine's load hits both alike.  Also bulk TCP, for scale.
# Everything runs in network namespaces this script creates and removes;
# no packet leaves them.
#
# usage: bench/nft-acct.sh   (as root, after make)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_trap
RUNS=${RUNS:-7}
COUNT=${COUNT:-1000000}		# datagrams per run
SIZE=${SIZE:-64}
TPUT_MB=${TPUT_MB:-512}
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
"$NFTR" -c "$TOPO_TMP/s.conf" render >"$TOPO_TMP/with.nft" || exit 1
# The same text without the accounting rules (the sets stay, unused).
awk '/^\tchain acct_post \{/ {skip = 1} !skip && !/^\t\t.*@acct_/ {print} skip && /^\t\}/ {skip = 0}' \
	"$TOPO_TMP/with.nft" >"$TOPO_TMP/without.nft"
grep -q '@acct_' "$TOPO_TMP/without.nft" && { echo "accounting rule left in" >&2; exit 1; }

udp() { in_ns "$TOPO-dev" "$BLAST" $INET_HTTP 5002 "$SIZE" "$COUNT"; }
tcp() {
	in_ns "$TOPO-dev" bash -c '
		t0=$EPOCHREALTIME
		dd if=/dev/zero bs=1M count='"$TPUT_MB"' 2>/dev/null | socat -u - TCP:'"$INET_HTTP"':5001
		t1=$EPOCHREALTIME
		echo "'"$TPUT_MB"' / ($t1 - $t0)" | bc -l'
}
for i in $(seq "$RUNS"); do
	for v in without with; do	# "with" last: its counts are checked
		in_ns "$NS_GW" nft -f "$TOPO_TMP/$v.nft" || exit 1
		read -r pps ns < <(udp)
		echo "$v udp ${pps:-0}"
		echo "$v cpu ${ns:-0}"
		echo "$v tcp $(tcp)"
	done
done >"$TOPO_TMP/runs"
n=$(in_ns "$NS_GW" nft list set inet moat acct_out | grep -o '10\.77\.0\.11 counter packets [0-9]*' | awk '{print $4}')
[ "${n:-0}" -ge "$COUNT" ] || { echo "accounting did not count the datagrams ($n)" >&2; exit 1; }
declare -A R
for v in with without; do
	for k in udp cpu tcp; do
		R[$v$k]=$(awk -v v=$v -v k=$k '$1 == v && $2 == k {print $3}' "$TOPO_TMP/runs" | median)
	done
done
echo "Kernel $(uname -r), $(nproc) CPUs, nftables $(nft --version | awk '{print $2}'); 1,000"
echo "other sandboxes; median of $RUNS alternating runs; load average $(cut -d' ' -f1 /proc/loadavg)"
echo "at the end; $(date -u +%Y-%m-%d)."
echo
echo "| guest -> internet | with accounting | without | difference |"
echo "|---|---:|---:|---:|"
printf "| UDP, %d-byte datagrams (per second) | %.0f | %.0f | %+.1f%% |\n" "$SIZE" \
	"${R[withudp]}" "${R[withoutudp]}" \
	"$(echo "(${R[withudp]} - ${R[withoutudp]}) * 100 / ${R[withoutudp]}" | bc -l)"
printf "| UDP, sender's CPU per datagram, forwarding included (ns) | %.0f | %.0f | %+.1f%% |\n" \
	"${R[withcpu]}" "${R[withoutcpu]}" \
	"$(echo "(${R[withcpu]} - ${R[withoutcpu]}) * 100 / ${R[withoutcpu]}" | bc -l)"
printf "| TCP bulk, %d MB (MB/s) | %.0f | %.0f | %+.1f%% |\n" "$TPUT_MB" \
	"${R[withtcp]}" "${R[withouttcp]}" \
	"$(echo "(${R[withtcp]} - ${R[withouttcp]}) * 100 / ${R[withouttcp]}" | bc -l)"
echo
echo "# all runs:" >&2; cat "$TOPO_TMP/runs" >&2
