#!/usr/bin/env bash
# What a host on the management network (the LAN side, whose default
# route is the gateway) or on the uplink (given a route to the sandbox
# network through the gateway) reaches on a running gatewayd: no guest.
# The gateway's resolver and proxy listen on its sandbox-side address,
# which the gateway routes for: the policy refuses such a host there
# (admin-prohibited, reason outside), so dnsd is no reflector for it and
# the proxy holds nothing for it.
# The gateway's own services on the management address stay the host's
# business (a banner there stands in for ssh).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
cp examples/demo.conf "$GW_CONF"
gw_start; expect_eq "gatewayd starts" 0 $?
topo_banner "$TOPO-web" 10.77.0.10 22 "SSH-2.0-guest-web"
topo_banner "$TOPO-dev" 10.77.0.11 22 "SSH-2.0-guest-dev"
topo_banner "$NS_GW" 192.168.77.1 22 "SSH-2.0-gateway-host"
# The uplink side gets a route to the sandbox network through the gateway.
in_ns "$NS_INET" ip route add 10.77.0.0/24 via 203.0.113.1

# Controls: the guests' services and gatewayd's resolver and proxy answer
# their guests.
expect_eq "control: web's own port answers on its namespace" connected \
	"$(tcp_probe "$TOPO-web" 10.77.0.10 22)"
expect_eq "control: the proxy answers a guest" connected "$(tcp_probe "$TOPO-web" 10.77.0.1 3128)"
expect_match "control: the resolver answers a guest" "status: NOERROR" \
	"$(in_ns "$TOPO-web" dig +time=2 +tries=1 @10.77.0.1 pypi.org 2>&1)"
expect_eq "control: the management network reaches the gateway's own ssh" connected \
	"$(tcp_probe "$NS_LAN" 192.168.77.1 22)"

for side in "$NS_LAN management" "$NS_INET uplink"; do
	set -- $side
	for g in 10.77.0.10 10.77.0.11; do
		r=$(tcp_probe "$1" $g 22)
		expect_match "a $2 host cannot open a connection to guest $g ($r)" "^(unreachable|timeout)$" "$r"
	done
	out=$(in_ns "$1" curl -sS -m 5 -x http://10.77.0.1:3128 http://$INET_HTTP/ 2>&1)
	expect_fail "a $2 host fetches nothing through the guests' proxy" grep -q "hello from the internet" <<<"$out"
	expect_eq "... whose port refuses it (admin-prohibited)" unreachable \
		"$(tcp_probe "$1" 10.77.0.1 3128)"
	out=$(in_ns "$1" dig +time=2 +tries=1 @10.77.0.1 pypi.org 2>&1)
	expect_fail "a $2 host's query to the guests' resolver gets no answer" \
		grep -q "status: " <<<"$out"
	expect_eq "... nor over TCP (admin-prohibited)" unreachable "$(tcp_probe "$1" 10.77.0.1 53)"
done
expect_match "the refusals are counted as outside" 'packets [1-9]' \
	"$(in_ns "$NS_GW" nft list counter inet moat outside)"
tap_done
