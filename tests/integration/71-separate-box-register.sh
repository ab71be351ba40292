#!/usr/bin/env bash
# Separate gateway box with registration, end to end: each KVM host runs
# provision with a box section (its own key pair, the box's pinned
# certificate, its pool) and registers its sandboxes with gatewayd on the
# box over TLS on a management address outside gateway.network; nothing is
# copied between machines.  Each host has its own trunk into the box, and
# the box accepts a sandbox's address only on its host's trunk.
# Topology: sbox_up_trunks in tests/harness/separate-box.sh.  Guests are
# namespaces on the hosts' bridges with the address and MAC provision
# gave them (kernel-mode guests are created with --no-autostart); one
# guest is started with real QEMU to show start waits for the box.
#
# Depends on the box side of the registration work (unprivileged parser,
# drop-ins carrying `trunk`, admission before "ok", no sandbox-side port):
# the spoofing, "ok means applied" and "guests cannot reach the endpoint"
# checks need it.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh

for b in build/gatewayd build/provision build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
sbox_up_trunks || { not_ok "separate-box topology with trunks comes up"; tap_done; exit 1; }
topo_services || { not_ok "test services start"; tap_done; exit 1; }
guest_assets || { not_ok "guest kernel and initramfs" "apt access needed once"; tap_done; exit 1; }
topo_bg "$NS_INET" upstream-dns python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --log "$TOPO_TMP/upstream.queries"
SINK=$TOPO_TMP/sink	# what a spoofing guest manages to send out
topo_bg "$NS_INET" sink socat -u UDP-RECV:9999,bind=$INET_HTTP OPEN:"$SINK",creat,append
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 0755 "$TOPO_TMP"	# QEMU (nobody) reads the imported kernel below

# Keys are made where they are used; only the fingerprints travel (typed
# into the box's moat.conf), and the box's certificate (public).
PKI=$TOPO_TMP/pki; mkdir -p "$PKI"	# sbox_mkcert, sbox_pin
for n in box hostA hostB stranger; do sbox_mkcert $n; done

C1=10.77.0.60	# the box's own sandbox: outside both hosts' pools
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "$SB_GW_IF";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  registration: { listen = "$SB_MGMT:7443"; cert = "$PKI/box.crt"; key = "$PKI/box.key"; };
};
hosts = (
  { name = "hostA"; key = "$(sbox_pin hostA)"; pool = "$SB_POOL_A"; trunk = "trA"; max_egress = "open"; },
  { name = "hostB"; key = "$(sbox_pin hostB)"; pool = "$SB_POOL_B"; trunk = "trB"; max_egress = "open"; }
);
# A sandbox of the box's own, on gateway.bridge (no trunk): no host may
# send as it.
sandboxes = (
  { name = "c1"; address = "$C1"; mac = "52:54:00:00:0c:01"; tap = "mt-c1"; egress = "open"; }
);
CONF
BOX_SB=$TOPO_TMP/sandboxes.d; mkdir -p "$BOX_SB"

# host_conf DIR CERT POOL TRUST -- a KVM host's moat.conf with its box
# section; TRUST is how it knows the box: its key's fingerprint typed in
# (pin) or its certificate file (ca).
host_conf() {
	mkdir -p "$1/sandboxes.d"
	cat >"$1/moat.conf" <<CONF
gateway: {
  uplink  = "$SB_TRUNK";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "$GW_ADDR" ]; };
  state_dir = "$1/state";
};
box: { address = "$SB_MGMT:7443"; $4; cert = "$PKI/$2.crt";
       key = "$PKI/$2.key"; pool = "$3"; };
CONF
}
HA=$TOPO_TMP/hostA; HB=$TOPO_TMP/hostB
host_conf "$HA" hostA $SB_POOL_A "pin = \"$(sbox_pin box)\""
host_conf "$HB" hostB $SB_POOL_B "ca = \"$PKI/box.crt\""
# pvh HOSTNS DIR ARGS... -- provision on a KVM host.
pvh() { local ns=$1 d=$2; shift 2; in_ns "$ns" env -i PATH="$PATH" build/provision \
	-c "$d/moat.conf" --run-dir "$d/run" "$@"; }
