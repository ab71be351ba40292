# separate-box.sh -- the "separate box" deployment in network
# namespaces (sourced after topology.sh, whose topo_ns, topo_link and
# topo_down it uses, so teardown covers every namespace made here).
#
#   guest a1, a2 --veth "taps"--> [hostA: bridge moat0, no address] --trunk0--+
#   guest b1, b2 --veth "taps"--> [hostB: bridge moat0, no address] --trunk0--+
#                                                                             |
#        [seg: bridge seg0, a plain switch: ports hosta, hostb, gw] <---------+
#                                              |
#   [gw: sb0 10.77.0.1/24, a plain NIC] <------+
#   gw up0 203.0.113.1/24   <--->  inet eth0 203.0.113.2/24 (+ .10 http, .53 dns)
#   gw lan0 192.168.77.1/24 <--->  lan  eth0 192.168.77.2/24
#
# As on real hardware: each KVM host enslaves its guests' taps and the NIC
# towards the gateway (the trunk) to its own bridge and has no address on
# the sandbox network; the switch between the hosts and the gateway box is
# an ordinary learning switch (no port isolation: the hosts' bridge tables
# must keep guests apart on their own); the gateway box has one plain NIC
# on that segment holding the sandbox network's first address.

SB_NS_A=$TOPO-hostA
SB_NS_B=$TOPO-hostB
SB_NS_SEG=$TOPO-seg
SB_GW_IF=sb0
SB_TRUNK=trunk0

# sbox_up -- the gateway box, its uplink and LAN, the switch, two KVM hosts.
sbox_up() {
	topo_trap
	topo_reap_stale
	local ns
	for ns in "$NS_GW" "$NS_INET" "$NS_LAN" "$SB_NS_SEG" "$SB_NS_A" "$SB_NS_B"; do
		topo_ns "$ns" || return 1
	done
	in_ns "$NS_GW" sysctl -qw net.ipv4.ip_forward=1
	# The switch.
	ip -n "$SB_NS_SEG" link add seg0 type bridge || return 1
	ip -n "$SB_NS_SEG" link set seg0 up
	# The gateway box's sandbox-side NIC, plugged into the switch.
	topo_link "$SB_NS_SEG" gw "$NS_GW" $SB_GW_IF || return 1
	ip -n "$SB_NS_SEG" link set gw master seg0
	ip -n "$NS_GW" addr add $GW_ADDR/24 dev $SB_GW_IF
	# Each KVM host: a bridge without an address, its trunk on the switch.
	sbox_host "$SB_NS_A" hosta || return 1
	sbox_host "$SB_NS_B" hostb || return 1
	sbox_outside
}

# sbox_outside -- the box's uplink and LAN, as in the co-located topology.
sbox_outside() {
	topo_link "$NS_GW" up0 "$NS_INET" eth0 || return 1
	ip -n "$NS_GW" addr add 203.0.113.1/24 dev up0
	ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
	ip -n "$NS_INET" addr add $INET_HTTP/24 dev eth0
	ip -n "$NS_INET" addr add 203.0.113.53/24 dev eth0
	topo_link "$NS_GW" lan0 "$NS_LAN" eth0 || return 1
	ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
	ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
	ip -n "$NS_LAN" route add default via 192.168.77.1
	ip -n "$NS_GW" route add default via $INET_ADDR
}

# sbox_host NS SWITCHPORT -- a KVM host: bridge moat0, trunk0 to the switch.
sbox_host() {
	ip -n "$1" link add moat0 type bridge || return 1
	ip -n "$1" link set moat0 up
	topo_link "$1" $SB_TRUNK "$SB_NS_SEG" "$2" || return 1
	ip -n "$1" link set $SB_TRUNK master moat0
	ip -n "$SB_NS_SEG" link set "$2" master seg0
}

# sbox_guest HOSTNS NAME ADDR MAC TAP -- a guest namespace $TOPO-NAME whose
# eth0 has ADDR/24 and MAC, attached to HOSTNS's moat0 by a veth named TAP
# (standing in for a QEMU tap) with bridge port isolation on.  Call it
# directly (not in $(...)) so the namespace is recorded for cleanup.
sbox_guest() {
	local host=$1 ns=$TOPO-$2
	topo_ns "$ns" || return 1
	topo_link "$host" "$5" "$ns" eth0 || return 1
	ip -n "$ns" link set eth0 down
	ip -n "$ns" link set eth0 address "$4"
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$3"/24 dev eth0
	ip -n "$ns" route add default via $GW_ADDR
	ip -n "$host" link set "$5" master moat0
	ip -n "$host" link set "$5" type bridge_slave isolated on
}

