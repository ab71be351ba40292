#!/usr/bin/env bash
# nft-apply.sh -- nft-rules benchmark (a script that prints a table, not a
# timed test).  Side by side in one run:
#   1. time to apply the policy for 10, 100, 1000 and 5000 sandboxes via the
#      library (one netlink batch) vs `nft -f` of the same rendered text;
#   2. latency of one allowlist element add (nftr_set_add, acked);
#   3. TCP throughput guest -> internet namespace with 0 vs 1000 other
#      sandboxes configured (the per-packet path must stay flat).
# Everything runs in network namespaces this script creates and removes;
# no packet leaves them.  Writes its section of docs/benchmarks.md.
#
# usage: bench/nft-apply.sh [--no-doc]   (as root, after make)
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one run of 10
# and 100 sandboxes, 50 adds, one 16 MB transfer each way; no doc.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_trap
RUNS=${RUNS:-5}
SIZES=${SIZES:-"10 100 1000 5000"}
TPUT_MB=${TPUT_MB:-1024}
ADDS=2000 TPUT_RUNS=5 DOC=1; [ "${1:-}" = "--no-doc" ] && DOC=0
[ "${BENCH_SMOKE:-0}" = 1 ] && RUNS=1 SIZES="10 100" ADDS=50 TPUT_RUNS=1 TPUT_MB=16 DOC=0
NFTR=$ROOT/build/nft-rules
BENCH=$TOPO_TMP/nft-bench

make -s build/nft-rules build/libnftrules.a build/libmoat.a >/dev/null || exit 1
cc -O2 -std=c17 -D_GNU_SOURCE -Ilib -Inft-rules -o "$BENCH" bench/nft-bench.c \
	build/libnftrules.a build/libmoat.a $(pkg-config --libs libnftnl libmnl libconfig) ||
	exit 1

. bench/gen-conf.sh

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# --- 1. apply time ---------------------------------------------------------
NS=$TOPO-bench
topo_ns "$NS" || exit 1
declare -A LIB NFT MSGS
for n in $SIZES; do
	conf=$TOPO_TMP/s$n.conf
	gen_conf "$n" "$conf"
	"$NFTR" -c "$conf" render >"$TOPO_TMP/s$n.nft" || exit 1
	MSGS[$n]=$("$NFTR" -c "$conf" check | sed 's/.*, \([0-9]*\) netlink.*/\1/')
	in_ns "$NS" "$NFTR" -c "$conf" flush
	LIB[$n]=$(in_ns "$NS" "$BENCH" apply "$conf" "$RUNS") || exit 1
	in_ns "$NS" "$NFTR" -c "$conf" flush
	# Timed inside the namespace so that only nft itself is measured.
	NFT[$n]=$(in_ns "$NS" bash -c '
		for i in $(seq '"$RUNS"'); do
			t0=$EPOCHREALTIME; nft -f "$1" || exit 1; t1=$EPOCHREALTIME
			echo "($t1 - $t0) * 1000" | bc -l
		done' _ "$TOPO_TMP/s$n.nft" | median) || exit 1
	in_ns "$NS" nft delete table inet moat; in_ns "$NS" nft delete table bridge moat
	printf '# %5d sandboxes: library %8.1f ms, nft -f %8.1f ms\n' "$n" "${LIB[$n]}" "${NFT[$n]}" >&2
done

# --- 2. allowlist add latency ----------------------------------------------
read -r ADD50 ADD99 < <(in_ns "$NS" "$BENCH" add "$TOPO_TMP/s100.conf" s0 $ADDS) || exit 1
in_ns "$NS" "$NFTR" -c "$TOPO_TMP/s100.conf" flush

# --- 3. forwarding throughput, 0 vs 1000 other sandboxes ------------------
topo_up || exit 1
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_bg "$NS_INET" sink socat -u TCP-LISTEN:5001,bind=$INET_HTTP,reuseaddr,fork OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 5001 || exit 1
tput() {	# MB/s of one bulk TCP transfer guest -> internet namespace
	in_ns "$TOPO-dev" bash -c '
		t0=$EPOCHREALTIME
		dd if=/dev/zero bs=1M count='"$TPUT_MB"' 2>/dev/null | socat -u - TCP:'"$INET_HTTP"':5001
		t1=$EPOCHREALTIME
		echo "'"$TPUT_MB"' / ($t1 - $t0)" | bc -l'
}
declare -A TP
gen_conf 0 "$TOPO_TMP/t0.conf" dev
gen_conf 1000 "$TOPO_TMP/t1000.conf" dev
# Interleaved, so that drift in the machine's load hits both alike.
for i in $(seq $TPUT_RUNS); do
	for others in 0 1000; do
		in_ns "$NS_GW" "$NFTR" -c "$TOPO_TMP/t$others.conf" apply || exit 1
		echo "$others $(tput)"
	done
done >"$TOPO_TMP/tput"
for others in 0 1000; do
	TP[$others]=$(awk -v o=$others '$1 == o {print $2}' "$TOPO_TMP/tput" | median)
	printf '# throughput with %4d other sandboxes: %.0f MB/s\n' $others "${TP[$others]}" >&2
done
TPDIFF=$(echo "(${TP[1000]} - ${TP[0]}) * 100 / ${TP[0]}" | bc -l)

# --- the table -------------------------------------------------------------
table() {
	echo "Kernel $(uname -r), $(nproc) CPUs, nftables $(nft --version | awk '{print $2}'),"
	echo "libnftnl $(pkg-config --modversion libnftnl); median of $RUNS runs; $(date -u +%Y-%m-%d)."
	echo
	echo "| sandboxes | netlink messages | library apply (ms) | nft -f same text (ms) | library / nft |"
	echo "|---:|---:|---:|---:|---:|"
	for n in $SIZES; do
		printf '| %d | %d | %.1f | %.1f | %.2f |\n' "$n" "${MSGS[$n]}" "${LIB[$n]}" "${NFT[$n]}" \
			"$(echo "${LIB[$n]} / ${NFT[$n]}" | bc -l)"
	done
	echo
	echo "Allowlist add (one address, one acked transaction, set of a 100-sandbox"
	echo "policy, $ADDS calls): p50 ${ADD50} us, p99 ${ADD99} us."
	echo
	echo "| other sandboxes configured | guest -> internet TCP (MB/s, median of $TPUT_RUNS x ${TPUT_MB} MB) |"
	echo "|---:|---:|"
	printf '| 0 | %.0f |\n| 1000 | %.0f |\n' "${TP[0]}" "${TP[1000]}"
	echo
	printf 'Difference: %+.1f%%.\n' "$TPDIFF"
}
out=$(table)
echo "$out"

if [ $DOC = 1 ]; then
	doc=docs/benchmarks.md
	[ -e $doc ] || printf '# moat benchmarks\n' >$doc
	# Only the measured block between the markers is replaced; the text
	# around it (what is measured, what limits it) is kept.
	section=$(printf '<!-- nft-rules:begin -->\n%s\n<!-- nft-rules:end -->' "$out")
	if grep -q '<!-- nft-rules:begin -->' $doc; then
		awk -v s="$section" '/<!-- nft-rules:begin -->/ {print s; skip=1}
			/<!-- nft-rules:end -->/ {skip=0; next} !skip' $doc >$doc.new && mv $doc.new $doc
	else
		printf '\n## nft-rules: apply, allowlist add, forwarding\n\n%s\n' "$section" >>$doc
	fi
	echo "# wrote $doc" >&2
fi
