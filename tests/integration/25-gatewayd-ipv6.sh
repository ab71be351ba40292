#!/usr/bin/env bash
# gatewayd's own IPv6 plumbing with gateway.ipv6 (manage_network on): it
# puts the gateway's address (network::1/64) on the bridge and turns on
# IPv6 forwarding, first setting accept_ra 1 -> 2 on the host's
# interfaces (and "default") so that a homelab host keeps its own
# IPv6 default route from router advertisements (an advertised route is
# still there after gatewayd starts), and 0 on the bridge;
# --teardown sets every one of them back.  `gatewayd -n` names what is
# missing.  Without gateway.ipv6 none of it is touched.  While gatewayd
# runs it follows the host's IPv6 networks: a global prefix the LAN
# interface gains is refused to guests within a second (one incremental
# update, not a replacement), and one it loses is reachable again.  The
# same for the host's routes: a /64 of the site behind the LAN's router,
# routed there and not by default, is refused from the start, and one
# routed while gatewayd runs within a second; gateway.ipv6.site_prefixes
# refuses a prefix the host reaches by its default route.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
NEW6=2001:db8:77:9	# the prefix the LAN interface gains while gatewayd runs
SITE6=2001:db8:77:20	# another VLAN of the site, behind the LAN's router
VLAN6=2001:db8:77:21	# one more, routed there while gatewayd runs
FAR6=2001:db8:300::7	# a host on the IPv6 internet (the uplink's own /64 is the host's)
topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
ip -n "$TOPO-dev" addr add $NET6::b/64 dev eth0 nodad
ip -n "$TOPO-dev" -6 route add default via $NET6::1
# The homelab's starting point: no IPv6 forwarding, router advertisements
# taken (accept_ra 1) on the LAN interface, the default and the bridge.
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=0 net.ipv6.conf.default.accept_ra=1 \
	net.ipv6.conf.lan0.accept_ra=1 net.ipv6.conf.moat0.accept_ra=1 net.ipv6.conf.up0.accept_ra=0
KNOBS="net.ipv6.conf.all.forwarding net.ipv6.conf.default.accept_ra net.ipv6.conf.lan0.accept_ra
	net.ipv6.conf.moat0.accept_ra net.ipv6.conf.up0.accept_ra"
knobs() { local k; for k in $KNOBS; do echo "$k = $(in_ns "$NS_GW" sysctl -n "$k")"; done; }
before=$(knobs)
bridge6() { ip -n "$NS_GW" -6 addr show dev moat0 scope global | awk '/inet6/ {print $2}'; }

# The LAN: a global prefix on the host's interface from the start (in lan6
# at once), and its router (the LAN namespace) with two more VLANs of the
# site, one routed by the host from the start.  NEW6::2 is on the internet
# side, reached by the default route until the host has NEW6 itself.
ip -n "$NS_GW" addr add 2001:db8:77:5::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add 2001:db8:77:5::2/64 dev eth0 nodad
ip -n "$NS_LAN" addr add $SITE6::2/128 dev lo nodad
ip -n "$NS_LAN" addr add $VLAN6::2/128 dev lo nodad
ip -n "$NS_INET" addr add $NEW6::2/128 dev lo nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:77:5::1
ip -n "$NS_GW" -6 route add $SITE6::/64 via 2001:db8:77:5::2 dev lan0
ip -n "$NS_INET" addr add $FAR6/128 dev lo nodad
for ns in "$NS_GW lan0" "$NS_LAN eth0" "$TOPO-dev eth0"; do
	topo_wait_dad $ns || { not_ok "link-local addresses ready in $ns"; exit 1; }
done
for t in "$NS_INET $FAR6" "$NS_LAN 2001:db8:77:5::2" "$NS_INET $NEW6::2" "$NS_LAN $SITE6::2" "$NS_LAN $VLAN6::2"; do
	set -- $t
	topo_bg "$1" "banner6-$2" socat TCP6-LISTEN:2222,bind="[$2]",fork,reuseaddr SYSTEM:"echo hi"
	topo_wait_port "$1" "$2" 2222 || { not_ok "listener on $2"; exit 1; }
done
hi() {	# hi ADDR -- what [ADDR]:2222 says to the guest
	in_ns "$TOPO-dev" timeout 5 socat -u TCP6:"[$1]":2222,connect-timeout=3 STDOUT 2>/dev/null
}

conf() {	# conf [IPV6 LINE]
	cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];
  state_dir = "$TOPO_TMP/state";
  $1
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
}
stop_gw() { kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null; }
teardown() { in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1; }

