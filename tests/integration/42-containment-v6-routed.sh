#!/usr/bin/env bash
# containment-check learns the IPv6 networks the gateway host routes other
# than by its default route, and probes them.  The gateway namespace
# routes 2001:db8:1b::/64 (another VLAN of the site) via the LAN's router,
# and the site's own 2001:db8:5600::/56 (gateway.ipv6.site_prefixes) is
# reached only by the default route.  `provision targets web` writes them
# as "routed" lines, from the same route list lan6 is built from; a scan
# with that file is contained.  Then each guard is removed from the
# applied ruleset, one at a time (the routed /64's element of lan6, the
# site prefix's, the rule that looks lan6 up), and the scan must name the
# breach on a host of that network.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

for b in "$CC_BIN" build/nft-rules build/moat-proxy build/provision; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
cc_topo || { not_ok "topology comes up"; exit 1; }

NET6=fd77:0:0:1
WEB6=$NET6::a		# 10.77.0.10, derived
LAN6=2001:db8:1a::2	# the LAN's router
VLAN6=2001:db8:1b::1	# a host on the routed /64 behind it
SITE6=2001:db8:5600::1	# a host of the site prefix, behind the default route
WWW6=2001:db8:cafe::80
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
ip -n "$NS_GW" addr add 2001:db8:1a::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:1a::1
ip -n "$NS_LAN" addr add $VLAN6/128 dev lo
ip -n "$NS_GW" -6 route add 2001:db8:1b::/64 via $LAN6
ip -n "$NS_INET" addr add $SITE6/128 dev lo
ip -n "$NS_INET" addr add $WWW6/128 dev lo
ip -n "$TOPO-web" addr add $WEB6/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add default via $NET6::1

v6_banner() {	# v6_banner NS PORT TEXT -- a service on every IPv6 address
	topo_bg "$1" "banner6-$1-$2" socat TCP6-LISTEN:$2,ipv6only=1,fork,reuseaddr \
		SYSTEM:"echo $3"
	topo_wait_port "$1" :: $2
}
v6_banner "$NS_LAN" 22 SSH-2.0-site-vlan-v6
v6_banner "$NS_INET" 22 SSH-2.0-site-prefix-v6
topo_http "$NS_INET" $WWW6 8080 "inet6-direct" || not_ok "HTTP on the IPv6 internet's web server, port 8080"
for ns in "$NS_GW" "$TOPO-web" "$NS_LAN"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done

CONF=$TOPO_TMP/cc-routed.conf
mkdir -p "$TOPO_TMP/state"
# The site's addresses are public here: what keeps the guest off them is
# lan6, not the private table.
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8:1a::/64", "2001:db8:1b::/64",
    "2001:db8:5600::/56", "2001:db8:cafe::/64", "2001:db8:203::/64" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66";
    site_prefixes = [ "2001:db8:5600::/56" ]; };
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "open"; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF

# What the guest is given, made on the gateway host.
TARGETS=$TOPO_TMP/targets
in_ns "$NS_GW" build/provision -c "$CONF" targets web >"$TARGETS" 2>"$TOPO_TMP/targets.err"
expect_eq "provision targets web: exit 0" 0 $?
expect_match "targets: the LAN's IPv6 network" '^lan 2001:db8:1a::/64$' "$(cat "$TARGETS")"
expect_match "targets: the routed /64 behind the LAN's router" '^routed 2001:db8:1b::/64$' "$(cat "$TARGETS")"
expect_match "targets: the site prefix" '^routed 2001:db8:5600::/56$' "$(cat "$TARGETS")"
expect_eq "targets: neither the guests' /64 nor the default route" 0 \
	"$(grep -cE "^(lan|routed) ($NET6|::/0)" "$TARGETS")"
expect_eq "provision targets with no such sandbox: exit 1" 1 \
	"$(in_ns "$NS_GW" build/provision -c "$CONF" targets nosuch >/dev/null 2>&1; echo $?)"
CC_ARGS+=(--quick --internet "[$WWW6]:8080" --targets-file "$TARGETS")

