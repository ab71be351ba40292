#!/usr/bin/env bash
# grant-latency.sh -- `gatewayd ctl allow SANDBOX NAME --for 10m` and
# `ctl unallow` on a gateway of N sandboxes with its children running
# (dnsd and W proxy workers): the control round trip (the parent has
# changed the list and told every child), the time until dnsd says it
# took the new list in place, and the time until every proxy worker says
# it has (they run with -v for that).  No child is restarted.
#
#   N=5000 W=16 RUNS=9 bash bench/grant-latency.sh   (root, after make)
#
# Everything runs in a network namespace this script creates and removes;
# no packet is sent.  Every loop is bounded by RUNS.  Prints the medians.
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
GNS=$TOPO-gl
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
# The proxy workers run with -v, so that each says when it has a grant.
mkdir -p "$D/bin"
ln -s "$PWD/build/dnsd" "$D/bin/dnsd"
printf '#!/bin/sh\nexec %s -v "$@"\n' "$PWD/build/moat-proxy" >"$D/bin/moat-proxy"
chmod 755 "$D/bin/moat-proxy"
in_ns "$GNS" build/gatewayd -d -B "$D/bin" -c "$D/moat.conf" -s "$sock" -a "$D/audit" >"$D/log" 2>&1 &
TOPO_PIDS+=($!)
ctl() { build/gatewayd ctl -s "$sock" "$@"; }
wait_for 120 ctl status >/dev/null 2>&1 || { echo "gatewayd did not start:"; cat "$D/log"; exit 1; }
sleep 3		# every worker up
pids() { ctl status --json | python3 -c 'import json,sys
print(" ".join(str(c["pid"]) for c in json.load(sys.stdin)["children"] if c["name"] in ("dnsd","proxy")))'; }
before=$(pids)
taken() { grep -c 'dnsd took the new configuration in place' "$D/log"; }
# every proxy worker logs once per grant it has taken: its reconfiguration
# (the whole configuration in place) or the sandbox's list alone
ptaken() { grep -cE 'moat-proxy.*(reconfigured: [0-9]+ sandboxes|allow list taken in place)' "$D/log"; }
ms() { date +%s%3N; }
# one VERB ARGS -- "ROUNDTRIP_MS DNSD_MS PROXY_MS" for one grant or
# ungrant (PROXY_MS: until every worker has it)
one() {
	local n p t0 t1 t2 t3
	n=$(taken); p=$(ptaken); t0=$(ms)
	ctl "$@" >/dev/null || { echo "ctl $* failed" >&2; return 1; }
	t1=$(ms)
	until [ "$(taken)" -gt "$n" ] || [ $(( $(ms) - t0 )) -gt 10000 ]; do sleep 0.005; done
	t2=$(ms)
	until [ "$(ptaken)" -ge $((p + W)) ] || [ $(( $(ms) - t0 )) -gt 10000 ]; do sleep 0.005; done
	t3=$(ms)
	echo "$((t1 - t0)) $((t2 - t0)) $((t3 - t0))"
}
median() { sort -n | awk '{ v[k++] = $1 } END { printf "%d ms (%d-%d)", v[int(k / 2)], v[0], v[k - 1] }'; }
: >"$D/allow"; : >"$D/unallow"
for i in $(seq "$RUNS"); do
	one allow s0 "g$i.example" --for 10m >>"$D/allow" || exit 1
	one unallow s0 "g$i.example" >>"$D/unallow" || exit 1
done
echo "$N sandboxes, $W proxy workers, $RUNS runs each:"
for v in allow unallow; do
	echo "  $v: ctl round trip $(cut -d' ' -f1 "$D/$v" | median), dnsd has it $(cut -d' ' -f2 "$D/$v" | median), every proxy worker has it $(cut -d' ' -f3 "$D/$v" | median)"
done
[ "$(pids)" = "$before" ] && echo "  dnsd and every proxy worker kept their pids" || echo "  CHILDREN RESTARTED: $before -> $(pids)"
# For scale: a control request that changes nothing, on the same gateway.
: >"$D/poll"
for i in $(seq "$RUNS"); do
	t0=$(ms); ctl counters >/dev/null; echo $(( $(ms) - t0 )) >>"$D/poll"
done
echo "  (ctl counters, which changes nothing: $(median <"$D/poll"))"
