#!/usr/bin/env bash
# containment-check against moat's IPv6 policy (gateway.ipv6, nat66), the
# homelab case: the guest has its derived address and an IPv6 default
# route through the gateway, the LAN a global prefix.  Contained: exit 0,
# no breach, the IPv6 internet control passes.  Then each IPv6 rule and
# each element of the IPv6 sets is deleted or weakened in the applied
# ruleset, one at a time, and the scan must name the breach it opens (or,
# for a rule that lets the guest's own IPv6 through, fail its IPv6
# control: a dead IPv6 path is reported, never hidden).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

for b in "$CC_BIN" build/nft-rules build/moat-proxy; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
cc_topo || { not_ok "topology comes up"; exit 1; }

NET6=fd77:0:0:1
WEB6=$NET6::a		# 10.77.0.10, derived
G2_6=$NET6::b
LAN6=2001:db8:1a::2
WWW6=2001:db8:cafe::80	# the IPv6 internet's web server
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
ip -n "$NS_GW" addr add 2001:db8:1a::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:1a::1
ip -n "$NS_INET" addr add $WWW6/128 dev lo
ip -n "$TOPO-web" addr add $WEB6/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add default via $NET6::1
ip -n "$TOPO-g2" addr add $G2_6/64 dev eth0 nodad
ip -n "$TOPO-g2" -6 route add default via $NET6::1

# Behind the LAN host, one address in each special-purpose block the
# policy refuses, as a translator, relay or misrouted network there would
# answer: NAT64 and 6to4 of the LAN host's own IPv4 (192.168.77.2), the
# discard prefix, benchmarking, documentation (3fff::/20), SRv6, a ULA
# and the IPv6 metadata endpoint.
SPECIAL="64:ff9b::c0a8:4d02 2002:c0a8:4d02::1 100::1 2001:2::1 3fff::1 5f00::1 fd00::1 fd00:ec2::254"
for a in $SPECIAL; do
	ip -n "$NS_LAN" addr add $a/128 dev lo
done
for p in 64:ff9b::/96 2002::/16 100::/64 2001:2::/48 3fff::/20 5f00::/16 fd00::/16; do
	ip -n "$NS_GW" -6 route add $p via $LAN6
done

v6_banner() {	# v6_banner NS PORT TEXT -- a service on every IPv6 address
	topo_bg "$1" "banner6-$1-$2" socat TCP6-LISTEN:$2,ipv6only=1,fork,reuseaddr \
		SYSTEM:"echo $3"
	topo_wait_port "$1" :: $2
}
v6_banner "$NS_LAN" 22 SSH-2.0-lan-v6
v6_banner "$NS_LAN" 80 lan-v6-web
v6_banner "$NS_GW" 22 SSH-2.0-gateway-v6
v6_banner "$TOPO-g2" 22 SSH-2.0-guest-g2-v6
topo_http "$NS_INET" $WWW6 80 "inet6" || not_ok "HTTP on the IPv6 internet's web server"
# tcp 80 is the proxy's (redirected, with interception on): the direct
# path, forwarding and nat66, is proven on a port nobody intercepts.
topo_http "$NS_INET" $WWW6 8080 "inet6-direct" || not_ok "HTTP on the IPv6 internet's web server, port 8080"
for ns in "$NS_GW" "$TOPO-web" "$TOPO-g2" "$NS_LAN"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done

GW_LL=$(ip -n "$NS_GW" -6 -o addr show dev moat0 scope link | awk '{sub("/.*", "", $4); print $4}')
cat >"$TOPO_TMP/targets" <<EOF
gateway $GW_UP6
gateway $GW_LL
lan 2001:db8:1a::/64
EOF
CC_ARGS+=(--internet "[$WWW6]:80" --internet "[$WWW6]:8080" --targets-file "$TOPO_TMP/targets")

CONF=$TOPO_TMP/cc-v6.conf
mkdir -p "$TOPO_TMP/state"
# The LAN's global prefix and the web server's are public here: what
# keeps the guest off the LAN is then the host-networks set (lan6), not
# the private table.  The rest of 2001:db8::/32 stays documentation space.
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8:1a::/64", "2001:db8:cafe::/64", "2001:db8:203::/64" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "open"; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF
policy() {	# a fresh copy of the full policy
	in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1
}
policy || { not_ok "nft-rules applies the IPv6 policy" "$(in_ns "$NS_GW" build/nft-rules -c "$CONF" apply 2>&1)"; tap_done; exit 1; }
ok "nft-rules applies the IPv6 policy"
topo_bg "$NS_GW" moat-proxy build/moat-proxy -d -c "$CONF" --user nobody
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "moat-proxy starts"

