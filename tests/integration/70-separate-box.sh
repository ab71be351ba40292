#!/usr/bin/env bash
# Separate gateway box (docs/separate-box.md): two KVM hosts run only
# nft-rules --host-only on their own bridges, a plain switch joins their
# trunks to the gateway box's sandbox-side NIC, and gatewayd on the box
# enforces the routing policy, DNS and the proxy for the guests of both.
# Topology: tests/harness/separate-box.sh.  Mutations at the end show the
# isolation and anti-spoofing checks fail when the host rules are gone.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh

for b in build/nft-rules build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
sbox_up || { not_ok "separate-box topology comes up"; tap_done; exit 1; }
sbox_guest "$SB_NS_A" a1 10.77.0.21 52:54:00:00:0a:01 mt-a1
sbox_guest "$SB_NS_A" a2 10.77.0.22 52:54:00:00:0a:02 mt-a2
sbox_guest "$SB_NS_B" b1 10.77.0.31 52:54:00:00:0b:01 mt-b1
sbox_guest "$SB_NS_B" b2 10.77.0.32 52:54:00:00:0b:02 mt-b2
topo_services || { not_ok "test services start"; tap_done; exit 1; }
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-box"
topo_banner "$TOPO-a2" 10.77.0.22 22 "SSH-2.0-guest-a2"
topo_banner "$TOPO-b1" 10.77.0.31 22 "SSH-2.0-guest-b1"
topo_bg "$NS_INET" upstream-dns python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --log "$TOPO_TMP/upstream.queries"
# A UDP sink on the internet: what a spoofing guest manages to send out.
SINK=$TOPO_TMP/sink
topo_bg "$NS_INET" sink socat -u UDP-RECV:9999,bind=$INET_HTTP OPEN:"$SINK",creat,append
topo_wait_port "$NS_INET" 203.0.113.53 53
# Host A's management address and a UDP service on it.
HOST_A_MGMT=198.51.100.5
sbox_mgmt "$SB_NS_A" $HOST_A_MGMT
MGMT_SINK=$TOPO_TMP/mgmt-sink
topo_bg "$SB_NS_A" mgmt-sink socat -u UDP-RECV:5555,bind=$HOST_A_MGMT OPEN:"$MGMT_SINK",creat,append
udp_up() { in_ns "$1" ss -Hlun "src $2" | grep -q .; }	# udp_up NS ADDR:PORT
wait_for 30 udp_up "$NS_INET" $INET_HTTP:9999 || not_ok "the internet UDP sink listens"
wait_for 30 udp_up "$SB_NS_A" $HOST_A_MGMT:5555 || not_ok "host A's UDP sink listens"
for g in a1 b1; do	# a guest that knows where the host is
	in_ns $TOPO-$g ip route add 198.51.100.0/24 dev eth0
done

sb() {	# sb NAME ADDR MAC TAP EGRESS -- one sandbox entry
	printf '  { name = "%s"; address = "%s"; mac = "%s"; tap = "%s"; egress = "%s"; }' "$@"
}
A1=$(sb a1 10.77.0.21 52:54:00:00:0a:01 mt-a1 open)
A2=$(sb a2 10.77.0.22 52:54:00:00:0a:02 mt-a2 open)
B1=$(sb b1 10.77.0.31 52:54:00:00:0b:01 mt-b1 open)
B2=$(sb b2 10.77.0.32 52:54:00:00:0b:02 mt-b2 none)
gw_section() {	# gw_section UPLINK [bridge line]
	cat <<CONF
gateway: {
  uplink  = "$1";
  network = "10.77.0.0/24";
  ${2:-}
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
};
CONF
}
# Each KVM host lists its own guests; the gateway box lists them all.
{ gw_section $SB_TRUNK; printf 'sandboxes = (\n%s,\n%s\n);\n' "$A1" "$A2"; } >"$TOPO_TMP/hostA.conf"
{ gw_section $SB_TRUNK; printf 'sandboxes = (\n%s,\n%s\n);\n' "$B1" "$B2"; } >"$TOPO_TMP/hostB.conf"
{ gw_section up0 "bridge  = \"$SB_GW_IF\";"
  printf 'sandboxes = (\n%s,\n%s,\n%s,\n%s\n);\n' "$A1" "$A2" "$B1" "$B2"; } >"$GW_CONF"

