#!/usr/bin/env bash
# Guests have no IPv6 past the gateway, even when the gateway's host
# forwards IPv6 (a dual-stack homelab router does) and a hostile guest
# gives itself a global address and a route through the gateway.  The
# topology's uplink carries IPv6 and the public resolvers' stand-ins answer
# on their IPv6 addresses (DNS on 53, DoT on 853, DoH on 443): without
# moat's policy the guest reaches all three (so the path is real); with it,
# none, each drop counted as "ipv6" in the bridge table.  Three layers
# refuse it, each enough alone: the bridge table's guest port rules, the
# inet table's raw prerouting, and the forward chain (nothing but a
# sandbox's IPv4 source is forwarded); letting IPv6 through all three
# turns every check below red.
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules
[ -x "$NFTR" ] || { not_ok "nft-rules is built" "run make"; tap_done; exit 1; }

topo_up || { not_ok "topology comes up"; exit 1; }
topo_resolvers || { not_ok "the public resolvers' stand-ins come up"; exit 1; }
topo_http "$NS_INET" $INET_HTTP 8080 "hello over IPv4" || { not_ok "HTTP server comes up"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
# The worst case on the gateway: IPv6 forwarding on, a route back to the
# prefix the hostile guest picks, and an address on the bridge for it.
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add 2001:db8:77::1/64 dev moat0 nodad
ip -n "$NS_INET" -6 route add 2001:db8:77::/64 via $GW_UP6
ip -n "$TOPO-dev" addr add 2001:db8:77::11/64 dev eth0 nodad
ip -n "$TOPO-dev" -6 route add default via 2001:db8:77::1

CONF=$TOPO_TMP/moat.conf
cat >"$CONF" <<'CONF'
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
nftr() { in_ns "$NS_GW" "$NFTR" -c "$CONF" "$@"; }
counter() { in_ns "$NS_GW" nft list counter bridge moat ipv6 2>/dev/null | awk '/packets/ {print $2}'; }
dns6() {	# dns6 ADDR -- the status of the stand-in's answer over UDP, or nothing
	in_ns "$TOPO-dev" dig +time=2 +tries=${2:-1} @"$1" example.com A 2>/dev/null |
		sed -n 's/.*status: \([A-Z]*\),.*/\1/p'
}
dot6() {	# dot6 ADDR -- "connected" when a TLS handshake on 853 completes
	in_ns "$TOPO-dev" timeout 5 openssl s_client -connect "[$1]:853" -brief \
		</dev/null >/dev/null 2>&1 && echo connected
}
doh6() {	# doh6 ADDR -- the HTTP status of a request to https://[ADDR]/
	in_ns "$TOPO-dev" env -i curl -sk -o /dev/null -w '%{http_code}' \
		--max-time 4 "https://[$1]/dns-query?dns=AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE" 2>/dev/null
}

for a in $PUBLIC_RESOLVERS6; do
	expect_eq "no policy: the guest gets [$a]:53's answer (the path is real)" NXDOMAIN "$(dns6 "$a" 3)"
done
a=${PUBLIC_RESOLVERS6%% *}
expect_eq "no policy: the guest completes TLS with [$a]:853" connected "$(dot6 "$a")"
expect_match "no policy: the guest gets an HTTP answer from [$a]:443" '^[1-5][0-9][0-9]$' "$(doh6 "$a")"

expect_ok "apply moat's policy (egress open)" nftr apply
c0=$(counter)
for a in $PUBLIC_RESOLVERS6; do
	expect_eq "policy: [$a]:53 does not answer the guest" "" "$(dns6 "$a")"
	expect_eq "policy: no TLS with [$a]:853" "" "$(dot6 "$a")"
	expect_eq "policy: no HTTP answer from [$a]:443" "000" "$(doh6 "$a")"
done
expect_eq "policy: each attempt was dropped at the guest's port, counted as ipv6" True \
	"$([ "$(counter)" -ge $((c0 + 9)) ] && echo True || echo False)"
expect_eq "policy: the guest's IPv4 egress still works (open)" "hello over IPv4" \
	"$(in_ns "$TOPO-dev" env -i curl -s --max-time 4 http://$INET_HTTP:8080/)"
expect_ok "flush" nftr flush
tap_done