# --- without gateway.ipv6 nothing of IPv6 is touched ---
conf ""
gw_start -X; expect_eq "gatewayd without gateway.ipv6 starts" 0 $?
expect_eq "without gateway.ipv6: no IPv6 knob changed" "$before" "$(knobs)"
expect_eq "without gateway.ipv6: no IPv6 address on the bridge" "" "$(bridge6)"
# Turned on by a reload: the same steps, at once.
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };"
expect_ok "reload with gateway.ipv6 added" gw_ctl reload
expect_eq "after the reload: the IPv6 address is on the bridge" "$NET6::1/64" "$(bridge6)"
expect_eq "after the reload: IPv6 forwarding on" 1 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.all.forwarding)"
stop_gw; teardown >/dev/null
expect_eq "teardown after the reload: every IPv6 knob is back" "$before" "$(knobs)"
expect_eq "... and the address is gone" "" "$(bridge6)"

# --- gatewayd -n names what is missing ---
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };"
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1)
expect_match "-n: the gateway's IPv6 address is missing on the bridge" \
	"address $NET6::1/64: missing on moat0" "$out"
expect_match "-n: IPv6 forwarding is off" "forwarding IPv6: off" "$out"
expect_eq "-n changed nothing" "$before" "$(knobs)"
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; }; manage_network = false;"
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1)
expect_match "manage_network = false: the IPv6 address is yours to add" \
	"address $NET6::1/64: missing on moat0 \(gateway.manage_network is false: this is yours" "$out"
expect_match "manage_network = false: so is IPv6 forwarding" \
	"forwarding IPv6: off .*\(gateway.manage_network is false" "$out"
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };"

# --- with gateway.ipv6 gatewayd sets it up ---
# The host's own IPv6 default route from its LAN router's advertisement
# (the homelab case; the uplink's static one stays preferred).  Turning
# forwarding on with accept_ra 1 would drop it at once.
ip -n "$NS_GW" -6 route replace default via $INET_ADDR6 metric 100
in_ns "$NS_LAN" python3 tests/harness/ra-send.py eth0
ra_route() { ip -n "$NS_GW" -6 route show default dev lan0 proto ra; }
has_ra() { [ -n "$(ra_route)" ]; }
wait_for 5 has_ra
expect_match "before gatewayd: the host has a default route from the LAN's advertisement" \
	"^default via fe80:" "$(ra_route)"
gw_start -X; expect_eq "gatewayd with gateway.ipv6 starts" 0 $?
expect_eq "the gateway's IPv6 address is on the bridge" "$NET6::1/64" "$(bridge6)"
expect_eq "IPv6 forwarding on" 1 "$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.all.forwarding)"
expect_eq "the LAN interface still takes advertisements (accept_ra 2)" 2 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.lan0.accept_ra)"
expect_eq "... so do interfaces yet to come (default 2)" 2 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.default.accept_ra)"
expect_eq "the bridge takes none from guests (accept_ra 0)" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.moat0.accept_ra)"
expect_eq "an interface that took none is left alone" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.up0.accept_ra)"
expect_match "forwarding on: the host kept its advertised default route" \
	"^default via fe80:" "$(ra_route)"
st=$(gw_ctl status 2>&1)
expect_match "ctl status shows the IPv6 forwarding step" "forwarding IPv6: enabled" "$st"
expect_eq "the guest reaches the IPv6 internet through the gateway" hi "$(hi $FAR6)"
expect_eq "the guest is refused the LAN's prefix known at start" "" "$(hi 2001:db8:77:5::2)"
t0=$(date +%s%N); r=$(hi $SITE6::2); ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the guest is refused a /64 the host routes via the LAN's router" "" "$r"
expect_ok "... at once (${ms} ms)" test "$ms" -lt 2000
expect_match "... which is in lan6" "$SITE6::/64" "$(in_ns "$NS_GW" nft list set inet moat lan6)"
expect_eq "the host itself reaches it (the path is real)" hi \
	"$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$SITE6::2]":2222,connect-timeout=3 STDOUT 2>/dev/null)"
expect_eq "the proxy's user does not reach it either (output chain)" "" \
	"$(in_ns "$NS_GW" setpriv --reuid="$(id -u moat-proxy)" --regid="$(id -g moat-proxy)" \
	    --clear-groups timeout 5 socat -u TCP6:"[$SITE6::2]":2222,connect-timeout=3 STDOUT 2>/dev/null)"