# sbox_mgmt HOSTNS ADDR -- the KVM host's own management address, on a NIC
# of its own (a veth pair inside HOSTNS) and not on the sandbox network:
# what a guest must not reach through its host's bridge.
sbox_mgmt() {
	ip -n "$1" link add mgmt0 type veth peer name mgmt1 || return 1
	ip -n "$1" link set mgmt0 up
	ip -n "$1" link set mgmt1 up
	ip -n "$1" addr add "$2"/24 dev mgmt0
}

# A separate box with one trunk per KVM host and a management network
# (71-separate-box-register.sh):
#
#   [hostA: moat0 (no address) + trunk0] <--veth--> [gw: trA, routes POOL_A]
#   [hostB: moat0 (no address) + trunk0] <--veth--> [gw: trB, routes POOL_B]
#   [hostA: mgmt0 198.51.100.2/30] <--veth--> [gw: mgA 198.51.100.1/30]
#   [hostB: mgmt0 198.51.100.6/30] <--veth--> [gw: mgB 198.51.100.5/30]
#   gw: 198.51.100.100/32 on lo, the registration endpoint's address
#   gw: sb0 10.77.0.1/24 (gateway.bridge; a veth whose peer stays here)
#
# Each trunk is its own interface on the box, so the box knows which host
# a packet came from; the management network is outside gateway.network.
SB_MGMT=198.51.100.100
SB_POOL_A=10.77.0.16/28
SB_POOL_B=10.77.0.32/28

# sbox_up_trunks -- the box, its uplink and LAN, two hosts on own trunks.
sbox_up_trunks() {
	topo_trap
	topo_reap_stale
	local ns
	for ns in "$NS_GW" "$NS_INET" "$NS_LAN" "$SB_NS_A" "$SB_NS_B"; do
		topo_ns "$ns" || return 1
	done
	in_ns "$NS_GW" sysctl -qw net.ipv4.ip_forward=1
	# The box's policy must not lean on reverse-path filtering.
	in_ns "$NS_GW" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0
	ip -n "$NS_GW" link add $SB_GW_IF type veth peer name ${SB_GW_IF}p || return 1
	ip -n "$NS_GW" link set $SB_GW_IF up
	ip -n "$NS_GW" link set ${SB_GW_IF}p up
	ip -n "$NS_GW" addr add $GW_ADDR/24 dev $SB_GW_IF
	ip -n "$NS_GW" addr add $SB_MGMT/32 dev lo
	sbox_trunk_host "$SB_NS_A" trA $SB_POOL_A mgA 198.51.100.1 198.51.100.2 || return 1
	sbox_trunk_host "$SB_NS_B" trB $SB_POOL_B mgB 198.51.100.5 198.51.100.6 || return 1
	sbox_outside
}

# sbox_trunk_host NS BOXIF POOL MGIF BOXMGMT HOSTMGMT -- a KVM host with
# its trunk on the box's BOXIF (POOL routed there) and a management link.
sbox_trunk_host() {
	ip -n "$1" link add moat0 type bridge || return 1
	ip -n "$1" link set moat0 up
	topo_link "$1" $SB_TRUNK "$NS_GW" "$2" || return 1
	ip -n "$1" link set $SB_TRUNK master moat0
	in_ns "$NS_GW" sysctl -qw net.ipv4.conf.$2.rp_filter=0
	ip -n "$NS_GW" route add "$3" dev "$2" src $GW_ADDR || return 1
	topo_link "$1" mgmt0 "$NS_GW" "$4" || return 1
	ip -n "$NS_GW" addr add "$5"/30 dev "$4"
	ip -n "$1" addr add "$6"/30 dev mgmt0
	ip -n "$1" route add $SB_MGMT/32 via "$5"
}

# sbox_mkcert NAME -- a self-signed EC certificate $PKI/NAME.crt and .key,
# as a KVM host or the box makes its own (PKI: the caller's folder).
sbox_mkcert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$1" -days 2 -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
# sbox_pin NAME -- sha256:<hex> of $PKI/NAME.crt's SubjectPublicKeyInfo,
# the fingerprint typed into the other side's configuration.
sbox_pin() {
	echo "sha256:$(openssl x509 -in "$PKI/$1.crt" -pubkey -noout |
		openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)"
}
