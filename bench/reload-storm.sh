#!/usr/bin/env bash
# reload-storm.sh -- commits back to back on one allowlist sandbox while
# its guest resolves and fetches: what a guest sees of a storm of changes.
#
#   bash bench/reload-storm.sh                 (root, after make)
#   N=900 MODE=reload|grant BENCH_SMOKE=1 bash bench/reload-storm.sh
#
# MODE=reload (default): N `ctl reload`s that alternately widen web's allow
# list (open.test added) and narrow it again.  MODE=grant: N `ctl allow web
# open.test --for 1s`, each ended by `ctl unallow`, except every tenth,
# left to expire (the script waits 1.2 s for it).  Meanwhile web asks, one
# query after another, for a.github.test and pypi.org (allowed by every
# list; pypi.org has ports of its own, so each of its answers waits for
# the parent) and open.test (allowed by every other list), and fetches
# http://a.github.test/ through the gateway in a loop.
#
# Prints: ms per commit (the ctl round trip: median, p95, max), DNS
# answers by kind and failures (SERVFAIL, timeouts) per name, fetches and
# their failures, whether any child got a new pid (ctl status --json
# before and after), and the resident memory of gatewayd's parent and
# dnsd before and after.  BENCH_SMOKE=1: 20 commits.
#
# Everything runs in the namespaces tests/harness/topology.sh creates and
# removes (the guest, the gateway, the test internet); every loop ends.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh		# wait_for, ok/not_ok for the harness
. tests/harness/topology.sh
. tests/harness/gw.sh
N=${N:-900} MODE=${MODE:-reload}
[ "${BENCH_SMOKE:-0}" = 1 ] && N=20
case $MODE in reload|grant) ;; *) echo "MODE is reload or grant" >&2; exit 2 ;; esac

