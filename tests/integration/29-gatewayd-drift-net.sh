#!/usr/bin/env bash
# gatewayd watches the host's addresses and routes beside its tables.  A
# route that sends addresses guests may reach out of another interface
# than the uplink (a route "for a new VLAN" with public addresses), an
# address added to the moat bridge, the gateway's own address taken off
# it and a default route by another interface are each reported within
# 2 s from the rtnetlink notification (the timer is off), named, audited,
# in ctl status and in the metrics, and cleared when put back.  The
# host's own life is not drift: a route to a private range or by the
# uplink, an address on another interface.  With verify.repair_network
# the gateway's address is put back; another's route or address is never
# touched.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
cp examples/demo.conf "$GW_CONF"
PROM=$TOPO_TMP/moat.prom
sed -i -e "s|^  treat_as_public|  verify: { interval = 0; repair = true; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n&|" "$GW_CONF"
gw_start; expect_eq "gatewayd starts" 0 $?

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
njson() { gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['kernel_watch']['$1'])"; }
metric() { grep -E "^$1( |\{)" "$PROM"; }
no_drift() { [ "$(njson drift)" = "[]" ]; }
drifted() { audit policy-drift | grep -qF "\"object\":\"$1\""; }
cleared() { audit policy-drift-cleared | grep -qF "\"object\":\"$1\""; }
in_prom() { grep -qF "$1" "$PROM"; }
r() { ip -n "$NS_GW" "$@"; }

expect_eq "nothing drifts at start (the gateway's address, the uplink's routes, the LAN's private ones)" \
	"[]" "$(njson drift)"

# The host's own life: none of it is drift.
r route add 10.99.0.0/16 via $LAN_HOST dev lan0
r route add 203.0.113.64/26 via $INET_ADDR dev up0
r addr add 192.168.77.5/24 dev lan0
r addr add 2001:db8:203::99/64 dev up0 nodad
sleep 1.5
expect_eq "a private route by the LAN, a public one by the uplink, addresses on other links: no drift" \
	"[]" "$(njson drift)"
r route del 10.99.0.0/16 via $LAN_HOST dev lan0
r route del 203.0.113.64/26 via $INET_ADDR dev up0
r addr del 192.168.77.5/24 dev lan0
r addr del 2001:db8:203::99/64 dev up0

# A route "for a new VLAN" whose addresses guests may reach, by the LAN.
ROUTE="route 203.0.113.128/25 via $LAN_HOST dev lan0: guests' traffic would not leave by up0"
expect_ok "ip route add 203.0.113.128/25 via $LAN_HOST dev lan0" \
	r route add 203.0.113.128/25 via $LAN_HOST dev lan0
expect_ok "within 2 s: policy-drift audited, naming the route" wait_for 2 drifted "$ROUTE"
expect_match "... found by the notification" \
	"\"object\":\"route 203.0.113.128/25 [^\"]*\",\"found\":\"notification\"" "$(audit policy-drift)"
expect_match "... ctl status: DRIFT, naming the route" \
	"drift +route 203.0.113.128/25 via $LAN_HOST dev lan0" "$(gw_ctl status)"
expect_match "... ctl status: verify says DRIFT" "^verify +DRIFT" "$(gw_ctl status)"
expect_ok "... the metrics: a route series" wait_for 3 in_prom \
	"moat_policy_drift_object{kind=\"route\",object=\"$ROUTE\"} 1"
expect_eq "... moat_policy_drift 1" "moat_policy_drift 1" "$(metric moat_policy_drift)"
grep -qE "gatewayd.*policy drift \(notification\): route 203.0.113.128/25" "$GW_LOG"
expect_eq "... and logged" 0 $?
expect_ok "... and left alone" r route show 203.0.113.128/25 dev lan0
r route del 203.0.113.128/25 via $LAN_HOST dev lan0
expect_ok "the route deleted: policy-drift-cleared within 2 s" wait_for 2 cleared "$ROUTE"
expect_ok "... moat_policy_drift 0 again" wait_for 3 in_prom "moat_policy_drift 0"

# An address added to the bridge.
ADDR="address 10.77.0.250/24 on bridge moat0: not the gateway's"
expect_ok "ip addr add 10.77.0.250/24 dev moat0" r addr add 10.77.0.250/24 dev moat0
expect_ok "within 2 s: policy-drift audited, naming the address" wait_for 2 drifted "$ADDR"
expect_match "... ctl status names it" "drift +address 10.77.0.250/24 on bridge moat0" "$(gw_ctl status)"
expect_ok "... the metrics: an address series" wait_for 3 in_prom \
	"moat_policy_drift_object{kind=\"address\",object=\"$ADDR\"} 1"
expect_ok "... and left alone" r addr show dev moat0 to 10.77.0.250/32
r addr del 10.77.0.250/24 dev moat0
expect_ok "the address deleted: cleared within 2 s" wait_for 2 cleared "$ADDR"

# The gateway's own address taken off the bridge: reported, left alone.
GONE="address $GW_ADDR/24 of the gateway: gone from bridge moat0"
expect_ok "ip addr del $GW_ADDR/24 dev moat0" r addr del $GW_ADDR/24 dev moat0
expect_ok "within 2 s: reported" wait_for 2 drifted "$GONE"
expect_ok "... in the metrics" wait_for 3 in_prom \
	"moat_policy_drift_object{kind=\"address\",object=\"$GONE\"} 1"
sleep 0.5
expect_eq "... not back" "" "$(r -br addr show dev moat0 to $GW_ADDR/32)"
r addr add $GW_ADDR/24 dev moat0
expect_ok "put back by hand: cleared within 2 s" wait_for 2 cleared "$GONE"

# A default route by another interface than the uplink.
r route replace default via $LAN_HOST dev lan0
DFLT="default route (IPv4) via $LAN_HOST dev lan0: not by up0"
expect_ok "default route moved to lan0: reported within 2 s" wait_for 2 drifted "$DFLT"
expect_ok "... and the uplink's default route gone" wait_for 2 drifted "default route (IPv4) by up0: gone"
r route replace default via $INET_ADDR dev up0
expect_ok "moved back: cleared" wait_for 2 cleared "$DFLT"
expect_ok "... both" wait_for 2 cleared "default route (IPv4) by up0: gone"
expect_ok "nothing drifts any more" wait_for 2 no_drift

# repair_network on: the gateway's address is put back at once.
sed -i 's/repair = true; }/repair = true; repair_network = true; }/' "$GW_CONF"
gw_ctl reload >/dev/null
expect_eq "verify.repair_network = true after a reload" True "$(njson repair)"
has_gw() { [ -n "$(r -br addr show dev moat0 to $GW_ADDR/32)" ]; }
r addr del $GW_ADDR/24 dev moat0
expect_ok "the gateway's address deleted: back within 2 s" wait_for 2 has_gw
expect_match "... audited as repaired" \
	"\"event\":\"policy-repaired\",\"object\":\"gateway address\",\"address\":\"$GW_ADDR\"" \
	"$(audit policy-repaired)"
r route add 203.0.113.128/25 via $LAN_HOST dev lan0
expect_ok "another's route with repair_network on: reported" wait_for 2 drifted "$ROUTE"
sleep 0.5
expect_ok "... and never touched" r route show 203.0.113.128/25 dev lan0
r route del 203.0.113.128/25 via $LAN_HOST dev lan0
tap_done
