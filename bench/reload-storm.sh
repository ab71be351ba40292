#!/usr/bin/env bash
# reload-storm.sh -- commits back to back on one allowlist sandbox while
# its guest resolves and fetches: what a guest sees of a storm of changes.
#
#   bash bench/reload-storm.sh                 (root, after make)
#   N=900 MODE=all|reload|grant BENCH_SMOKE=1 bash bench/reload-storm.sh
#
# MODE=reload: N `ctl reload`s that alternately widen web's allow list
# (open.test added) and narrow it again.  MODE=grant: N `ctl allow web
# open.test --for 1s`, each ended by `ctl unallow`, except every tenth,
# left to expire (the script waits 1.2 s for it; the parent logs what
# each expiry cost it, "grants ended: ... in X ms").  MODE=all (the
# default): both, one after the other, on the same gateway.  Meanwhile
# web asks, one query after another, for a.github.test and pypi.org
# (allowed by every list; pypi.org has ports of its own, so each of its
# answers waits for the parent) and open.test (allowed by every other
# list), and fetches http://a.github.test/ through the gateway in a loop.
#
# Prints, for each mode: ms per commit (the ctl round trip: median, p95,
# max; expiries as the parent timed them), DNS answers by kind and
# failures (SERVFAIL, timeouts) per name and in all, fetches and their
# failures.  Then, over the whole run: whether any child got a new pid
# (nflog, dnsd, each proxy worker, ...: ctl status --json before and
# after) and the resident memory of gatewayd's parent, dnsd and the proxy
# workers before and after.  BENCH_SMOKE=1: 20 rounds of each.
#
# Everything runs in the namespaces tests/harness/topology.sh creates and
# removes (the guest, the gateway, the test internet); every loop ends.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh		# wait_for, ok/not_ok for the harness
. tests/harness/topology.sh
. tests/harness/gw.sh
N=${N:-900} MODE=${MODE:-all}
[ "${BENCH_SMOKE:-0}" = 1 ] && N=20
case $MODE in reload|grant) MODES=$MODE ;; all) MODES="reload grant" ;;
*) echo "MODE is all, reload or grant" >&2; exit 2 ;; esac

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
rss_sum() { local p s=0; for p in "$@"; do s=$((s + $(rss "$p"))); done; echo $s; }
DNSD=$(gw_child_pid dnsd)
PARENT=$(awk '/^PPid/ { print $2 }' "/proc/$DNSD/status")
PROXIES=$(gw_proxy_pids)
before=$(pids)
# shellcheck disable=SC2086
rss_p0=$(rss "$PARENT") rss_d0=$(rss "$DNSD") rss_w0=$(rss_sum $PROXIES)

ms() { echo "($2 - $1) * 1000" | bc -l; }
commit() {	# commit KIND VERB ARGS -- one ctl request; "KIND ms"
	local t0=$EPOCHREALTIME k=$1
	shift
	printf '%s ' "$k"
	ctl "$@" >/dev/null 2>"$TOPO_TMP/err" || { cat "$TOPO_TMP/err" >&2; return 1; }
	ms "$t0" "$EPOCHREALTIME"
}
stats() { sort -n | awk -v what="$1" '{ v[k++] = $1 } END {
	if (k == 0) exit
	printf "  ms per commit, %s (%s): median %.1f, p95 %.1f, max %.1f (%d)\n",
	    what, what == "expiry" ? "timed by the parent" : "ctl round trip",
	    v[int(k / 2)], v[int(k * 0.95)], v[k - 1], k }'; }