# --- following the host's routes ---
expect_eq "before the host routes $VLAN6::/64 the guest cannot reach it (no route)" "" "$(hi $VLAN6::2)"
ip -n "$NS_GW" -6 route add $VLAN6::/64 via 2001:db8:77:5::2 dev lan0
vlan_in() { in_ns "$NS_GW" nft list set inet moat lan6 2>/dev/null | grep -q "$VLAN6::/64"; }
expect_ok "within a second a new route's prefix is in lan6" wait_for 1 vlan_in
t0=$(date +%s%N); r=$(hi $VLAN6::2); ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the guest is refused it" "" "$r"
expect_ok "... at once (${ms} ms)" test "$ms" -lt 2000
ip -n "$NS_GW" -6 route del $VLAN6::/64 via 2001:db8:77:5::2 dev lan0
expect_ok "a route removed leaves lan6 within a second" wait_for 1 eval '! vlan_in'
# The rest of a delegated prefix, as a prefix-delegation client leaves it.
ip -n "$NS_GW" -6 route add unreachable 2001:db8:77:40::/58
pd_in() { in_ns "$NS_GW" nft list set inet moat lan6 2>/dev/null | grep -q "2001:db8:77:40::/58"; }
expect_ok "an unreachable route's prefix (a delegated prefix's rest) is in lan6 too" wait_for 1 pd_in
ip -n "$NS_GW" -6 route del unreachable 2001:db8:77:40::/58
expect_ok "nft-rules verify agrees with the routes" in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify

# --- following the host's networks ---
expect_eq "before the host has an address in $NEW6::/64 the guest reaches it" hi "$(hi $NEW6::2)"
lines=$(wc -l <"$GW_LOG")
ip -n "$NS_GW" addr add $NEW6::1/64 dev lan0 nodad
sleep 1
in_set() { in_ns "$NS_GW" nft list set inet moat lan6 2>/dev/null | grep -q "$NEW6::/64"; }
expect_ok "within a second the new prefix is in lan6" in_set
t0=$(date +%s%N); r=$(hi $NEW6::2); ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the guest is refused the host's new prefix" "" "$r"
expect_ok "... at once (${ms} ms, an ICMPv6 refusal, not a timeout)" test "$ms" -lt 2000
log=$(tail -n +"$((lines + 1))" "$GW_LOG")
expect_match "gatewayd says the host's networks changed" "IPv6 networks changed" "$log"
expect_match "... and updated the policy in place" "policy: updated" "$log"
expect_fail "... without replacing it" grep -q "policy: replaced" <<<"$log"
expect_ok "nft-rules verify: the kernel holds what the policy is now" \
	in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify
ip -n "$NS_GW" addr del $NEW6::1/64 dev lan0
sleep 1
expect_fail "the prefix the host lost leaves lan6" in_set
expect_eq "the guest reaches it again" hi "$(hi $NEW6::2)"
expect_ok "nft-rules verify agrees again" in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify

# --- site_prefixes: the site's own, reached by the default route ---
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; site_prefixes = [ \"2001:db8:300::/48\" ]; };"
expect_ok "reload with gateway.ipv6.site_prefixes" gw_ctl reload
expect_match "the site prefix is in lan6" "2001:db8:300::/48" "$(in_ns "$NS_GW" nft list set inet moat lan6)"
t0=$(date +%s%N); r=$(hi $FAR6); ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "the guest is refused a host of the site prefix, though it lies behind the default route" "" "$r"
expect_ok "... at once (${ms} ms)" test "$ms" -lt 2000
conf "ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };"
expect_ok "reload without it" gw_ctl reload
expect_eq "the guest reaches it again" hi "$(hi $FAR6)"

# --- teardown sets everything back ---
stop_gw
out=$(teardown); rc=$?
expect_eq "teardown: exit 0" 0 $rc
expect_match "teardown removes the bridge's IPv6 address" "removed $NET6::1/64 from moat0" "$out"
expect_eq "teardown: the bridge has no IPv6 address left" "" "$(bridge6)"
expect_eq "teardown: every IPv6 knob is back" "$before" "$(knobs)"
# Records that are not what gatewayd writes change nothing.
printf 'accept_ra lan0 7\naccept_ra ../../../kernel/panic 1\nforwarding6 lan0 1\n' \
	>"$TOPO_TMP/state/network.undo"
out=$(teardown)
expect_match "a record with another value is ignored, with a warning" 'ignored "accept_ra lan0 7"' "$out"
expect_eq "... and no IPv6 knob changed" "$before" "$(knobs)"
tap_done