pvA() { pvh "$SB_NS_A" "$HA" "$@"; }
pvB() { pvh "$SB_NS_B" "$HB" "$@"; }
kargs() { echo --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" --user nobody \
	--accel tcg --memory 128 --no-autostart --egress; }
# field DIR NAME KEY -- a value from provision's drop-in on a host.
field() { sed -n "s/^$3 = \"\(.*\)\";/\1/p" "$1/sandboxes.d/$2.conf" 2>/dev/null; }
# guest HOSTNS DIR NAME -- a namespace guest with provision's address,
# MAC and tap name (a veth standing in for QEMU's tap).
guest() {
	sbox_guest "$1" "$3" "$(field "$2" "$3" address)" "$(field "$2" "$3" mac)" \
		"$(field "$2" "$3" tap)"
}
# rules HOSTNS DIR -- the KVM host's own layer-2 rules, re-applied after
# its sandboxes change (nft-rules --host-only; its sets are constant).
rules() { in_ns "$1" build/nft-rules -c "$2/moat.conf" --host-only --trunk $SB_TRUNK apply; }
# leftovers DIR NAME -- what a failed create could have left on a host.
leftovers() { ls -d "$1/sandboxes.d/$2.conf" "$1/state/guests/$2" 2>/dev/null; }
reg() {	# reg HOSTNS CERT REQUEST... -- gatewayd register by hand
	local ns=$1 who=$2; shift 2
	in_ns "$ns" env -i timeout 40 build/gatewayd register --box $SB_MGMT:7443 \
		--ca "$PKI/box.crt" --cert "$PKI/$who.crt" --key "$PKI/$who.key" "$@" 2>&1
}
web() { in_ns $TOPO-$1 curl -s -m 5 http://$INET_HTTP/ 2>/dev/null; }
web_ok() { web "$1" | grep -q "hello from the internet"; }
web_refused() { ! web_ok "$1"; }
counter() { in_ns "$NS_GW" nft list counter inet moat "$1" | awk '/packets/ {print $2}'; }
sunk() { grep -c "^$1\$" "$SINK" 2>/dev/null || :; }
udp_send() {	# udp_send GUEST TAG SOURCE -- three datagrams to the sink
	in_ns "$TOPO-$1" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[2], 0))
for _ in range(3): s.sendto(sys.argv[1].encode() + b"\n", ("203.0.113.10", 9999))' "$2" "$3"
}
spoof_settled() { [ "$(sunk "$1")" -ge 3 ] || [ "$(counter spoof)" -ge $(($2 + 3)) ]; }
cc() {	# cc GUEST -- containment-check's exit status inside a guest namespace
	in_ns $TOPO-$1 timeout 120 build/containment-check --json --expect open \
		--internet $INET_HTTP:80 --target $LAN_HOST --resolver 203.0.113.53 \
		--treat-as-public 203.0.113.0/24 >"$TOPO_TMP/cc-$1.json" 2>&1
}

expect_ok "box config with registration on the management address checks" \
	in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"
gw_start; expect_eq "gatewayd starts on the gateway box" 0 $?
topo_wait_port "$NS_GW" $SB_MGMT 7443

# --- two hosts register sandboxes; egress follows ---------------------------
t0=$(now_ms); out=$(pvA create a1 $(kargs) open 2>&1); t1=$(now_ms)
echo "# provision create a1 (kernel mode, registered at the box): $((t1 - t0)) ms"
expect_match "host A: provision create a1 registers it with the box" "created a1" "$out"
A1=$(field "$HA" a1 address)
expect_match "a1's address is in host A's pool" "^10\.77\.0\.(1[6-9]|2[0-9]|3[01])$" "$A1"
expect_eq "the box wrote a1's drop-in" True \
	"$([ -f "$BOX_SB/a1.conf" ] && echo True || echo False)"
expect_match "... for trunk trA (box side)" 'trunk = "trA"' "$(cat "$BOX_SB/a1.conf" 2>/dev/null)"
guest "$SB_NS_A" "$HA" a1
wait_for 30 web_ok a1
expect_match "a1 (host A) reaches the internet through the box" "hello from the internet" "$(web a1)"
out=$(pvA create a2 $(kargs) open 2>&1)
expect_match "host A: provision create a2" "created a2" "$out"
guest "$SB_NS_A" "$HA" a2
out=$(pvB create b1 $(kargs) open 2>&1)
expect_match "host B: provision create b1" "created b1" "$out"
B1=$(field "$HB" b1 address)
expect_match "b1's address is in host B's pool" "^10\.77\.0\.(3[2-9]|4[0-7])$" "$B1"
guest "$SB_NS_B" "$HB" b1
wait_for 30 web_ok b1
expect_match "b1 (host B) reaches the internet" "hello from the internet" "$(web b1)"
expect_ok "host A: nft-rules --host-only apply" rules "$SB_NS_A" "$HA"
expect_ok "host B: nft-rules --host-only apply" rules "$SB_NS_B" "$HB"
wait_for 30 web_ok a1
expect_eq "b1 resolves through dnsd on the box" "$INET_HTTP" \
	"$(in_ns $TOPO-b1 dig +short +time=8 +tries=1 @$GW_ADDR open.test A)"