host_rules() {	# host_rules NS CONF CMD -- nft-rules --host-only on a KVM host
	in_ns "$1" build/nft-rules -c "$2" --host-only --trunk $SB_TRUNK "$3"
}
counter() {	# counter NS TABLE NAME -- packets of one moat counter
	in_ns "$1" nft list counter "$2" moat "$3" | awk '/packets/ {print $2}'
}
drops() {	# packets the KVM hosts' bridge tables dropped so far
	local ns n s=0
	for ns in "$SB_NS_A" "$SB_NS_B"; do
		for n in spoof guest local; do s=$((s + $(counter "$ns" bridge $n 2>/dev/null || :) + 0)); done
	done
	echo $s
}
# settled FILE TAG DROPS0 -- the 3 datagrams arrived, or 3 more were dropped
settled() { [ "$(grep -c "^$2\$" "$1" 2>/dev/null)" -ge 3 ] || [ "$(drops)" -ge $(($3 + 3)) ]; }
udp_send() {	# udp_send GUEST TAG [SOURCE] -- three datagrams to the sink
	local d0; d0=$(drops)
	in_ns "$TOPO-$1" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if len(sys.argv) > 2: s.bind((sys.argv[2], 0))
for _ in range(3): s.sendto(sys.argv[1].encode() + b"\n", ("203.0.113.10", 9999))' "$2" ${3:+"$3"}
	wait_for 30 settled "$SINK" "$2" "$d0"
}
sunk() { cat "$SINK" 2>/dev/null | grep -c "^$1\$" || :; }
to_host() {	# to_host GUEST TAG -- three datagrams to host A's own address
	local d0; d0=$(drops)
	in_ns "$TOPO-$1" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    try: s.sendto(sys.argv[1].encode() + b"\n", ("'$HOST_A_MGMT'", 5555))
    except OSError: pass' "$2"
	wait_for 30 settled "$MGMT_SINK" "$2" "$d0"
	cat "$MGMT_SINK" 2>/dev/null | grep -c "^$2\$" || :
}

# Baseline: without moat the switch joins the guests of both hosts.
expect_eq "before moat: a1 (host A) reaches b1 (host B) across the switch" \
	connected "$(tcp_probe $TOPO-a1 10.77.0.31 22)"
expect_eq "before moat: a1 reaches host A's own address through the bridge" 3 \
	"$(to_host a1 before-a1)"
expect_eq "before moat: b1 reaches host A's own address through the trunk" 3 \
	"$(to_host b1 before-b1)"

expect_ok "host A: nft-rules --host-only apply" host_rules "$SB_NS_A" "$TOPO_TMP/hostA.conf" apply
expect_ok "host B: nft-rules --host-only apply" host_rules "$SB_NS_B" "$TOPO_TMP/hostB.conf" apply
expect_ok "host A: verify" host_rules "$SB_NS_A" "$TOPO_TMP/hostA.conf" verify
expect_eq "host A has only bridge moat" "table bridge moat" "$(in_ns "$SB_NS_A" nft list tables)"
expect_ok "gateway config with a plain NIC as the sandbox side checks" \
	in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"
gw_start; expect_eq "gatewayd starts on the gateway box" 0 $?
children_up() { [ -n "$(gw_child_pid dnsd)" ] && [ -n "$(gw_child_pid proxy)" ]; }
wait_for 30 children_up
topo_wait_port "$NS_GW" $GW_ADDR 3128
expect_eq "the gateway box has both policy tables" "table inet moat table bridge moat" \
	"$(in_ns "$NS_GW" nft list tables | tr '\n' ' ' | sed 's/ $//')"

