#!/usr/bin/env bash
# Guests' IPv4 refusals on the bridge are immediate and ARP is no
# refusal: a guest's connection to another guest's IPv4 address is
# refused at once with ICMP administratively prohibited (type 3 code 13,
# EHOSTUNREACH), as one to the LAN is: gatewayd has the bridge answer the
# guest's ARP request for the other guest with the gateway's MAC
# (proxy_arp_pvlan 1, proxy_delay 0), and the policy refuses what then
# comes (before: port isolation kept the request from the other guest,
# and the connection failed with "No route to host" after about 3 s).
# The gateway sends the guest no redirect towards the other guest.  A
# guest's RFC 5227 probe for its own address meets no answer (the kernel
# answers probes only for its own addresses) and is no spoofing; a probe
# for an address that is not the guest's gets no answer either, and a
# gratuitous ARP claiming another guest's address is still spoofing.  A
# guest's ARP towards another guest's port (one without isolation) is
# dropped quietly: neither counted as "another guest" nor listed by
# `ctl refused`.  Teardown sets the bridge's knobs back.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
sed -e '/name = "locked"/,+1d' examples/demo.conf |
	sed -e 's/owner = "bob"; },/owner = "bob"; }/' >"$GW_CONF"
# Both guests listen, so that only the policy stands between them.
topo_banner "$TOPO-web" 10.77.0.10 8080 "guest-web-service"
topo_bg "$TOPO-web" udp-echo socat UDP4-RECVFROM:9,bind=10.77.0.10,fork SYSTEM:"echo pong"
topo_banner "$TOPO-dev" 10.77.0.11 8080 "guest-dev-service"
knobs() { in_ns "$NS_GW" sysctl -n net.ipv4.conf.moat0.proxy_arp_pvlan net.ipv4.neigh.moat0.proxy_delay | xargs; }
knobs0=$(knobs)
gw_own_state
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1)
expect_match "gatewayd -n warns that the bridge answers no ARP for guests yet" \
	"ARP proxy moat0: proxy_arp_pvlan 0, proxy_delay [0-9]+: IPv4 between guests waits" "$out"
gw_start; expect_eq "gatewayd starts" 0 $?
expect_fail "ctl status: no warning about the ARP proxy" \
	grep -q "WARNING.*ARP proxy" <<<"$(gw_ctl status 2>&1)"
expect_eq "the bridge answers ARP for guests at once (proxy_arp_pvlan, proxy_delay)" \
	"1 0" "$(knobs)"
expect_match "network.undo records both old values" \
	"proxy_arp_pvlan moat0 0.*proxy_delay4 moat0 ${knobs0#* }" \
	"$(tr '\n' ' ' <"$TOPO_TMP/state/network.undo")"

try() { in_ns "$TOPO-$1" python3 tests/harness/refusal4.py "$2" "$3" "$4"; }
fast() { awk -v t="$1" 'BEGIN { exit !(t + 0 < 1.0) }'; }
counter() { in_ns "$NS_GW" nft list counter "$1" moat "$2" | awk '/packets/ {print $2}'; }
redirects() { in_ns "$TOPO-$1" awk '/^Icmp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "InRedirects") c = i; h = 1 } else print $c }' /proc/net/snmp; }
GW_MAC=$(ip -n "$NS_GW" -br link show dev moat0 | awk '{print $3}')
ADMIN="EHOSTUNREACH icmp 3/13 from 10.77.0.1"

# --- another guest's IPv4 address: refused at once ------------------------
g0=$(counter inet guest); rd0=$(redirects dev)
for i in 1 2 3; do
	r=$(try dev udp 10.77.0.10 9)
	expect_eq "dev -> 10.77.0.10:9/udp, try $i: ICMP admin-prohibited from the gateway ($r)" "$ADMIN" "${r% *}"
	expect_ok "... at once (${r##* } s)" fast "${r##* }"
done
for i in 1 2; do
	r=$(try dev tcp 10.77.0.10 8080)
	expect_eq "dev -> 10.77.0.10:8080/tcp, try $i: EHOSTUNREACH ($r)" EHOSTUNREACH "${r% *}"
	expect_ok "... at once (${r##* } s)" fast "${r##* }"
done
expect_ok "the refusals are counted as \"another guest\" ($g0 -> $(counter inet guest))" \
	test "$(counter inet guest)" -ge $((g0 + 5))
expect_match "dev's ARP entry for web's address is the gateway's MAC" \
	"lladdr $GW_MAC" "$(ip -n "$TOPO-dev" neigh show 10.77.0.10 dev eth0)"
expect_eq "dev was sent no redirect towards web" "$rd0" "$(redirects dev)"
r=$(try web tcp 10.77.0.11 8080)
expect_eq "web -> 10.77.0.11:8080/tcp is refused as well ($r)" EHOSTUNREACH "${r% *}"
expect_ok "... at once (${r##* } s)" fast "${r##* }"
# The kernel would redirect dev to web (same link) on the way to the
# refusal, on the bridge's route as on one through the gateway; its NAT
# drops redirects about flows whose translation is not done, as no
# refused flow's is, so dev's later attempts meet the refusal too.
in_ns "$TOPO-dev" ip route add 10.77.0.10/32 via 10.77.0.1
rd0=$(redirects dev)
for i in 1 2 3; do
	r=$(try dev udp 10.77.0.10 9)
	expect_eq "via the gateway, try $i: refused the same ($r)" "$ADMIN" "${r% *}"