in_ns $TOPO-a1 ip route add "$B1"/32 via $GW_ADDR
expect_eq "a1 cannot reach b1 through the box (another host's guest)" unreachable \
	"$(tcp_probe $TOPO-a1 "$B1" 22)"
in_ns $TOPO-a1 ip route del "$B1"/32 via $GW_ADDR
expect_eq "a1: LAN host refused" unreachable "$(tcp_probe $TOPO-a1 $LAN_HOST 22)"
# Every trunk is the sandbox side: the box itself only on DNS and the proxy.
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-box"
expect_eq "b1 (on trunk trB): the proxy port is open" connected "$(tcp_probe $TOPO-b1 $GW_ADDR 3128)"
expect_eq "b1: the box's ssh refused (admin-prohibited)" unreachable "$(tcp_probe $TOPO-b1 $GW_ADDR 22)"
expect_eq "b1: the box's uplink address refused" unreachable "$(tcp_probe $TOPO-b1 203.0.113.1 22)"
# Nothing from outside opens a connection to a guest on a trunk.
topo_banner "$TOPO-b1" "$B1" 22 "SSH-2.0-guest-b1"
in_ns "$NS_INET" ip route add 10.77.0.0/24 via 203.0.113.1
i0=$(counter inbound)
expect_eq "the internet cannot open a connection to b1 on its trunk" timeout \
	"$(tcp_probe "$NS_INET" "$B1" 22)"
expect_eq "... dropped by the box as inbound" True \
	"$([ "$(counter inbound)" -gt "$i0" ] && echo True || echo "False ($i0 -> $(counter inbound))")"
in_ns "$NS_INET" ip route del 10.77.0.0/24 via 203.0.113.1
expect_eq "a1: the box's management address refused" unreachable \
	"$(tcp_probe $TOPO-a1 198.51.100.1 22)"
expect_eq "a1 cannot reach the registration endpoint (box side)" unreachable \
	"$(tcp_probe $TOPO-a1 $SB_MGMT 7443)"