for g in a1 b1; do
	expect_match "$g: the internet web server answers" "hello from the internet" \
		"$(in_ns $TOPO-$g curl -s -m 10 http://$INET_HTTP/)"
	expect_eq "$g: resolves through dnsd on the gateway box" "$INET_HTTP" \
		"$(in_ns $TOPO-$g dig +short +time=8 +tries=1 @$GW_ADDR open.test A)"
	expect_eq "$g: the proxy port is open" connected "$(tcp_probe $TOPO-$g $GW_ADDR 3128)"
	expect_eq "$g: LAN host ssh refused (admin-prohibited)" unreachable \
		"$(tcp_probe $TOPO-$g $LAN_HOST 22)"
	expect_eq "$g: gateway box ssh refused (admin-prohibited)" unreachable \
		"$(tcp_probe $TOPO-$g $GW_ADDR 22)"
	expect_eq "$g: the gateway box's uplink address refused" unreachable \
		"$(tcp_probe $TOPO-$g 203.0.113.1 22)"
done
expect_eq "b2 (egress none, host B): the internet refused" unreachable \
	"$(tcp_probe $TOPO-b2 $INET_HTTP 80)"

before=$(counter "$SB_NS_B" bridge guest)
expect_eq "a1 cannot reach b1 on the other host" timeout "$(tcp_probe $TOPO-a1 10.77.0.31 22)"
after=$(counter "$SB_NS_B" bridge guest)
expect_eq "... dropped by host B's bridge table as guest traffic" True \
	"$([ "${after:-0}" -gt "${before:-0}" ] && echo True || echo "False ($before -> $after)")"
expect_eq "b1 cannot reach a2 on the other host" timeout "$(tcp_probe $TOPO-b1 10.77.0.22 22)"
expect_eq "a1 cannot reach a2 on its own host" timeout "$(tcp_probe $TOPO-a1 10.77.0.22 22)"
# The gateway routes nothing back onto the segment.
in_ns $TOPO-a1 ip route add 10.77.0.31/32 via $GW_ADDR
expect_eq "a1 cannot reach b1 through the gateway box either" unreachable \
	"$(tcp_probe $TOPO-a1 10.77.0.31 22)"
in_ns $TOPO-a1 ip route del 10.77.0.31/32 via $GW_ADDR

before=$(counter "$SB_NS_A" bridge local)
expect_eq "a1 cannot reach its KVM host's own address" 0 "$(to_host a1 after-a1)"
expect_eq "b1 cannot reach host A's own address across the trunk" 0 "$(to_host b1 after-b1)"
after=$(counter "$SB_NS_A" bridge local)
expect_eq "... dropped by host A's bridge table before its IP stack" True \
	"$([ "${after:-0}" -gt "${before:-0}" ] && echo True || echo "False ($before -> $after)")"

udp_send a1 genuine-a1
expect_eq "a1's own datagram reaches the internet sink" 3 "$(sunk genuine-a1)"
in_ns $TOPO-a2 ip addr add 10.77.0.31/32 dev eth0
before=$(counter "$SB_NS_A" bridge spoof)
udp_send a2 spoof-ip 10.77.0.31
expect_eq "a2 (host A) spoofing b1's address (host B) gets nothing out" 0 "$(sunk spoof-ip)"
expect_eq "a2 spoofing b1's address gets no TCP through" timeout \
	"$(in_ns $TOPO-a2 timeout 3 socat -T2 - TCP:$INET_HTTP:80,bind=10.77.0.31 </dev/null >/dev/null 2>&1 && echo connected || echo timeout)"
after=$(counter "$SB_NS_A" bridge spoof)
expect_eq "... dropped by host A's bridge table as spoofing" True \
	"$([ "${after:-0}" -gt "${before:-0}" ] && echo True || echo "False ($before -> $after)")"