policy() {	# a fresh copy of the full policy
	in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1
}
policy || { not_ok "nft-rules applies the IPv6 policy" "$(in_ns "$NS_GW" build/nft-rules -c "$CONF" apply 2>&1)"; tap_done; exit 1; }
ok "nft-rules applies the IPv6 policy"
topo_bg "$NS_GW" moat-proxy build/moat-proxy -d -c "$CONF" --user nobody
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "moat-proxy starts"

# The guards are real: the hosts are there, from the gateway host.
expect_ok "the routed host answers the gateway host" \
	in_ns "$NS_GW" nc -6 -z -w 2 $VLAN6 22
expect_ok "the site prefix's host answers the gateway host" \
	in_ns "$NS_GW" nc -6 -z -w 2 $SITE6 22

cc_scan web -v
expect_eq "with every guard: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# $(cc_q "[(x['class'], x['target'], x['evidence']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')][:12]")"
expect_eq "with every guard: the IPv6 control passes (the guest has IPv6)" "['pass']" \
	"$(cc_q "[x['outcome'] for x in rs if x['class']=='controls' and x['target']=='[$WWW6]:8080']")"
# -v lists every probe: the routed networks' samples ran, directly and
# through the proxy, and each was refused.
expect_eq "the routed /64's ::1, ::2, ::10 on 22, 80, 443 ran, all refused" "9 0" \
	"$(cc_q "len([x for x in rs if x['what'].startswith('a host of an IPv6 network') and x['target'].startswith('[2001:db8:1b::')]), len([x for x in rs if '2001:db8:1b::' in x['target'] and x['outcome']!='ok'])" | tr -d '(),')"
expect_eq "the site prefix's first and last /64 sampled (::1 and :ff::1)" "True True" \
	"$(cc_q "any(x['target']=='[2001:db8:5600::1]:22' for x in rs), any(x['target']=='[2001:db8:5600:ff::1]:22' for x in rs)" | tr -d '(),')"
# (the proxy's 502 or a closed connection: it could not dial; a 2xx or
# 3xx would be the breach)
expect_eq "both networks' ::1 through the proxy in 4 spellings: asked, none reached" "8 8" \
	"$(cc_q "len([x for x in rs if x['what'].startswith('a host of an IPv6 network the gateway routes, through')]), len([x for x in rs if x['what'].startswith('a host of an IPv6 network the gateway routes, through') and x['outcome']=='ok'])" | tr -d '(),')"

# --- mutations -----------------------------------------------------------------
rule_handle() {	# rule_handle FAMILY CHAIN REGEX -- its handle
	in_ns "$NS_GW" nft -a list chain "$1" moat "$2" |
		awk -v re="$3" '$0 ~ re { sub(".*# handle ", ""); print; exit }'
}
del_rule() {	# del_rule FAMILY CHAIN REGEX
	local h; h=$(rule_handle "$1" "$2" "$3")
	[ -n "$h" ] && in_ns "$NS_GW" nft delete rule "$1" moat "$2" handle "$h"
}
# mutation NAME TARGET-REGEX SETUP... -- fresh policy, break one thing
# with SETUP, scan: exit 1 and a breach at TARGET.
mutation() {
	local name=$1 target=$2; shift 2
	policy && "$@" || { not_ok "mutation '$name' applies"; return; }
	cc_scan web
	expect_eq "mutation '$name': exit 1" 1 "$CC_RC"
	expect_eq "mutation '$name': breach named ($target)" True \
		"$(cc_breach private "$target")"
}
mutation "lan6 element of the routed /64 removed" '^\[2001:db8:1b::1\]:22$' \
	in_ns "$NS_GW" nft delete element inet moat lan6 '{ 2001:db8:1b::/64 }'
expect_match "... the breach says it is a routed network" 'routes' \
	"$(cc_q "[x['what'] for x in rs if x['outcome']=='BREACH' and x['target']=='[$VLAN6]:22']")"
mutation "lan6 element of the site prefix removed" '^\[2001:db8:5600::1\]:22$' \
	in_ns "$NS_GW" nft delete element inet moat lan6 '{ 2001:db8:5600::/56 }'
mutation "guest_fwd lan6 rule removed" '^\[2001:db8:1b::1\]:22$' \
	del_rule inet guest_fwd 'daddr @lan6'
tap_done
