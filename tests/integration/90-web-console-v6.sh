#!/usr/bin/env bash
# The web console on an IPv6 management address, with guests that have
# IPv6 (gateway.ipv6): the LAN reaches it over IPv6, a guest reaches it
# by no address of the gateway, in either family, even with the
# documentation prefix treated as public (only the rule that the gateway
# host is never a guest's destination stands in the way).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
LAN6=2001:db8:77:5
topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
ip -n "$TOPO-dev" addr add $NET6::b/64 dev eth0 nodad
ip -n "$TOPO-dev" -6 route add default via $NET6::1
ip -n "$NS_GW" addr add $LAN6::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6::2/64 dev eth0 nodad
for ns in "$NS_GW lan0" "$NS_LAN eth0" "$TOPO-dev eth0"; do
	topo_wait_dad $ns || { not_ok "link-local addresses ready in $ns"; exit 1; }
done
cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
  web: { listen = "[$LAN6::1]:8443"; };
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
EOF
# A host on the IPv6 internet (the uplink's own /64 is the gateway's).
FAR6=2001:db8:300::7
ip -n "$NS_INET" addr add $FAR6/128 dev lo nodad
ip -n "$NS_GW" -6 route replace default via $INET_ADDR6 metric 100
topo_bg "$NS_INET" far6 socat TCP6-LISTEN:2222,bind="[$FAR6]",fork,reuseaddr SYSTEM:"echo hi"
topo_wait_port "$NS_INET" $FAR6 2222
# Servers that keep a connection open until the client closes it.
topo_bg "$NS_INET" hold6 socat TCP6-LISTEN:2223,bind="[$FAR6]",fork,reuseaddr SYSTEM:cat
topo_bg "$NS_INET" hold4 socat TCP4-LISTEN:2223,bind=$INET_ADDR,fork,reuseaddr SYSTEM:cat
topo_wait_port "$NS_INET" $FAR6 2223
topo_wait_port "$NS_INET" $INET_ADDR 2223
sed "s|^  web: .*|  web: { listen = \"[$NET6::1]:8443\"; };|" "$GW_CONF" >"$TOPO_TMP/bad.conf"
expect_match "web.listen inside the guests' IPv6 network is refused, with file:line" \
	"bad.conf:[0-9]+: gateway.web: listen: expected an address on the management network, not inside gateway.ipv6's network $NET6::/64" \
	"$(in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"
export MOAT_WEB_ROOT=$PWD/web
gw_start; expect_eq "gatewayd starts with the console on IPv6" 0 $?
topo_wait_port "$NS_GW" $LAN6::1 8443
expect_eq "the LAN reaches the console over IPv6" 200 \
	"$(in_ns "$NS_LAN" env -i curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "https://[$LAN6::1]:8443/")"
l=$(gw_ctl web-login | head -1)
expect_match "the login link names the IPv6 address" "^https://\[$LAN6::1\]:8443/login\?t=" "$l"
expect_match "the certificate is for that address" "IP [Aa]ddress:$LAN6:0:0:0:1" \
	"$(openssl x509 -in "$TOPO_TMP/state/web/cert.pem" -noout -ext subjectAltName 2>&1 | tr ABCDEF abcdef)"
# probe ADDR PORT -- from the guest; an ICMPv6 administratively
# prohibited comes back as EACCES ("Permission denied").
probe() {
	local out
	out=$(in_ns "$TOPO-dev" timeout 5 socat -u TCP6:"[$1]":$2,connect-timeout=3 STDOUT 2>&1)
	case $out in
	*"Permission denied"*|*"No route to host"*) echo unreachable ;;
	*"Connection refused"*) echo refused ;;
	*hi*) echo connected ;;
	"") echo timeout ;;
	*) echo "other: $out" ;;
	esac
}
# The gateway's IPv6 address on the bridge must be past duplicate address
# detection before a guest's IPv6 goes anywhere.
bridge6_ready() { ip -n "$NS_GW" -6 addr show dev moat0 | grep "$NET6::1/64" | grep -vq tentative; }
wait_for 30 bridge6_ready
expect_eq "the guest has IPv6 (it reaches a server on the internet side)" connected \
	"$(probe $FAR6 2222)"
expect_eq "a guest cannot reach the console over IPv6" unreachable "$(probe $LAN6::1 8443)"
expect_eq "nor on the gateway's sandbox-side IPv6 address" unreachable "$(probe $NET6::1 8443)"
expect_eq "nor over IPv4 on the LAN address" unreachable "$(tcp_probe $TOPO-dev 192.168.77.1 8443)"
expect_eq "nor on the sandbox-side IPv4 address" unreachable "$(tcp_probe $TOPO-dev $GW_ADDR 8443)"

# Live connections count both families, straight out (egress open).
live() { gw_ctl sandboxes --json | python3 -c 'import json, sys
print([s.get("connections_live") for s in json.load(sys.stdin) if s["name"] == "dev"][0])'; }
none() { [ "$(live)" = 0 ]; }
expect_ok "no live connection of dev once the probes are over" wait_for 10 none
flag=$TOPO_TMP/hold.flag; : >"$flag"
in_ns $TOPO-dev timeout 70 python3 tests/harness/tcp-idle.py "$flag" "$FAR6:2223" \
	"$FAR6:2223" "$INET_ADDR:2223" >"$TOPO_TMP/hold.out" 2>&1 &
hold=$!
wait_for 10 grep -q "^up 3" "$TOPO_TMP/hold.out"
expect_match "the guest holds 2 IPv6 and 1 IPv4 connections" "^up 3" "$(cat "$TOPO_TMP/hold.out")"
three() { [ "$(live)" = 3 ]; }
expect_ok "connections_live counts both families: 3" wait_for 3 three
rm -f "$flag"; wait "$hold"
expect_ok "and 0 once they close (within 2 s)" wait_for 2 none
tap_done
