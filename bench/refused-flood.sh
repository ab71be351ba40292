#!/usr/bin/env bash
# refused-flood.sh -- a guest floods the gateway with unique names it is
# refused; gatewayd's parent keeps them in its bounded view (`ctl
# refused`, at most 256 per sandbox).  Prints the parent's and dnsd's
# resident memory before and after, and what the view holds and dropped.
#
#   NAMES=1000000 SECONDS_MAX=240 bash bench/refused-flood.sh   (root, after make)
#
# Everything runs in network namespaces this script creates and removes;
# every query goes to the test gateway's dnsd inside them.  The flood stops
# after NAMES queries or SECONDS_MAX seconds.  BENCH_SMOKE=1
# (tests/integration/09-bench-smoke-*.sh): 2,000 names, 3 s at most.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
NAMES=${NAMES:-1000000} SECONDS_MAX=${SECONDS_MAX:-240}
[ "${BENCH_SMOKE:-0}" = 1 ] && NAMES=2000 SECONDS_MAX=3
topo_up || exit 1
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
chmod 711 "$TOPO_TMP"
# web with no DNS rate limit: every query reaches the refusal.
sed 's|egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \];|egress = "allowlist"; allow = [ "pypi.org" ]; dns_rate = 0;|' \
	examples/demo.conf >"$GW_CONF"
gw_start || exit 1
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
rss() { awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { printf "%d KiB (peak %d KiB)", r, h }' "/proc/$1/status"; }
DNSD=$(gw_child_pid dnsd)
in_ns "$TOPO-web" dig +time=2 +tries=1 @$GW_ADDR warm.flood.example >/dev/null
sleep 1
echo "before: gatewayd parent $(rss "$GW_PID"), dnsd $(rss "$DNSD")"
in_ns "$TOPO-web" timeout $((SECONDS_MAX + 30)) python3 bench/dns-flood.py $GW_ADDR "$NAMES" --seconds "$SECONDS_MAX"
sleep 2
echo "after:  gatewayd parent $(rss "$GW_PID"), dnsd $(rss "$DNSD")"
gw_ctl refused web >"$TOPO_TMP/refused"
echo "ctl refused web: $(($(grep -c '^web ' "$TOPO_TMP/refused"))) entries; $(grep 'dropped' "$TOPO_TMP/refused")"
grep -o 'refused [0-9]*' <(gw_ctl status 2>/dev/null) | head -1
[ "$(gw_child_pid dnsd)" = "$DNSD" ] && echo "dnsd was not restarted" || echo "DNSD RESTARTED"