# --- refusals: outside the pool, unknown key; nothing is left behind -------
cp -r "$HA" "$TOPO_TMP/hostA-evil"; rm -rf "$TOPO_TMP/hostA-evil/state" "$TOPO_TMP/hostA-evil/sandboxes.d"/*
sed -i "s|pool = \"$SB_POOL_A\"|pool = \"$SB_POOL_B\"|" "$TOPO_TMP/hostA-evil/moat.conf"
out=$(pvh "$SB_NS_A" "$TOPO_TMP/hostA-evil" create evil $(kargs) open 2>&1); rc=$?
expect_eq "host A creating in host B's pool: provision create fails" 1 "$rc"
expect_match "... printing the box's reason" "refused.*outside this host's pool" "$out"
expect_eq "... nothing left on the host" "" "$(leftovers "$TOPO_TMP/hostA-evil" evil)"
expect_eq "... and nothing at the box" False \
	"$([ -f "$BOX_SB/evil.conf" ] && echo True || echo False)"
expect_match "... the refusal is audited" \
	'"event":"registration-refused".*"host":"hostA".*outside' "$(cat "$GW_AUDIT")"
cp -r "$HA" "$TOPO_TMP/stranger"; rm -rf "$TOPO_TMP/stranger/state" "$TOPO_TMP/stranger/sandboxes.d"/*
sed -i "s|/hostA\.|/stranger.|g" "$TOPO_TMP/stranger/moat.conf"
out=$(pvh "$SB_NS_A" "$TOPO_TMP/stranger" create s1 $(kargs) open 2>&1); rc=$?
expect_eq "a host with an unknown key: provision create fails" 1 "$rc"
expect_match "... printing the box's reason" "unknown host key" "$out"
expect_eq "... nothing left on the host" "" "$(leftovers "$TOPO_TMP/stranger" s1)"
expect_eq "... and nothing at the box" False \
	"$([ -f "$BOX_SB/s1.conf" ] && echo True || echo False)"
# A box that is not the pinned one (host A's pin names another key).
cp -r "$HA" "$TOPO_TMP/wrongpin"; rm -rf "$TOPO_TMP/wrongpin/state" "$TOPO_TMP/wrongpin/sandboxes.d"/*
sed -i "s|$(sbox_pin box)|$(sbox_pin stranger)|" "$TOPO_TMP/wrongpin/moat.conf"
n0=$(grep -c '"event":"registration' "$GW_AUDIT")
out=$(pvh "$SB_NS_A" "$TOPO_TMP/wrongpin" create w1 $(kargs) open 2>&1); rc=$?
expect_eq "a box whose key is not the pinned one: provision create fails" 1 "$rc"
expect_match "... saying so" "not the one pinned" "$out"
expect_eq "... nothing left on the host" "" "$(leftovers "$TOPO_TMP/wrongpin" w1)"
# (registration events only: a refusal logged meanwhile is not a request)
expect_eq "... and no request reached the box" "$n0" "$(grep -c '"event":"registration' "$GW_AUDIT")"
expect_match "host B removing host A's a1 by hand is refused" "^error not this host's sandbox" \
	"$(reg "$SB_NS_B" hostB remove a1)"

# --- a compromised host A sends as host B's guest over its own trunk -------
# (its own rules would stop its guest; a compromised host has none)
in_ns "$SB_NS_A" nft delete table bridge moat
udp_send a1 genuine-a1 "$A1"
wait_for 30 eval '[ "$(sunk genuine-a1)" -ge 3 ]'
expect_eq "a1's own datagrams reach the internet" 3 "$(sunk genuine-a1)"
in_ns $TOPO-a1 ip addr add "$B1"/32 dev eth0
s0=$(counter spoof)
udp_send a1 spoof-b1 "$B1"
wait_for 30 spoof_settled spoof-b1 "$s0"
expect_eq "a1 sending with b1's address over host A's trunk gets nothing out" 0 "$(sunk spoof-b1)"
expect_eq "... counted as spoofing at the box" True \
	"$([ "$(counter spoof)" -ge $((s0 + 3)) ] && echo True || echo "False ($s0 -> $(counter spoof))")"
in_ns $TOPO-a1 ip addr add "$C1"/32 dev eth0
s0=$(counter spoof)
udp_send a1 spoof-c1 "$C1"
wait_for 30 spoof_settled spoof-c1 "$s0"
expect_eq "a1 sending as the box's own bridge sandbox c1 over host A's trunk gets nothing out" \
	0 "$(sunk spoof-c1)"
expect_eq "... counted as spoofing at the box" True \
	"$([ "$(counter spoof)" -ge $((s0 + 3)) ] && echo True || echo "False ($s0 -> $(counter spoof))")"
in_ns $TOPO-a1 ip addr del "$C1"/32 dev eth0
# Mutation: without the box's trunk rule the same datagrams get out.
# (gatewayd owns its tables while it runs; stopped, it leaves them.)
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
h=$(in_ns "$NS_GW" nft -a list chain inet moat raw_pre | awk '/@sb_trunk/ {print $NF}')
in_ns "$NS_GW" nft delete rule inet moat raw_pre handle "${h:-0}"
udp_send a1 mut-spoof "$B1"
wait_for 30 eval '[ "$(sunk mut-spoof)" -ge 3 ]'
expect_eq "mutation (the box's trunk rule removed): a1 as b1 gets out" 3 "$(sunk mut-spoof)"
gw_start >/dev/null; topo_wait_port "$NS_GW" $SB_MGMT 7443
in_ns $TOPO-a1 ip addr del "$B1"/32 dev eth0
rules "$SB_NS_A" "$HA"

# --- containment-check on both hosts ----------------------------------------
for g in a1 b1; do
	cc $g; rc=$?
	expect_eq "containment-check passes in $g: exit 0" 0 "$rc"
	[ "$rc" = 0 ] || sed 's/^/#   /' "$TOPO_TMP/cc-$g.json" | head -20
done

# --- an allowlist travels with the registration ------------------------------
out=$(pvB create b2 $(kargs) allowlist --allow open.test 2>&1)
expect_match "host B: provision create b2 with an allowlist" "created b2" "$out"
expect_match "the box's drop-in for b2 has its allowlist" '^allow = .*"open\.test"' \
	"$(cat "$BOX_SB/b2.conf" 2>/dev/null)"
expect_match "... and its egress" '^egress = "allowlist";' "$(cat "$BOX_SB/b2.conf" 2>/dev/null)"
expect_ok "host B: provision destroy b2" pvB destroy b2
expect_fail "... and the box forgot it" test -e "$BOX_SB/b2.conf"

# --- start waits for the box; the box restarts while hosts run -------------
out=$(pvA create a3 $(kargs) none 2>&1)
expect_match "host A: provision create a3 (to be started with QEMU)" "created a3" "$out"
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
expect_match "box's gatewayd stopped: a1 still reaches the internet (policy in the kernel)" \
	"hello from the internet" "$(web a1)"
out=$(pvA start a3 2>&1); rc=$?
expect_eq "box down: provision start a3 fails" 1 "$rc"
expect_match "... saying the box did not take it" "not started: the gateway box" "$out"
expect_eq "... and no QEMU runs" "" "$(cat "$HA/run/guests/a3/qemu.pid" 2>/dev/null)"
# Host A destroys a2 while the box cannot hear it: the box keeps it.
ip -n "$SB_NS_A" link del "$(field "$HA" a2 tap)"	# its QEMU is gone
out=$(pvA destroy a2 2>&1); rc=$?
expect_eq "box down: provision destroy a2 removes it here but exits 1" 1 "$rc"
expect_match "... saying sync-box will settle it" "sync-box" "$out"
gw_start; expect_eq "box's gatewayd starts again" 0 $?
topo_wait_port "$NS_GW" $SB_MGMT 7443
for g in a1 b1; do
	expect_match "after the box restart: $g reaches the internet, no host action" \
		"hello from the internet" "$(web $g)"
done
expect_match "a2 is still known to the box (destroyed while it was down)" \
	"^a2 " "$(reg "$SB_NS_A" hostA list)"
out=$(pvA start a3 2>&1); rc=$?
expect_eq "box up: provision start a3 exits 0" 0 "$rc"
expect_match "... QEMU started after the box's ok" "started a3" "$out"
expect_match "... the box lists a3" "^a3 " "$(reg "$SB_NS_A" hostA list)"
pvA stop --force a3 >/dev/null 2>&1

# --- host A comes back and resynchronises -----------------------------------
# The box lost a1 meanwhile (removed by hand); host A still has a1 and a3.
t0=$(now_ms)
expect_eq "the box forgets a1 (by hand)" ok "$(reg "$SB_NS_A" hostA remove a1)"
echo "# gatewayd register remove (one TLS request): $(($(now_ms) - t0)) ms"
wait_for 30 web_refused a1
expect_eq "... a1 gets nothing out" "" "$(web a1)"
t0=$(now_ms); out=$(pvA sync-box 2>&1); rc=$?; t1=$(now_ms)
echo "# provision sync-box (2 sandboxes, one connection): $((t1 - t0)) ms"
expect_eq "host A: provision sync-box exits 0" 0 "$rc"
expect_match "... says what it registered" "2 of 2 sandbox" "$out"
expect_eq "... the box lists exactly host A's sandboxes" "a1 a3" \
	"$(reg "$SB_NS_A" hostA list | grep -v '^ok$' | cut -d' ' -f1 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... a2 is gone at the box" False \
	"$([ -f "$BOX_SB/a2.conf" ] && echo True || echo False)"
wait_for 30 web_ok a1
expect_match "... a1 is back" "hello from the internet" "$(web a1)"
expect_match "... host B's b1 is untouched" "^b1 " "$(reg "$SB_NS_B" hostB list)"

ip -n "$SB_NS_A" link del "$(field "$HA" a1 tap)"	# its QEMU is gone
out=$(pvA destroy a1 2>&1); rc=$?
expect_eq "host A: provision destroy a1 exits 0" 0 "$rc"
expect_eq "... removed at the box" False \
	"$([ -f "$BOX_SB/a1.conf" ] && echo True || echo False)"
in_map() { in_ns "$NS_GW" nft list map inet moat sandboxes | grep -q "$1 :"; }
wait_for 30 eval '! in_map "$A1"'
expect_eq "... and from the box's policy" False "$(in_map "$A1" && echo True || echo False)"
expect_match "b1 still reaches the internet" "hello from the internet" "$(web b1)"

# --- mutation: a private range opened at the box -----------------------------
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
in_ns "$NS_GW" nft insert rule inet moat guest_fwd ip daddr 192.168.77.0/24 accept
cc b1; rc=$?
expect_eq "mutation (a private range opened at the box): containment-check in b1 fails" \
	True "$([ "$rc" != 0 ] && echo True || echo "False (exit $rc)")"
tap_done
