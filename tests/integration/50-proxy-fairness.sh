#!/usr/bin/env bash
# moat-proxy shares its connections fairly: with a connection budget of
# 118 (the proxy runs under a 402-descriptor limit) and
# gateway.proxy.per_sandbox = 30, three guests that each open 70
# connections and hold them get 30 each, and a fourth guest's curl through
# the proxy still fetches.  Under the old rule (half the budget per
# sandbox) the holders together took every connection.
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

hold() {	# hold GUEST -- 70 connections with an unfinished request head
	in_ns "$TOPO-$1" python3 tests/harness/tcp-hold.py $GW_ADDR 3128 70 \
	    --first 'GET http://other.test/ HTTP/1.1\r\nX-Pad: ' --trickle a \
	    --status "$TOPO_TMP/hold-$1" --for 12 &
	TOPO_PIDS+=($!)
}
hold agent
hold plain
hold listed
for i in $(seq 300); do
	[ -s "$TOPO_TMP/hold-agent" ] && [ -s "$TOPO_TMP/hold-plain" ] &&
		[ -s "$TOPO_TMP/hold-listed" ] && break
	sleep 0.1
done
expect_eq "the first holder gets per_sandbox connections" "held 30" \
	"$(head -1 "$TOPO_TMP/hold-agent")"
expect_eq "so does the second" "held 30" "$(head -1 "$TOPO_TMP/hold-plain")"
expect_eq "and the third" "held 30" "$(head -1 "$TOPO_TMP/hold-listed")"
expect_eq "a fourth guest's curl through the proxy still fetches" "200" \
	"$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}')"
expect_match "over-cap connections are logged by sandbox" \
	'sandbox agent has too many connections' "$(cat "$TOPO_TMP/moat-proxy.log")"
tap_done
