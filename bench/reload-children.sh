#!/usr/bin/env bash
# reload-children.sh -- `gatewayd ctl reload` end to end with its children
# running (dnsd and W proxy workers), one sandbox added and removed on a
# gateway of N sandboxes: what bench/nft-delta.sh measures without
# children (-X), plus telling each child the new configuration.
#
#   N=5000 W=16 RUNS=9 bash bench/reload-children.sh   (root, after make)
#
# Everything runs in a network namespace this script creates and removes;
# no packet is sent.  Every loop is bounded by RUNS.  Prints the median.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): N=10 W=2 RUNS=1.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_trap
. bench/gen-conf.sh
N=${N:-5000} W=${W:-16} RUNS=${RUNS:-9}
[ "${BENCH_SMOKE:-0}" = 1 ] && N=10 W=2 RUNS=1
GEN_GATEWAY="  state_dir = \"$TOPO_TMP/state\"; manage_network = false;"
GNS=$TOPO-rl
topo_ns "$GNS" || exit 1
in_ns "$GNS" ip link add up0 type veth peer name up0p
in_ns "$GNS" ip link add moat0 type bridge
in_ns "$GNS" ip addr add 10.77.0.1/16 dev moat0
in_ns "$GNS" ip link set moat0 up
in_ns "$GNS" ip link set up0 up
D=$TOPO_TMP/gw
mkdir -p "$D/sandboxes.d" "$D/run" "$TOPO_TMP/state"
gen_conf "$N" "$D/moat.conf"
sed -i "s/proxy: { port = 3128; intercept = false; };/proxy: { port = 3128; intercept = false; workers = $W; };/" "$D/moat.conf"
bash gatewayd/install-users.sh
sock=$D/run/gatewayd.sock
in_ns "$GNS" build/gatewayd -d -c "$D/moat.conf" -s "$sock" -a "$D/audit" >"$D/log" 2>&1 &
TOPO_PIDS+=($!)
ctl() { build/gatewayd ctl -s "$sock" "$@"; }
wait_for 120 ctl status >/dev/null 2>&1 || { echo "gatewayd did not start:"; cat "$D/log"; exit 1; }
sleep 3		# every worker up
for i in $(seq "$RUNS"); do
	printf '%s\n' "${NEW_SB#\{ name = \"new\"; }" | sed 's/ }$//' >"$D/sandboxes.d/new.conf"
	t0=$EPOCHREALTIME; ctl reload >/dev/null || exit 1; t1=$EPOCHREALTIME
	echo "($t1 - $t0) * 1000" | bc -l
	rm "$D/sandboxes.d/new.conf"
	ctl reload >/dev/null || exit 1
	sleep 0.5
done | sort -n | awk -v n="$N" -v w="$W" '{ v[k++] = $1 }
	END { printf "%d sandboxes, %d proxy workers: ctl reload median %.1f ms (%.1f-%.1f) over %d runs\n",
	      n, w, v[int(k / 2)], v[0], v[k - 1], k }'
echo "workers reconfigured in place: $(grep -c 'reconfigured in place' "$D/log") (every reload, every worker)"