NAMES="a.github.test pypi.org open.test"
# One phase: the guest's loops start, N rounds of MODE's commits, the
# loops stop, and what each saw is printed.
phase() {
	local mode=$1 name i k failed=0 start secs stop=$TOPO_TMP/stop.$1
	local out=$TOPO_TMP/$1 explog
	mkdir -p "$out"
	for name in $NAMES; do
		in_ns "$TOPO-web" python3 tests/harness/dns-loop.py --server $GW_ADDR \
			--name $name --stop "$stop" --out "$out/loop.$name" \
			--interval 0.001 >/dev/null &
		TOPO_PIDS+=($!)
	done
	# The fetch loop: resolve through the gateway, then GET (intercepted
	# by the proxy, which checks the name); one line per fetch, 000 =
	# failed.
	in_ns "$TOPO-web" bash -c '
		while [ ! -e "$1" ]; do
			ip=$(dig +time=2 +tries=1 +short @"$2" a.github.test A | head -1)
			if [ -z "$ip" ]; then echo dns; sleep 0.02; continue; fi
			curl -s -o /dev/null -w "%{http_code}\n" --max-time 3 \
				-H "Host: a.github.test" "http://$ip/" || true
			sleep 0.02
		done' _ "$stop" "$GW_ADDR" >"$out/fetches" 2>/dev/null &
	TOPO_PIDS+=($!)
	sleep 1
	: >"$out/ms"
	explog=$(wc -l <"$GW_LOG")
	start=$EPOCHREALTIME
	for i in $(seq "$N"); do
		if [ "$mode" = reload ]; then
			if [ $((i % 2)) -eq 1 ]; then cp "$TOPO_TMP/wide.conf" "$GW_CONF"; k=widen
			else cp "$TOPO_TMP/narrow.conf" "$GW_CONF"; k=narrow; fi
			commit $k reload >>"$out/ms" || failed=$((failed + 1))
		else
			commit allow allow web open.test --for 1s >>"$out/ms" || failed=$((failed + 1))
			if [ $((i % 10)) -eq 0 ]; then sleep 1.2	# it expires
			else commit unallow unallow web open.test >>"$out/ms" || failed=$((failed + 1)); fi
		fi
	done
	secs=$(ms "$start" "$EPOCHREALTIME")
	[ "$mode" = grant ] && sleep 1.2	# a last grant, if any, ends
	sleep 0.5
	: >"$stop"
	for name in $NAMES; do wait_for 10 test -s "$out/loop.$name"; done
	sleep 1
	# The expiries, as the parent timed them (no ctl request to time).
	tail -n +"$((explog + 1))" "$GW_LOG" | sed -n 's/.*grants ended: .* narrowed in \([0-9.]*\) ms.*/expiry \1/p' >>"$out/ms"
	echo "reload-storm: MODE=$mode, $N rounds, $(grep -vc '^expiry' "$out/ms") commits in $(printf %.1f "$(echo "$secs / 1000" | bc -l)") s, $failed failed; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	grep -v '^expiry' "$out/ms" | awk '{ print $2 }' | stats all
	for k in $(awk '{ print $1 }' "$out/ms" | sort -u); do
		awk -v k="$k" '$1 == k { print $2 }' "$out/ms" | stats "$k"
	done
	for name in $NAMES; do echo "  dns $name: $(cat "$out/loop.$name")"; done
	cat "$out"/loop.* | awk '{ for (i = 1; i < NF; i++) { if ($i == "queries") q += $(i + 1)
		if ($i == "servfail" || $i == "timeout") f += $(i + 1) } } END {
		printf "  DNS failures (SERVFAIL or timeout), all names: %d of %d\n", f, q }'
	awk '{ n++; if ($1 == "200") ok++; else bad[$1]++ } END {
		printf "  fetches: %d, %d ok, %d failed", n, ok, n - ok
		for (b in bad) printf " (%s: %d)", b, bad[b]; printf "\n" }' "$out/fetches"
}
for m in $MODES; do phase "$m"; done
after=$(pids)
# shellcheck disable=SC2086
rss_p1=$(rss "$PARENT") rss_d1=$(rss "$DNSD") rss_w1=$(rss_sum $PROXIES)

# For scale: a control request that changes nothing, on the same gateway.
: >"$TOPO_TMP/noop"
for i in $(seq 20); do commit - status >>"$TOPO_TMP/noop"; done
echo "reload-storm: the whole run ($MODES)"
awk '{ print $2 }' "$TOPO_TMP/noop" | sort -n | awk '{ v[k++] = $1 } END {
	printf "  (ctl status, which changes nothing: median %.1f ms)\n", v[int(k / 2)] }'
echo "  narrowings logged: $(grep -c 'allowlist web: narrowed; its set emptied' "$GW_LOG"); conntrack walked whole: $(grep -c 'conntrack: the whole table walked' "$GW_LOG"); dnsd SERVFAIL for a refused set update: $(grep -c 'set update refused; SERVFAIL' "$GW_LOG")"
if [ "$before" = "$after" ]; then echo "  children: no restart ($before)"
else echo "  children RESTARTED: $before -> $after"; fi
echo "  resident KiB: parent $rss_p0 -> $rss_p1, dnsd $rss_d0 -> $rss_d1, proxy workers $rss_w0 -> $rss_w1"