topo_up >/dev/null || { echo "topology failed" >&2; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web >/dev/null
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev >/dev/null
topo_services >/dev/null
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
cp examples/demo.conf "$GW_CONF"
# No per-sandbox DNS rate (a drop over it would count as a timeout).
sed -i 's|dns:   { upstream = \[ "203.0.113.53" \]; };|dns:   { upstream = [ "203.0.113.53" ]; rate = 0; };|' "$GW_CONF"
NARROW='allow = [ "pypi.org:tcp/443", "*.github.test" ]'
WIDE='allow = [ "pypi.org:tcp/443", "*.github.test", "open.test" ]'
sed -i 's|allow = \[ "pypi.org", "\*.github.test" \]|allow = [ "pypi.org:tcp/443", "*.github.test" ]|' "$GW_CONF"
gw_start >/dev/null || { echo "gatewayd did not start" >&2; cat "$GW_LOG"; exit 1; }
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
sleep 2				# every child up
cp "$GW_CONF" "$TOPO_TMP/narrow.conf"
python3 -c 'import sys; p, a, b = sys.argv[1:]
t = open(p).read(); assert a in t; open(p, "w").write(t.replace(a, b))' \
	"$GW_CONF" "$NARROW" "$WIDE"
cp "$GW_CONF" "$TOPO_TMP/wide.conf"
cp "$TOPO_TMP/narrow.conf" "$GW_CONF"
# Both files pass the host guard once (gw_ctl reload runs it each time,
# which would time python, not the commit); the loop calls ctl itself.
host_guard_conf "$TOPO_TMP/wide.conf" && host_guard_conf "$TOPO_TMP/narrow.conf" ||
	exit 1
ctl() { build/gatewayd ctl -s "$GW_SOCK" "$@"; }
ctl reload >/dev/null

pids() { gw_ctl status --json | python3 -c 'import json,sys
print(" ".join("%s=%s" % (c["name"], c["pid"]) for c in json.load(sys.stdin)["children"]))'; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
DNSD=$(gw_child_pid dnsd)
PARENT=$(awk '/^PPid/ { print $2 }' "/proc/$DNSD/status")
before=$(pids)
rss_p0=$(rss "$PARENT") rss_d0=$(rss "$DNSD")

STOP=$TOPO_TMP/stop
NAMES="a.github.test pypi.org open.test"
for name in $NAMES; do
	in_ns "$TOPO-web" python3 tests/harness/dns-loop.py --server $GW_ADDR \
		--name $name --stop "$STOP" --out "$TOPO_TMP/loop.$name" \
		--interval 0.001 >/dev/null &
	TOPO_PIDS+=($!)
done
# The fetch loop: resolve through the gateway, then GET (intercepted by
# the proxy, which checks the name); one line per fetch, 000 = failed.
in_ns "$TOPO-web" bash -c '
	while [ ! -e "$1" ]; do
		ip=$(dig +time=2 +tries=1 +short @"$2" a.github.test A | head -1)
		if [ -z "$ip" ]; then echo dns; sleep 0.02; continue; fi
		curl -s -o /dev/null -w "%{http_code}\n" --max-time 3 \
			-H "Host: a.github.test" "http://$ip/" || true
		sleep 0.02
	done' _ "$STOP" "$GW_ADDR" >"$TOPO_TMP/fetches" 2>/dev/null &
TOPO_PIDS+=($!)
sleep 1

ms() { echo "($2 - $1) * 1000" | bc -l; }
commit() {	# commit KIND VERB ARGS -- one ctl request; "KIND ms"
	local t0=$EPOCHREALTIME k=$1
	shift
	printf '%s ' "$k"
	ctl "$@" >/dev/null 2>"$TOPO_TMP/err" || { cat "$TOPO_TMP/err" >&2; return 1; }
	ms "$t0" "$EPOCHREALTIME"
}
: >"$TOPO_TMP/ms"
failed=0 start=$EPOCHREALTIME
for i in $(seq "$N"); do
	if [ "$MODE" = reload ]; then
		if [ $((i % 2)) -eq 1 ]; then cp "$TOPO_TMP/wide.conf" "$GW_CONF"; k=widen
		else cp "$TOPO_TMP/narrow.conf" "$GW_CONF"; k=narrow; fi
		commit $k reload >>"$TOPO_TMP/ms" || failed=$((failed + 1))
	else
		commit allow allow web open.test --for 1s >>"$TOPO_TMP/ms" || failed=$((failed + 1))
		if [ $((i % 10)) -eq 0 ]; then sleep 1.2	# it expires
		else commit unallow unallow web open.test >>"$TOPO_TMP/ms" || failed=$((failed + 1)); fi
	fi
done
secs=$(ms "$start" "$EPOCHREALTIME")
sleep 0.5
: >"$STOP"
for name in $NAMES; do wait_for 10 test -s "$TOPO_TMP/loop.$name"; done
sleep 1
after=$(pids)
rss_p1=$(rss "$PARENT") rss_d1=$(rss "$DNSD")

# For scale: a control request that changes nothing, on the same gateway.
: >"$TOPO_TMP/noop"
for i in $(seq 20); do commit - status >>"$TOPO_TMP/noop"; done
commits=$(wc -l <"$TOPO_TMP/ms")
echo "reload-storm: MODE=$MODE, $N rounds, $commits commits in $(printf %.1f "$(echo "$secs / 1000" | bc -l)") s, $failed failed; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -n | awk -v what="$1" '{ v[k++] = $1 } END {
	printf "  ms per commit, %s (ctl round trip): median %.1f, p95 %.1f, max %.1f (%d)\n",
	    what, v[int(k / 2)], v[int(k * 0.95)], v[k - 1], k }'; }
awk '{ print $2 }' "$TOPO_TMP/ms" | stats all
for k in $(awk '{ print $1 }' "$TOPO_TMP/ms" | sort -u); do
	awk -v k="$k" '$1 == k { print $2 }' "$TOPO_TMP/ms" | stats "$k"
done
awk '{ print $2 }' "$TOPO_TMP/noop" | sort -n | awk '{ v[k++] = $1 } END {
	printf "  (ctl status, which changes nothing: median %.1f ms)\n", v[int(k / 2)] }'
for name in $NAMES; do echo "  dns $name: $(cat "$TOPO_TMP/loop.$name")"; done
awk '{ n++; if ($1 == "200") ok++; else bad[$1]++ } END {
	printf "  fetches: %d, %d ok, %d failed", n, ok, n - ok
	for (b in bad) printf " (%s: %d)", b, bad[b]; printf "\n" }' "$TOPO_TMP/fetches"
echo "  narrowings logged: $(grep -c 'allowlist web: narrowed; its set emptied' "$GW_LOG"); dnsd SERVFAIL for a refused set update: $(grep -c 'set update refused; SERVFAIL' "$GW_LOG")"
if [ "$before" = "$after" ]; then echo "  children: no restart ($before)"
else echo "  children RESTARTED: $before -> $after"; fi
echo "  resident KiB: parent $rss_p0 -> $rss_p1, dnsd $rss_d0 -> $rss_d1"
