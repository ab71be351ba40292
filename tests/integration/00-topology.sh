#!/usr/bin/env bash
# The namespace harness itself: the topology comes up, its links work, and
# it is torn down.  No moat policy is loaded here.
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"

topo_up || { not_ok "topology comes up"; exit 1; }
ok "topology comes up"
topo_guest g1 10.77.0.10 52:54:00:00:00:0a mt-g1; g1=$TOPO-g1
topo_guest g2 10.77.0.11 52:54:00:00:00:0b mt-g2; g2=$TOPO-g2
topo_services || not_ok "services start"

expect_ok "guest reaches the gateway (ping 10.77.0.1)" \
	in_ns "$g1" ping -c1 -W10 $GW_ADDR
expect_ok "internet namespace answers the gateway (HTTP 203.0.113.10)" \
	in_ns "$NS_GW" curl -sf --max-time 3 http://$INET_HTTP/
body=$(in_ns "$NS_GW" curl -s --max-time 3 http://$INET_HTTP/)
expect_eq "internet HTTP body" "hello from the internet" "$body"
banner=$(in_ns "$NS_GW" timeout 3 socat -T2 - TCP:$LAN_HOST:22 </dev/null)
expect_eq "LAN host service answers the gateway" "SSH-2.0-moat-lan-host" "$banner"
expect_eq "guest MAC is as asked" "52:54:00:00:00:0b" \
	"$(ip -n "$g2" -br link show eth0 | awk '{print $3}')"
expect_match "guest ports are bridge-isolated" "isolated on" \
	"$(ip -n "$NS_GW" -d link show mt-g1)"
# Bridge port isolation: without any moat policy the bridge itself must
# keep guests apart at layer 2.
expect_fail "guest cannot reach another guest at layer 2 (isolation)" \
	in_ns "$g1" ping -c1 -W1 10.77.0.11

# Teardown runs even when the script dies: kill a subshell topology
# mid-way and check that nothing of it is left.
sub=moat$((RANDOM + 100000))
( TOPO=$sub; . "$(dirname "$0")/../harness/topology.sh"; topo_up; topo_guest x 10.77.0.20 52:54:00:00:00:20 mt-x >/dev/null; kill -TERM $BASHPID; sleep 5 ) >/dev/null 2>&1
expect_eq "interrupted topology leaves no namespace" "" \
	"$(ip netns list | awk '{print $1}' | grep "^$sub-" || true)"
tap_done
