#!/usr/bin/env bash
# demo.sh -- `make demo`: the appliance on an embedded default config, in
# network namespaces this run creates and removes.  Every packet stays in
# those namespaces.  Each program contributes a part in tests/demo.d/
# (sourced in order); this script builds the topology, runs the parts, and
# shows which probes from the guests were allowed or refused, and why.
set -u
cd "$(dirname "$0")/.."
. tests/harness/topology.sh

DEMO_CONF=${DEMO_CONF:-examples/demo.conf}
BIN=build
bold() { printf '\n\033[1m== %s ==\033[0m\n' "$*"; }

# demo_probe GUEST ADDR PORT WHAT -- one TCP connection from a guest,
# classified the way containment-check does.
demo_probe() {
	local ns=$TOPO-$1 out verdict
	out=$(in_ns "$ns" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3 && echo connected" 2>&1)
	case "$out" in
	*connected*)		verdict="ALLOWED   (connected)" ;;
	*"No route to host"*)	verdict="REFUSED   (ICMP admin-prohibited from the gateway)" ;;
	*"Connection refused"*)	verdict="CLOSED    (a host answered: port closed)" ;;
	*"Network is unreachable"*) verdict="REFUSED   (network unreachable)" ;;
	*)			verdict="NO ANSWER (dropped or timed out)" ;;
	esac
	printf '  %-7s -> %-20s %-30s %s\n' "$1" "$2:$3" "$4" "$verdict"
}

demo_probes() {
	local g
	for g in web dev locked; do
		demo_probe $g $INET_HTTP 80 "internet web server"
		demo_probe $g $LAN_HOST 22 "LAN host ssh"
		demo_probe $g $GW_ADDR 22 "the gateway host's ssh"
	done
	demo_probe web 10.77.0.11 8080 "another guest (dev)"
	demo_probe dev 169.254.169.254 80 "cloud metadata"
}

bold "1. Configuration ($DEMO_CONF)"
$BIN/gatewayd -n -c "$DEMO_CONF" || exit 1

bold "2. Topology (network namespaces, prefix $TOPO)"
topo_up || { echo "demo: could not build the topology" >&2; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
topo_banner "$TOPO-dev" 10.77.0.11 8080 "guest-dev-service"
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-host"
cat <<TXT
  guests web (10.77.0.10, allowlist), dev (10.77.0.11, open), locked (10.77.0.12, none)
        |  veth "taps", bridge port isolation on
  [gateway: moat0 10.77.0.1] --up0--> [internet 203.0.113.0/24: HTTP on .10:80]
                             --lan0-> [LAN 192.168.77.0/24: ssh and http on .2]
TXT

bold "3. Probes from the guests before moat's policy is loaded"
demo_probes

for part in tests/demo.d/*.sh; do
	[ -e "$part" ] || continue
	. "$part"
done

bold "Teardown"
topo_down
echo "  all namespaces and processes of this run removed"
