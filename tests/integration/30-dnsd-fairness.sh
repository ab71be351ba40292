#!/usr/bin/env bash
# dnsd's TCP side is shared fairly: one guest holding as many TCP
# connections to port 53 as it can (trickling a byte a second into each, so
# an idle timer never fires) gets gateway.dns.tcp_per_sandbox of them, and
# each is cut at gateway.dns.tcp_lifetime whatever it sends; meanwhile
# another guest's dig +tcp still resolves.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

dns_topology || { not_ok "topology comes up"; exit 1; }
dns_conf 203.0.113.53
sed -i 's/dns:   { upstream = \[ "203.0.113.53" \]; };/dns:   { upstream = [ "203.0.113.53" ]; tcp_per_sandbox = 6; tcp_lifetime = 6; };/' \
	"$DNS_CONF"
expect_match "the config sets the TCP limits" 'tcp_per_sandbox = 6; tcp_lifetime = 6' \
	"$(cat "$DNS_CONF")"
dns_upstream 203.0.113.53 10 || not_ok "upstream starts"
dns_start --no-nft || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }

# dev opens 300 connections, each announcing a 256-byte query it never
# finishes.
st=$TOPO_TMP/hold.status
in_ns "$TOPO-dev" python3 tests/harness/tcp-hold.py $GW_ADDR 53 300 \
	--first '\x01\x00' --trickle a --status "$st" --for 40 &
holder=$!
TOPO_PIDS+=($holder)
for i in $(seq 300); do [ -s "$st" ] && break; sleep 0.1; done
expect_eq "the holding guest gets tcp_per_sandbox connections" "held 6" "$(head -1 "$st")"

out=$(qdig web +tcp pypi.org)
expect_eq "another guest's dig +tcp still resolves" "NOERROR" "$(rcode_of <<<"$out")"
expect_eq "... with the answer" "203.0.113.10" "$(answers_of <<<"$out")"

wait $holder
res=$(tail -1 "$st")
expect_match "the connections over the cap were refused at once" '^refused 294 ' "$res"
expect_match "the held ones were cut, none outlived the deadline" ' cut 6 open 0 ' "$res"
first=$(sed -n 's/.*first-cut \([0-9.-]*\).*/\1/p' <<<"$res")
last=$(sed -n 's/.*last-cut \([0-9.-]*\).*/\1/p' <<<"$res")
expect_ok "cut at the 6 s deadline, not before (first at ${first}s)" \
	awk -v t="$first" 'BEGIN { exit !(t >= 5) }'
expect_ok "... nor much after, though each kept sending (last at ${last}s)" \
	awk -v t="$last" 'BEGIN { exit !(t > 0 && t < 15) }'
kill -USR1 "$DNSD_PID" 2>/dev/null
for i in $(seq 100); do grep -q 'tcp-expired' "$TOPO_TMP/dnsd.log" && break; sleep 0.1; done
expect_match "the counters say why" 'tcp-per-source-refused 294 tcp-expired 6' "$(dns_log)"
tap_done
