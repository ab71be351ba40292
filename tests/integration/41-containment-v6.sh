#!/usr/bin/env bash
# containment-check probes IPv6 the way it probes IPv4.  Bare topology (no
# policy, IPv6 forwarded by the gateway): the scan names breaches for the
# LAN's IPv6 host (from a "lan" prefix of the targets file), the gateway
# host's IPv6 addresses (the targets file's, link-local included, and the
# guest's IPv6 next hop), another guest's IPv6 address on the guest's own
# /64 and NAT64-mapped private IPv4 (a NAT64-ish route to the LAN host),
# and the IPv6 internet control passes.  With moat's policy the IPv6
# breaches are gone and the scan ends contained; an IPv6 control the
# guest's route cannot reach fails; a guest without IPv6 does not run the
# IPv6 control and the report says it is IPv4-only.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

for b in "$CC_BIN" build/nft-rules build/moat-proxy; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
cc_topo || { not_ok "topology comes up"; exit 1; }
ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1

# IPv6 everywhere a dual-stack homelab has it: the gateway forwards it,
# the sandbox network is 2001:db8:77::/64, the LAN 2001:db8:1a::/64 (a
# global prefix, the homelab case), the internet answers HTTP on its IPv6
# address.  Guest g2 has 2001:db8:77::11 next to web's ::10.
LAN6=2001:db8:1a::2
NAT64_LAN=64:ff9b::c0a8:4d02	# 64:ff9b::192.168.77.2, the LAN host
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add 2001:db8:77::1/64 dev moat0 nodad
ip -n "$NS_GW" addr add 2001:db8:1a::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:1a::1
ip -n "$NS_INET" -6 route add 2001:db8:77::/64 via $GW_UP6
ip -n "$TOPO-web" addr add 2001:db8:77::10/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add default via 2001:db8:77::1
ip -n "$TOPO-g2" addr add 2001:db8:77::11/64 dev eth0 nodad
ip -n "$TOPO-g2" -6 route add default via 2001:db8:77::1
# A NAT64 stand-in: 64:ff9b::/96 leads to the LAN host, which answers on
# the mapped address of its own IPv4 as a translator in front of it would.
ip -n "$NS_LAN" addr add $NAT64_LAN/128 dev lo
ip -n "$NS_GW" -6 route add 64:ff9b::/96 via $LAN6

v6_banner() {	# v6_banner NS TEXT -- an SSH-like service on every IPv6 address
	topo_bg "$1" "banner6-$1" socat TCP6-LISTEN:22,ipv6only=1,fork,reuseaddr \
		SYSTEM:"echo $2"
	topo_wait_port "$1" :: 22
}
v6_banner "$NS_LAN" SSH-2.0-lan-v6
v6_banner "$NS_GW" SSH-2.0-gateway-v6
v6_banner "$TOPO-g2" SSH-2.0-guest-g2-v6
topo_http "$NS_INET" $INET_ADDR6 80 "inet6" || not_ok "HTTP on the internet's IPv6 address"

GW_LL=$(ip -n "$NS_GW" -6 -o addr show dev moat0 scope link | awk '{sub("/.*", "", $4); print $4}')
cat >"$TOPO_TMP/targets" <<EOF
gateway $GW_UP6
gateway $GW_LL
lan 2001:db8:1a::/64
EOF
CC_ARGS+=(--internet "[$INET_ADDR6]:80" --targets-file "$TOPO_TMP/targets")

# --- bare: the IPv6 breaches are found ----------------------------------------
# Bridge isolation is lifted for g2's port: what another guest's IPv6
# address exposes when nothing else keeps guests apart.
ip -n "$NS_GW" link set mt-g2 type bridge_slave isolated off
cc_scan web
expect_eq "bare: exit 1" 1 "$CC_RC"
expect_eq "breach named: the LAN's IPv6 host (lan prefix sample ::2)" True \
	"$(cc_breach private '^\[2001:db8:1a::2\]:22$')"
expect_eq "breach named: the gateway host's uplink IPv6 address (targets file)" True \
	"$(cc_breach ipv6 '^\[2001:db8:203::1\]:22$')"
expect_eq "breach named: the gateway host's link-local address (targets file, scoped)" True \
	"$(cc_q "any(x['outcome']=='BREACH' and x['target'].startswith('[$GW_LL%') and x['what']=='an address of the gateway host' for x in rs)")"
expect_eq "breach named: the guest's IPv6 next hop (the gateway host)" True \
	"$(cc_breach ipv6 '^\[2001:db8:77::1\]:22$')"
expect_eq "breach named: another guest's IPv6 address on the own /64" True \
	"$(cc_breach guests '^\[2001:db8:77::11\]:22$')"
expect_eq "breach named: NAT64-mapped LAN IPv4, directly" True \
	"$(cc_breach ipv6 '^\[64:ff9b::c0a8:4d02\]:22$')"
expect_eq "control: the IPv6 internet is reachable" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='[$INET_ADDR6]:80' and x['outcome']=='pass' for x in rs)")"
expect_eq "no failed control" 0 "$(cc_q 'r["failed_controls"]')"
expect_eq "JSON: IPv6 probed, with breaches, the guest has IPv6" "True True True" \
	"$(cc_q "r['families']['ipv6']['probes'] > 50, r['families']['ipv6']['breaches'] >= 5, r['families']['ipv6']['guest_has_ipv6']" | tr -d '(),')"
