#!/usr/bin/env bash
# nft-rules --host-only: on a KVM host in front of a separate gateway box
# only "bridge moat" is built: guests keep their own MAC and address, and
# no port but the trunk may carry a sandbox-network address.  Here the gw
# namespace plays the KVM host and a port "mt-trunk" the link to the box.
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest box 10.77.0.2 52:54:00:00:00:02 mt-trunk
topo_guest rogue 10.77.0.50 52:54:00:00:00:50 mt-rogue
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-kvm-host"

CONF=$TOPO_TMP/moat.conf
cat >"$CONF" <<'EOF'
gateway: {
  uplink  = "mt-trunk";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
EOF
nftr() { in_ns "$NS_GW" "$NFTR" -c "$CONF" --host-only "$@"; }
reach() {	# reach GUEST [SOURCE] -- TCP to the host's 10.77.0.1:22
	in_ns "$TOPO-$1" timeout 3 socat -T2 - TCP:$GW_ADDR:22${2:+,bind=$2} </dev/null 2>/dev/null
}

expect_eq "before: a port not in the config reaches the host" "SSH-2.0-kvm-host" "$(reach rogue)"
out=$(in_ns "$NS_GW" "$NFTR" -c "$CONF" --trunk mt-trunk check 2>&1); st=$?
expect_eq "--trunk without --host-only is a usage error (exit 2)" 2 "$st"
expect_match "--trunk without --host-only says so" "trunk needs --host-only" "$out"
expect_ok "apply --host-only" nftr apply
expect_ok "verify --host-only" nftr verify
expect_eq "only bridge moat exists" "table bridge moat" "$(in_ns "$NS_GW" nft list tables)"
expect_eq "a guest with its own MAC and address is bridged" "SSH-2.0-kvm-host" "$(reach dev)"
in_ns "$TOPO-dev" ip addr add 10.77.0.99/32 dev eth0
expect_eq "a guest with a changed address is not" "" "$(reach dev 10.77.0.99)"
in_ns "$TOPO-dev" ip addr del 10.77.0.99/32 dev eth0
in_ns "$TOPO-dev" ip link set eth0 address 52:54:00:00:00:99
expect_eq "a guest with a changed MAC is not" "" "$(reach dev)"
in_ns "$TOPO-dev" ip link set eth0 address 52:54:00:00:00:0b
expect_eq "a port not in the config may not use a sandbox address" "" "$(reach rogue)"
expect_eq "the trunk may" "SSH-2.0-kvm-host" "$(reach box)"
expect_ok "flush" nftr flush
expect_eq "after flush the rogue port reaches the host again" "SSH-2.0-kvm-host" "$(reach rogue)"
tap_done
