#!/usr/bin/env bash
# A host outside the sandbox network (here the management LAN, whose
# default route is the gateway) can open connections to the proxy's
# address: the gateway routes for it.  It is no sandbox, so nothing it
# sends is served -- and it must not hold any of the connections the
# proxy keeps for guests either: with a budget of 118 connections (a
# 402-descriptor limit) and per_sandbox = 30, a LAN host that opens 150
# connections and trickles an endless request head on each gets none, and
# a guest's curl through the proxy still fetches.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
sed -i 's/proxy: { port = 3128; intercept = true; };/proxy: { port = 3128; intercept = true; per_sandbox = 30; };/' \
	"$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
printf '#!/bin/sh\nulimit -n 402 || exit 1\nexec %s "$@"\n' "$PWD/build/moat-proxy" \
	>"$TOPO_TMP/proxy-402"
chmod +x "$TOPO_TMP/proxy-402"
PX_BIN=$TOPO_TMP/proxy-402 proxy_start "$TOPO_TMP/moat.conf" ||
	{ not_ok "moat-proxy starts"; tap_done; exit 1; }
expect_match "the budget is 118 connections, 30 per sandbox" \
	'up to 118 connections, 30 per sandbox' "$(cat "$TOPO_TMP/moat-proxy.log")"
expect_eq "control: the LAN host reaches the proxy's address" connected \
	"$(in_ns "$NS_LAN" timeout 3 bash -c "exec 3<>/dev/tcp/$GW_ADDR/3128 && echo connected" 2>&1)"

in_ns "$NS_LAN" python3 tests/harness/tcp-hold.py $GW_ADDR 3128 150 \
    --first 'GET http://other.test/ HTTP/1.1\r\nX-Pad: ' --trickle a \
    --status "$TOPO_TMP/hold-lan" --for 12 &
TOPO_PIDS+=($!)
for i in $(seq 300); do [ -s "$TOPO_TMP/hold-lan" ] && break; sleep 0.1; done
expect_eq "the LAN host holds none of the proxy's connections" "held 0" \
	"$(head -1 "$TOPO_TMP/hold-lan")"
expect_eq "a guest's curl through the proxy still fetches" "200" \
	"$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}')"
expect_match "the refusals are logged with the source" \
	'192\.168\.77\.2.*source is not a sandbox' "$(cat "$TOPO_TMP/moat-proxy.log")"
tap_done