in_ns $TOPO-a2 ip addr del 10.77.0.31/32 dev eth0
in_ns $TOPO-a2 ip link set eth0 address 52:54:00:00:0b:01
udp_send a2 spoof-mac
expect_eq "a2 spoofing b1's MAC (own address) gets nothing out" 0 "$(sunk spoof-mac)"
in_ns $TOPO-a2 ip addr add 10.77.0.31/32 dev eth0
udp_send a2 spoof-both 10.77.0.31
expect_eq "a2 spoofing b1's MAC and address gets nothing out" 0 "$(sunk spoof-both)"
in_ns $TOPO-a2 ip addr del 10.77.0.31/32 dev eth0
in_ns $TOPO-a2 ip link set eth0 address 52:54:00:00:0a:02
expect_match "b1 still reaches the internet after the spoofing" "hello from the internet" \
	"$(in_ns $TOPO-b1 curl -s -m 10 http://$INET_HTTP/)"

for g in a1 b1; do
	out=$(in_ns $TOPO-$g timeout 90 build/containment-check --json --expect open \
		--internet $INET_HTTP:80 --target $LAN_HOST --resolver 203.0.113.53 \
		--treat-as-public 203.0.113.0/24 2>&1); rc=$?
	sum=$(printf '%s' "$out" | python3 -c 'import json,sys
r = json.load(sys.stdin)
print(r["breaches"], r["failed_controls"], r["probes"], r["elapsed_ms"])
for x in r["results"]:
    if x["outcome"] in ("BREACH", "FAILED"): print("#  ", x)' 2>&1)
	echo "# containment-check in $g: breaches failed-controls probes ms = $sum"
	expect_eq "containment-check passes in $g (host ${g:0:1}): exit 0" 0 "$rc"
done

# Mutations: without a host's rules the checks above go red.
# Each host guards its own guests against the trunk: with host B's rules
# gone, host A still drops b1's answers to a1 (and the ARP that would
# precede them); only with both gone do a1 and b1 meet.
in_ns "$SB_NS_B" nft delete table bridge moat
expect_eq "host B's rules removed: host A alone still keeps a1 from b1" timeout \
	"$(tcp_probe $TOPO-a1 10.77.0.31 22)"
in_ns "$SB_NS_A" nft delete table bridge moat
# Each guest sends to the other's own MAC, as a hostile guest may without
# asking: over ARP the box's answer (its ARP proxy answers for every
# guest's address) and the other guest's would race.
in_ns $TOPO-a1 ip neigh replace 10.77.0.31 lladdr 52:54:00:00:0b:01 dev eth0 nud permanent
in_ns $TOPO-b1 ip neigh replace 10.77.0.21 lladdr 52:54:00:00:0a:01 dev eth0 nud permanent
expect_eq "mutation (both hosts' rules removed): a1 reaches b1" connected \
	"$(tcp_probe $TOPO-a1 10.77.0.31 22)"
in_ns $TOPO-a1 ip neigh del 10.77.0.31 dev eth0
in_ns $TOPO-b1 ip neigh del 10.77.0.21 dev eth0
host_rules "$SB_NS_B" "$TOPO_TMP/hostB.conf" apply >/dev/null
in_ns $TOPO-a2 ip addr add 10.77.0.31/32 dev eth0
udp_send a2 mut-spoof-ip 10.77.0.31
in_ns $TOPO-a2 ip addr del 10.77.0.31/32 dev eth0
expect_eq "mutation (host A's rules removed): the spoofed datagram gets out" 3 "$(sunk mut-spoof-ip)"
host_rules "$SB_NS_A" "$TOPO_TMP/hostA.conf" apply >/dev/null
expect_ok "host A: rules back and verified" host_rules "$SB_NS_A" "$TOPO_TMP/hostA.conf" verify
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
tap_done