expect_eq "JSON: IPv4 probed too" True "$(cc_q "r['families']['ipv4']['probes'] > 60000")"
out=$(ip netns exec "$TOPO-web" "$CC_BIN" -v "${CC_ARGS[@]}" 2>&1)
expect_match "human report: per family, IPv6 with its route" \
	'IPv6: [0-9]+ probes, [0-9]+ breaches, 0 failed controls, 1 controls passed, 0 not run; the guest has IPv6' "$out"
expect_match "human report: per family, IPv4" 'IPv4: [0-9]+ probes, [0-9]+ breach' "$out"
for t in '10.0.0.1' '192.168.1.1' '169.254.169.254' '10.77.0.1' '192.168.77.2'; do
	m=$(python3 -c "import ipaddress,sys; print(ipaddress.IPv6Address('64:ff9b::$t'))")
	expect_match "NAT64-mapped $t probed" \
		"\\[$m\\]:22 .*NAT64-mapped private IPv4\\]" "$out"
done
expect_match "NAT64 local-use prefix probed" '\[64:ff9b:1::a00:1\]:22 ' "$out"
expect_match "NAT64 through the proxy planned (v6 literal)" \
	'NAT64-mapped private IPv4 through the proxy' "$out"
ip -n "$NS_GW" link set mt-g2 type bridge_slave isolated on

# --- moat's policy: the IPv6 breaches are gone ---------------------------------
CONF=$TOPO_TMP/cc-policy.conf
mkdir -p "$TOPO_TMP/state"
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "open"; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF
if in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1; then
	ok "nft-rules applies the policy"
else
	not_ok "nft-rules applies the policy"; tap_done; exit 1
fi
topo_bg "$NS_GW" moat-proxy build/moat-proxy -d -c "$CONF" --user nobody
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "moat-proxy starts"
# A route to 2000::/3 (a default route would do as well: one per family
# is not a finding).
ip -n "$TOPO-web" -6 route del default via 2001:db8:77::1
ip -n "$TOPO-web" -6 route add 2000::/3 via 2001:db8:77::1

CC_ARGS=(--internet $INET_HTTP:80 --target $LAN_HOST --treat-as-public 203.0.113.0/24
	--targets-file "$TOPO_TMP/targets")
cc_scan web
expect_eq "policy: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# $(cc_q "[(x['class'], x['target'], x['evidence']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')][:10]")"
expect_eq "policy: no IPv6 breach" 0 "$(cc_q "r['families']['ipv6']['breaches']")"
expect_eq "policy: the IPv6 probes ran (the guest has IPv6)" "True True" \
	"$(cc_q "r['families']['ipv6']['probes'] > 50, r['families']['ipv6']['guest_has_ipv6']" | tr -d '(),')"
expect_match "policy: the report says the IPv6 internet was not proven (no IPv6 control)" \
	'no IPv6 control given' "$(cc_q "r['families']['ipv6']['state']")"

# Mutation: the policy lets IPv6 through (the bridge table's drop and the
# inet table's): the scan must name the IPv6 breaches again.
nftm() { in_ns "$NS_GW" nft "$@"; }
nftm insert rule bridge moat from_guest ether type ip6 accept &&
	nftm insert rule inet moat raw_pre meta nfproto ipv6 accept &&
	nftm insert rule inet moat input meta nfproto ipv6 accept &&
	nftm insert rule inet moat forward meta nfproto ipv6 accept ||
	not_ok "mutation applies"
cc_scan web
expect_eq "mutation 'IPv6 let through': exit 1" 1 "$CC_RC"
expect_eq "mutation 'IPv6 let through': the LAN's IPv6 host is named" True \
	"$(cc_breach private '^\[2001:db8:1a::2\]:22$')"
expect_eq "mutation 'IPv6 let through': the gateway host's IPv6 addresses are named" "True True" \
	"$(echo $(cc_breach ipv6 '^\[2001:db8:77::1\]:22$') $(cc_breach ipv6 '^\[2001:db8:203::1\]:22$'))"
in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1 ||
	not_ok "the policy is applied again"

# IPv6 expected on (an address and a route) but the IPv6 internet does not
# answer (the policy drops it): a failed control, as for IPv4.
cc_scan web --internet "[$INET_ADDR6]:80"
expect_eq "policy + IPv6 control: exit 1" 1 "$CC_RC"
expect_eq "policy + IPv6 control: the IPv6 control failed" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='[$INET_ADDR6]:80' and x['outcome']=='FAILED' for x in rs)")"
expect_eq "policy + IPv6 control: counted for IPv6" 1 "$(cc_q "r['families']['ipv6']['failed_controls']")"

# Without IPv6 on the guest the IPv6 control is not run and the report
# says the guest is IPv4-only.
ip -n "$TOPO-web" -6 route del 2000::/3 via 2001:db8:77::1
ip -n "$TOPO-web" addr del 2001:db8:77::10/64 dev eth0
cc_scan web --internet "[$INET_ADDR6]:80"
expect_eq "IPv4-only guest: contained, exit 0" 0 "$CC_RC"
expect_eq "IPv4-only guest: the IPv6 control is not run" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='[$INET_ADDR6]:80' and x['verdict']=='not-run' and 'IPv4-only' in x['evidence'] for x in rs)")"
expect_eq "IPv4-only guest: JSON says so" "False 1" \
	"$(cc_q "r['families']['ipv6']['guest_has_ipv6'], r['families']['ipv6']['not_run']" | tr -d '(),')"
out=$(ip netns exec "$TOPO-web" "$CC_BIN" "${CC_ARGS[@]}" --internet "[$INET_ADDR6]:80" 2>&1)
expect_match "IPv4-only guest: the human report says so" \
	'IPv6: .* 1 not run; the guest is IPv4-only' "$out"
tap_done