v6_ctl() {	# the direct IPv6 control's outcome
	cc_q "[x['outcome'] for x in rs if x['class']=='controls' and x['target']=='[$WWW6]:8080'] or ['missing']"
}
cc_scan web
expect_eq "IPv6 policy: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# not ok: $(cc_q "[(x['class'], x['target'], x['evidence'], x['what']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')][:12]")"
expect_eq "IPv6 policy: the IPv6 internet control passes" "['pass']" "$(v6_ctl)"
expect_eq "IPv6 policy: no IPv6 breach, the guest has IPv6" "0 True" \
	"$(cc_q "r['families']['ipv6']['breaches'], r['families']['ipv6']['guest_has_ipv6']" | tr -d '(),')"
expect_eq "IPv6 policy: one IPv6 default route is not a finding" True \
	"$(cc_q "not any(x['class']=='host' and 'default route' in x['what'] for x in rs)")"
expect_eq "IPv6 policy: all 6 forged-source probes (one IPv6) ran and got nothing back" 6 \
	"$(cc_q "r['ok_counts']['spoofing'].get('filtered', 0)")"
expect_eq "IPv6 policy: the special-purpose samples, 6to4 and NAT64 reached nothing" 0 \
	"$(cc_q "sum(1 for x in rs if x['target'].startswith(('[100::1]', '[2001:2::1]', '[3fff::1]', '[5f00::1]', '[2002:c0a8:4d02::1]')))")"

# --- mutations -----------------------------------------------------------------
# One rule of the applied ruleset, found by what nft lists for it.
# rule_handle FAMILY CHAIN REGEX -- its handle
rule_handle() {
	in_ns "$NS_GW" nft -a list chain "$1" moat "$2" |
		awk -v re="$3" '$0 ~ re { sub(".*# handle ", ""); print; exit }'
}
del_rule() {	# del_rule FAMILY CHAIN REGEX
	local h; h=$(rule_handle "$1" "$2" "$3")
	[ -n "$h" ] && in_ns "$NS_GW" nft delete rule "$1" moat "$2" handle "$h"
}
repl_rule() {	# repl_rule FAMILY CHAIN REGEX NEW-RULE...
	local f=$1 c=$2 h; h=$(rule_handle "$1" "$2" "$3"); shift 3
	[ -n "$h" ] && in_ns "$NS_GW" nft replace rule "$f" moat "$c" handle "$h" "$@"
}
# private6 is a constant set: its elements cannot be deleted in place.
# Its rule looks up a copy of the set less that one element instead.
private6_without() {	# private6_without ELEMENT
	local rest
	rest=$(in_ns "$NS_GW" nft list set inet moat private6 | python3 -c '
import re, sys
t = sys.stdin.read()
els = [e.strip() for e in re.search(r"elements = \{([^}]*)\}", t).group(1).split(",")]
if sys.argv[1] not in els:
    sys.exit("private6 has no element " + sys.argv[1])
print(", ".join(e for e in els if e != sys.argv[1]))' "$1") &&
		in_ns "$NS_GW" nft add set inet moat private6_less \
			"{ type ipv6_addr; flags interval; elements = { $rest }; }" &&
		repl_rule inet guest_fwd 'daddr @private6' ip6 daddr @private6_less goto refuse_private
}

# mutation NAME CLASS TARGET-REGEX SETUP... -- fresh policy, break one
# thing with SETUP, scan: exit 1 and a breach of CLASS at TARGET.
mutation() {
	local name=$1 class=$2 target=$3; shift 3
	policy && "$@" || { not_ok "mutation '$name' applies"; return; }
	cc_scan web
	expect_eq "mutation '$name': exit 1" 1 "$CC_RC"
	expect_eq "mutation '$name': breach named ($class $target)" True \
		"$(cc_breach "$class" "$target")"
}
# failing NAME SETUP... -- the guest's own IPv6 is cut: the control fails.
failing() {
	local name=$1; shift
	policy && "$@" || { not_ok "mutation '$name' applies"; return; }
	cc_scan web
	expect_eq "mutation '$name': exit 1, the IPv6 control FAILED" "1 ['FAILED']" \
		"$CC_RC $(v6_ctl)"
}

# Each element of private6 (the IANA special-purpose registry).  In ::/3,
# NAT64's well-known 64:ff9b::/96 is judged by the IPv4 it carries: the
# private IPv4 ranges mapped into it, each an element, merged with the
# blocks they touch.
mutation "private6 64:ff9b::e000:0-1fff:... (NAT64 of 224/3, NAT64 local use, discard) removed" ipv6 '^\[100::1\]:22$' \
	private6_without 64:ff9b::e000:0-1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
mutation "private6 64:ff9b::c0a8:0/112 (NAT64 of 192.168/16) removed" ipv6 '^\[64:ff9b::c0a8:4d02\]:22$' \
	private6_without 64:ff9b::c0a8:0/112
mutation "private6 2001::/23 (benchmarking, ORCHID, Teredo) removed" ipv6 '^\[2001:2::1\]:22$' \
	private6_without 2001::/23
mutation "private6 2002::/16 (6to4) removed" ipv6 '^\[2002:c0a8:4d02::1\]:22$' \
	private6_without 2002::/16
mutation "private6 3fff::/20 (documentation) removed" ipv6 '^\[3fff::1\]:22$' \
	private6_without 3fff::/20
mutation "private6 4000::-ffff:... (ULA, SRv6, site-local) removed" ipv6 '^\[fd00::1\]:22$' \
	private6_without 4000::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
expect_eq "mutation 'private6 4000::- removed': SRv6 and the IPv6 metadata endpoint named too" "True True" \
	"$(echo $(cc_breach ipv6 '^\[5f00::1\]:22$') $(cc_breach metadata '^\[fd00:ec2::254\]:80$'))"
# The rules that use them.
mutation "guest_fwd private6 rule removed" ipv6 '^\[2002:c0a8:4d02::1\]:22$' \
	del_rule inet guest_fwd 'daddr @private6'
mutation "lan6 element (the LAN's global prefix) removed" private '^\[2001:db8:1a::2\]:22$' \
	in_ns "$NS_GW" nft delete element inet moat lan6 '{ 2001:db8:1a::/64 }'
mutation "guest_fwd lan6 rule removed" private '^\[2001:db8:1a::2\]:22$' \
	del_rule inet guest_fwd 'daddr @lan6'
# guest_in takes neighbour discovery only; weakened to all of IPv6, the
# host's own IPv6 addresses are open.
mutation "guest_in neighbour solicitation accept weakened to all IPv6" ipv6 '^\[fd77:0:0:1::1\]:22$' \
	repl_rule inet guest_in 'nd-neighbor-solicit ip6 hoplimit 255 accept' meta nfproto ipv6 accept
expect_eq "mutation 'guest_in weakened': the uplink's IPv6 address named too" True \
	"$(cc_breach ipv6 '^\[2001:db8:203::1\]:22$')"
# IPv6 anti-spoofing has two layers: the bridge binds a port's IPv6 to
# its MAC and address (guest_ip6), raw_pre to the guests' addresses
# (guest6).  Both weakened to the MAC and the /64, a forged source of the
# guest's own /64 gets past the gateway (its refusal comes back to the
# forged address, after a neighbour solicitation for it).
v6_spoof_off() {
	repl_rule bridge from_guest 'ip6 saddr @guest_ip6 accept' \
		iifname . ether saddr @guest_mac6 accept &&
	repl_rule inet raw_pre 'ip6 saddr @guest6 accept' \
		iifname moat0 ip6 saddr $NET6::/64 accept
}
mutation "IPv6 anti-spoofing weakened to the MAC and the /64" spoofing '^\[2001:db8:cafe::80\]:80$' \
	v6_spoof_off
expect_eq "mutation 'IPv6 anti-spoofing weakened': the evidence names the forged address" True \
	"$(cc_q "any(x['class']=='spoofing' and x['outcome']=='BREACH' and 'forged fd77::1:26d:6f61:7400:' in x['evidence'] for x in rs)")"
# Rules that let the guest's own IPv6 through: deleted, the guest has no
# IPv6 path, and the control says so.
failing "raw_pre guest6 accept removed" \
	del_rule inet raw_pre 'ip6 saddr @guest6 accept'
failing "guest_fwd guest6 accept removed" \
	del_rule inet guest_fwd 'ip6 saddr @guest6 accept'
# Neighbour discovery with the gateway afresh: what the guest learnt
# before the mutation would carry it through the scan.
ns_off() {
	del_rule inet guest_in 'nd-neighbor-solicit ip6 hoplimit 255 accept' &&
		ip -n "$TOPO-web" -6 neigh flush dev eth0 &&
		ip -n "$NS_GW" -6 neigh flush dev moat0
}
failing "guest_in neighbour solicitation accept removed" ns_off
failing "bridge guest_ip6 accept removed" \
	del_rule bridge from_guest 'ip6 saddr @guest_ip6 accept'
failing "nat66 masquerade removed" \
	del_rule inet nat_post 'ip6 saddr .* masquerade'

# Two IPv6 default routes: a second way out is a finding of its own.
policy
ip -n "$TOPO-web" -6 route append default via $NET6::2
cc_scan web
expect_eq "two IPv6 default routes: exit 1, the host check names them" "1 True" \
	"$CC_RC $(cc_q "any(x['class']=='host' and x['outcome']=='BREACH' and '2 IPv6 default routes' in x['evidence'] for x in rs)")"
ip -n "$TOPO-web" -6 route del default via $NET6::2
tap_done