done
expect_eq "... and dev was sent no redirect towards web" "$rd0" "$(redirects dev)"
in_ns "$TOPO-dev" ip route del 10.77.0.10/32 via 10.77.0.1
# An address no guest has is answered too, and refused the same.
r=$(try dev udp 10.77.0.50 9)
expect_eq "dev -> 10.77.0.50:9/udp (no guest's): refused at once ($r)" "$ADMIN" "${r% *}"
out=$(gw_ctl refused 2>&1)
expect_match "ctl refused lists web's address as another guest" \
	"10.77.0.10:8080 .*another guest" "$out"

# --- RFC 5227 probes and gratuitous ARP ------------------------------------
s0=$(counter bridge spoof)
out=$(in_ns "$TOPO-dev" arping -D -c 2 -w 3 -I eth0 10.77.0.11 2>&1); st=$?
expect_eq "dev probes its own address: no answer, no conflict (exit 0)" 0 "$st"
expect_match "... 0 responses" "Received 0 response" "$out"
expect_eq "... and the probe is no spoofing" "$s0" "$(counter bridge spoof)"
out=$(in_ns "$TOPO-dev" arping -D -c 2 -w 3 -I eth0 10.77.0.50 2>&1); st=$?
expect_eq "a probe for an address no guest has gets no answer (exit 0)" 0 "$st"
expect_match "... 0 responses" "Received 0 response" "$out"
out=$(in_ns "$TOPO-dev" arping -c 1 -w 2 -I eth0 10.77.0.50 2>&1)
expect_match "an ordinary request for that address is answered by the gateway" \
	"\[${GW_MAC^^}\]" "$out"
s0=$(counter bridge spoof)
in_ns "$TOPO-dev" arping -U -c 1 -I eth0 10.77.0.11 >/dev/null 2>&1
expect_eq "dev's gratuitous ARP for its own address is no spoofing" "$s0" "$(counter bridge spoof)"
# arping sends from an address of the guest's own: dev takes web's.
in_ns "$TOPO-dev" ip addr add 10.77.0.10/32 dev eth0
in_ns "$TOPO-dev" arping -U -c 1 -I eth0 -s 10.77.0.10 10.77.0.10 >/dev/null 2>&1
in_ns "$TOPO-dev" ip addr del 10.77.0.10/32 dev eth0
expect_ok "a gratuitous ARP claiming web's address is spoofing (counter spoof)" \
	wait_for 2 eval '[ "$(counter bridge spoof)" -gt "$s0" ]'
expect_fail "... and the gateway did not take dev's MAC for web's address" \
	grep -q "52:54:00:00:00:0b" <<<"$(ip -n "$NS_GW" neigh show 10.77.0.10 dev moat0)"

# --- ARP is no refusal -----------------------------------------------------
# With isolation on both ports the bridge never offers a frame from one
# guest to the other to its filter; a tap that joined without it leaves
# the filter as what keeps guests apart, and every ARP request meets it.
ip -n "$NS_GW" link set mt-web type bridge_slave isolated off
g0=$(counter bridge guest); n0=$(gw_ctl refused 2>&1 | grep -c "another guest")
for i in 1 2 3; do
	ip -n "$TOPO-dev" neigh flush dev eth0
	r=$(try dev udp 10.77.0.10 9)
	expect_eq "port without isolation, try $i: still refused by the gateway ($r)" "$ADMIN" "${r% *}"
done
in_ns "$TOPO-dev" arping -c 2 -w 2 -I eth0 10.77.0.10 >/dev/null 2>&1
sleep 1
expect_eq "guests' ARP is not counted as \"another guest\"" "$g0" "$(counter bridge guest)"
expect_match "dev's ARP entry for web is still the gateway's MAC" \
	"lladdr $GW_MAC" "$(ip -n "$TOPO-dev" neigh show 10.77.0.10 dev eth0)"
out=$(gw_ctl refused 2>&1)
expect_eq "ctl refused: no new \"another guest\" row (no ARP rows)" \
	"$n0" "$(grep -c "another guest" <<<"$out")"
expect_fail "... no row without a port for a guest's address" \
	grep -qE "10\.77\.0\.[0-9]+ +" <<<"$(grep -v ":[0-9]" <<<"$out")"
[ "$TAP_FAILED" = 0 ] || { echo "$out"; cat "$GW_AUDIT" | tail -20; } >&2
ip -n "$NS_GW" link set mt-web type bridge_slave isolated on

# --- teardown puts the knobs back ----------------------------------------
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null
out=$(in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1)
expect_eq "teardown: proxy_arp_pvlan and proxy_delay are back" "$knobs0" "$(knobs)"
expect_match "... and says so" "proxy_arp_pvlan on moat0 set back to 0" "$out"
tap_done
