#!/usr/bin/env bash
# The kernel watch of addresses and routes with gateway.ipv6.  gatewayd's
# own IPv6 address on the bridge, the guests' /64 routed to it and the
# uplink's default route are no drift.  A route the host adds for another
# VLAN by the LAN is no drift either: the policy follows it (the host-
# networks watch puts the prefix in lan6 through the commit), so guests
# may not reach it.  A route to public IPv6 addresses by the bridge, an
# IPv6 address added to the bridge and an IPv6 default route by another
# link are drift, each reported within 2 s and named.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
cp examples/demo.conf "$GW_CONF"
PROM=$TOPO_TMP/moat.prom
sed -i -e "s|^  treat_as_public|  verify: { interval = 0; repair = true; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n&|" \
    -e 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ]; ipv6 = { network = "'$NET6'::/64"; uplink_mode = "nat66"; };|' \
    "$GW_CONF"
grep -q 'uplink_mode = "nat66"' "$GW_CONF" || { not_ok "test config"; tap_done; exit 1; }
ip -n "$NS_GW" addr add 2001:db8:77:5::1/64 dev lan0 nodad
gw_start; expect_eq "gatewayd starts with gateway.ipv6" 0 $?

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
njson() { gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['kernel_watch']['$1'])"; }
drifted() { audit policy-drift | grep -qF "\"object\":\"$1\""; }
cleared() { audit policy-drift-cleared | grep -qF "\"object\":\"$1\""; }
in_prom() { grep -qF "$1" "$PROM"; }
no_drift() { [ "$(njson drift)" = "[]" ]; }
r() { ip -n "$NS_GW" "$@"; }

expect_match "gatewayd put its IPv6 address on the bridge" "$NET6::1/64" "$(r -6 addr show dev moat0)"
expect_eq "nothing drifts at start (its own address and the guests' /64 route)" "[]" "$(njson drift)"

# Another VLAN of the site, by the LAN: the policy follows it.
r -6 route add 2001:db8:77:60::/64 via 2001:db8:77:5::2 dev lan0
lan6() { in_ns "$NS_GW" nft list set inet moat lan6 2>/dev/null | grep -q "2001:db8:77:60::/64"; }
expect_ok "a route for a new VLAN by the LAN: its prefix is in lan6 within 2 s (guests refused it)" wait_for 2 lan6
sleep 1
expect_eq "... and it is no drift" "[]" "$(njson drift)"
r -6 route del 2001:db8:77:60::/64 via 2001:db8:77:5::2 dev lan0

# Public addresses routed into the bridge.
ROUTE="route 2001:db8:98::/48 dev moat0: guests' traffic would not leave by up0"
r -6 route add 2001:db8:98::/48 dev moat0
expect_ok "a public IPv6 prefix routed by the bridge: reported within 2 s" wait_for 2 drifted "$ROUTE"
expect_ok "... in the metrics" wait_for 3 in_prom "moat_policy_drift_object{kind=\"route\",object=\"$ROUTE\"} 1"
expect_match "... ctl status names it" "drift +route 2001:db8:98::/48 dev moat0" "$(gw_ctl status)"
r -6 route del 2001:db8:98::/48 dev moat0
expect_ok "... deleted: cleared" wait_for 2 cleared "$ROUTE"

# An IPv6 address added to the bridge.
ADDR="address 2001:db8:97::1/64 on bridge moat0: not the gateway's"
r -6 addr add 2001:db8:97::1/64 dev moat0 nodad
expect_ok "an IPv6 address added to the bridge: reported within 2 s" wait_for 2 drifted "$ADDR"
expect_ok "... in the metrics" wait_for 3 in_prom "moat_policy_drift_object{kind=\"address\",object=\"$ADDR\"} 1"
r -6 addr del 2001:db8:97::1/64 dev moat0
expect_ok "... deleted: cleared" wait_for 2 cleared "$ADDR"

# The IPv6 default route by the LAN instead of the uplink.
DFLT="default route (IPv6) via 2001:db8:77:5::2 dev lan0: not by up0"
r -6 route replace default via 2001:db8:77:5::2 dev lan0
expect_ok "the IPv6 default route moved to lan0: reported within 2 s" wait_for 2 drifted "$DFLT"
expect_ok "... and the uplink's gone" wait_for 2 drifted "default route (IPv6) by up0: gone"
r -6 route replace default via $INET_ADDR6 dev up0
expect_ok "moved back: cleared" wait_for 2 cleared "$DFLT"
expect_ok "nothing drifts any more" wait_for 2 no_drift
tap_done
