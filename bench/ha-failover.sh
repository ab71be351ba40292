#!/usr/bin/env bash
# ha-failover.sh -- what a guest of an active/standby pair sees when the
# master fails: the outage of DNS, of new connections and of an
# established forwarded download, with keepalived's default advert
# interval and a tuned one.  The pair is tests/harness/ha-pair.sh (real
# keepalived and conntrackd from the examples, in network namespaces
# this script creates and removes on every exit); each probe stops by
# itself.
#
#   bash bench/ha-failover.sh [ROUNDS]      (root, after make; default 3)
#
# Configurations:
#   default  the example: advert_int 1, the gatewayd check every second,
#            fall 2
#   tuned    advert_int 0.2 (VRRP version 3), the check every second,
#            fall 1
# Failures, each ROUNDS times (A master before each; it takes over again
# after each by priority):
#   kill     kill -9 of A's gatewayd (keepalived's check fails, A goes to
#            FAULT, gives the addresses up and tells B at once)
#   links    all of A's links down (its power cord: B waits for missed
#            adverts)
# Measured in the guest by tests/harness/ha-watch.py (a DNS query and a new
# connection every 100 ms, a plain download at ~140 KB/s): the longest time
# without an answer, without a new connection, and without a byte of the
# download, and whether the download was cut.  Medians over the rounds,
# with the load average before and after.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one round of
# "default kill" only.
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh
. tests/harness/ha-pair.sh
ROUNDS=${1:-3}
CONFS="default tuned" FAILS="kill links"
[ "${BENCH_SMOKE:-0}" = 1 ] && ROUNDS=1 CONFS=default FAILS=kill
OUT=$TOPO_TMP/bench
declare -A DNS CONN FLOW CUT

median() { python3 -c "import statistics,sys; print('%.2f' % statistics.median(map(float, sys.argv[1:])))" "$@"; }

kill_gw() { kill -9 "${PID[A]}"; }
links_down() { pair_links A down; }
restart_gw() { pair_box_start A; }
links_up() { pair_links A up; }

round() {	# round CONF FAIL RESTORE KEY
	local out=$OUT-$4-$r.json
	pair_watch 12 "$out" || { echo "# watch did not start" >&2; return 1; }
	sleep 2
	"$2"
	wait "$WATCH_PID"
	DNS[$4]+=" $(pair_watch_get "$out" 'r["dns"]["max_gap"]')"
	CONN[$4]+=" $(pair_watch_get "$out" 'r["connect"]["max_gap"]')"
	FLOW[$4]+=" $(pair_watch_get "$out" 'r["stream fwd"]["max_gap"]')"
	CUT[$4]=$(( ${CUT[$4]:-0} + $(pair_watch_get "$out" '0 if r["stream fwd"]["outcome"] == "running" and r["stream fwd"].get("idle_at_end", 9) < 2 else 1') ))
	"$3"
	wait_for 30 pair_is_role A master && wait_for 15 pair_is_role B backup || return 1
	sleep 2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
pair_up || { echo "no topology" >&2; exit 1; }
for conf in $CONFS; do
	if [ $conf = default ]; then pair_start 1 2; else pair_start 0.2 1; fi ||
		{ echo "the pair did not start ($conf)" >&2; exit 1; }
	for r in $(seq "$ROUNDS"); do
		case " $FAILS " in *" kill "*) round $conf kill_gw restart_gw "$conf kill" || exit 1 ;; esac
		case " $FAILS " in *" links "*) round $conf links_down links_up "$conf links" || exit 1 ;; esac
	done
	# Both pairs use the same namespaces: stop this one's daemons.
	for x in A B; do
		kill "${KA_PID[$x]}" "${CTD_PID[$x]}" 2>/dev/null
		kill -9 "${PID[$x]}" 2>/dev/null
	done
	sleep 2
	for x in A B; do
		in_ns "${PAIR_NS[$x]}" ip addr del $GW_ADDR/24 dev moat0 2>/dev/null
		in_ns "${PAIR_NS[$x]}" ip addr del $UP_VIP/24 dev up0 2>/dev/null
		in_ns "${PAIR_NS[$x]}" conntrack -F 2>/dev/null
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "| keepalived | failure | DNS back (s) | new connection (s) | download's longest stall (s) | downloads cut |"
echo "|---|---|---|---|---|---|"
for conf in $CONFS; do
	for f in $FAILS; do
		k="$conf $f"
		echo "| $conf | $f | $(median ${DNS[$k]}) | $(median ${CONN[$k]}) | $(median ${FLOW[$k]}) | ${CUT[$k]} of $ROUNDS |"
	done
done
echo
echo "medians of $ROUNDS rounds; load average before: $load0, after: $load1 ($(nproc) CPUs)"
