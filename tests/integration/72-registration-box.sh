#!/usr/bin/env bash
# The gateway box's side of registration: the registration process runs
# as moat-reg with no capabilities under seccomp; the box listens on its
# management network and a guest cannot reach that port; the parent
# admits each claim against the host's limits (pool, max_egress, allowed
# secrets, no name/address/MAC of another sandbox), answers ok only once
# the kernel has the change, audits and counts refusals; ctl hosts shows
# each host; a restarted box rebuilds the policy from the drop-ins.
#
# Topology: tests/harness/separate-box.sh (the box, a switch, KVM hosts A
# and B) plus a management bridge in the box's namespace that both hosts
# reach by a veth of their own, off the sandbox network.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh

for b in build/gatewayd build/nft-rules; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
sbox_up || { not_ok "separate-box topology comes up"; tap_done; exit 1; }
sbox_guest "$SB_NS_A" a1 10.77.0.21 52:54:00:00:0a:01 mt-a1
topo_services || { not_ok "test services start"; tap_done; exit 1; }
# The management network: 192.168.200.0/24, the box at .1.
MGMT=192.168.200.1
ip -n "$NS_GW" link add mgmt type bridge && ip -n "$NS_GW" link set mgmt up
ip -n "$NS_GW" addr add $MGMT/24 dev mgmt
topo_link "$NS_GW" mg-a "$SB_NS_A" mgmt0 && ip -n "$NS_GW" link set mg-a master mgmt
topo_link "$NS_GW" mg-b "$SB_NS_B" mgmt0 && ip -n "$NS_GW" link set mg-b master mgmt
ip -n "$SB_NS_A" addr add 192.168.200.2/24 dev mgmt0
ip -n "$SB_NS_B" addr add 192.168.200.3/24 dev mgmt0

PKI=$TOPO_TMP/pki; mkdir -p "$PKI"	# sbox_mkcert, sbox_pin
for n in box hostA hostB hostC stranger; do sbox_mkcert $n; done
install -m 0600 /dev/null "$TOPO_TMP/openai"; echo sk-test-value >"$TOPO_TMP/openai"

conf() {	# conf LISTEN -- the box's config
	cat <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "$SB_GW_IF";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  registration: { listen = "$1"; cert = "$PKI/box.crt"; key = "$PKI/box.key"; };
};
secrets = (
  { name = "openai"; file = "$TOPO_TMP/openai"; hosts = [ "api.openai.com" ];
    header = "Authorization"; placeholder = "moat-openai-PLACEHOLDER"; }
);
hosts = (
  { name = "hostA"; key = "$(sbox_pin hostA)"; pool = "10.77.0.16/28"; trunk = "$SB_GW_IF";
    max_egress = "open"; secrets = [ "openai" ]; },
  { name = "hostB"; key = "$(sbox_pin hostB)"; pool = "10.77.0.32/28"; trunk = "$SB_GW_IF"; },
  { name = "hostC"; key = "$(sbox_pin hostC)"; pool = "10.77.0.48/28"; trunk = "$SB_GW_IF"; }
);
sandboxes = (
  { name = "st"; mac = "52:54:00:00:0f:01"; address = "10.77.0.30"; tap = "st0";
    egress = "none"; }
);
CONF
}

conf "10.77.0.1:7443" >"$TOPO_TMP/bad.conf"
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)
expect_match "a listen address inside gateway.network is refused with file:line" \
	"bad.conf:8: gateway.registration: listen: expected an address on the management network" "$out"

conf "$MGMT:7443" >"$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"

reg() {	# reg HOSTNS CERT REQUEST... -- the box's answers
	local ns=$1 who=$2; shift 2
	in_ns "$ns" env -i timeout 40 build/gatewayd register --box $MGMT:7443 \
		--ca "$PKI/box.crt" --cert "$PKI/$who.crt" --key "$PKI/$who.key" "$@" 2>&1
}
web() { in_ns $TOPO-$1 curl -s -m 5 http://$INET_HTTP/ 2>/dev/null; }
dropin() { [ -f "$TOPO_TMP/sandboxes.d/$1.conf" ] && echo yes || echo no; }
audit_has() { grep -c -- "$1" "$GW_AUDIT" 2>/dev/null; }

gw_start; expect_eq "gatewayd starts on the box" 0 $?
topo_wait_port "$NS_GW" $MGMT 7443

# --- the registration process -----------------------------------------
reg_up() { [ -n "$(gw_child_pid register)" ]; }
wait_for 30 reg_up
pid=$(gw_child_pid register)
st=/proc/$pid/status
dropped() { grep -Eq 'Seccomp:\s+2' $st; }
wait_for 30 dropped	# let it finish dropping privileges
expect_eq "the registration process runs as moat-reg (every uid)" \
	"$(id -u moat-reg) $(id -u moat-reg) $(id -u moat-reg) $(id -u moat-reg)" \
	"$(awk '/^Uid:/ {print $2, $3, $4, $5}' $st)"
expect_eq "... with no capabilities (effective, permitted, bounding kept empty of use)" \
	"0000000000000000 0000000000000000" "$(awk '/^CapEff:|^CapPrm:/ {printf "%s ", $2}' $st | sed 's/ $//')"
expect_eq "... under seccomp (filter mode) with no_new_privs" "2 1" \
	"$(awk '/^Seccomp:/ {s=$2} /^NoNewPrivs:/ {n=$2} END {print s, n}' $st)"
expect_eq "... holding stdio, the listening socket, its IPC end and its event loop, nothing else" \
	"0 1 2 3 4 5 anon_inode:[eventpoll]" \
	"$(ls /proc/$pid/fd | sort -n | tr '\n' ' ')$(readlink /proc/$pid/fd/5)"

# --- a guest cannot reach the endpoint ---------------------------------
expect_eq "host A registers a1 (open: host A's max_egress)" ok \
	"$(reg "$SB_NS_A" hostA register a1 10.77.0.21 52:54:00:00:0a:01 open)"
expect_match "right after ok, a1's address is in the box's kernel policy" "10\.77\.0\.21" \
	"$(in_ns "$NS_GW" nft list table inet moat)"
expect_match "right after ok, a1 reaches the internet (no waiting)" \
	"hello from the internet" "$(web a1)"
expect_eq "the drop-in carries the host's trunk" 'trunk = "sb0";' \
	"$(grep '^trunk' "$TOPO_TMP/sandboxes.d/a1.conf")"
expect_eq "a guest cannot connect to the registration port on the management address" \
	unreachable "$(tcp_probe $TOPO-a1 $MGMT 7443)"
expect_eq "... nor on the gateway's sandbox-side address" \
	unreachable "$(tcp_probe $TOPO-a1 $GW_ADDR 7443)"
# ok means applied: with a drop-in beside it that breaks the config, the
# box cannot apply a3, so it must say so and leave nothing behind.
echo 'name = "broken"; mac = ' >"$TOPO_TMP/sandboxes.d/broken.conf"
expect_match "a registration the box cannot apply is answered with an error, not ok" \
	"^error the box could not apply it: .*broken.conf" \
	"$(reg "$SB_NS_A" hostA register a3 10.77.0.23 52:54:00:00:0a:03 none)"
expect_eq "... and its drop-in is not left behind" no "$(dropin a3)"
rm -f "$TOPO_TMP/sandboxes.d/broken.conf"
expect_eq "host B reaches it over the management network" ok \
	"$(reg "$SB_NS_B" hostB list)"

# A peer that trickles a handshake must not hold the endpoint: it gets
# 5 s for the handshake, however it paces, and others are served meanwhile.
topo_bg "$SB_NS_A" trickle python3 -c "
import socket, time
s = socket.create_connection(('$MGMT', 7443))
for b in b'\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' * 3:
    s.send(bytes([b])); time.sleep(2)
"
wait_for 20 sh -c "ip netns exec '$NS_GW' ss -Htn state established '( sport = :7443 )' | grep -q ."
t0=$(date +%s)
expect_eq "while a peer trickles its handshake, host B still gets its answer" ok \
	"$(reg "$SB_NS_B" hostB list)"
expect_eq "... at once, not after the trickler's handshake bound (took $(( $(date +%s) - t0 )) s, limit 25)" yes \
	"$([ $(( $(date +%s) - t0 )) -le 25 ] && echo yes || echo no)"

# --- admission -----------------------------------------------------------
expect_match "host B asking for open (its max_egress is allowlist) is refused" \
	'^error egress "open" is wider than this host.s max_egress "allowlist"' \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0b:01 open)"
expect_eq "... no drop-in" no "$(dropin b1)"
expect_match "... audited with host and reason" \
	'"event":"registration-refused".*"host":"hostB".*"reason":"egress \\"open\\" is wider' \
	"$(cat "$GW_AUDIT")"
expect_match "host B binding a secret it is not allowed is refused" \
	'^error secret "openai" is not one this host.s sandboxes may use' \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0b:01 allowlist allow=example.com secrets=openai)"
expect_eq "... no drop-in" no "$(dropin b1)"
expect_eq "host B without the secret is admitted" ok \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0b:01 allowlist allow=example.com)"
expect_eq "host A binding its allowed secret is admitted" ok \
	"$(reg "$SB_NS_A" hostA register a2 10.77.0.22 52:54:00:00:0a:02 allowlist allow=api.openai.com secrets=openai)"
expect_eq "... the drop-in names it" 'secrets = [ "openai" ];' \
	"$(grep '^secrets' "$TOPO_TMP/sandboxes.d/a2.conf")"
expect_eq "... and holds no secret value" 0 "$(grep -c sk-test-value "$TOPO_TMP/sandboxes.d/a2.conf")"
expect_match "host A taking the static sandbox's name is refused" \
	"^error name used by another sandbox" \
	"$(reg "$SB_NS_A" hostA register st 10.77.0.23 52:54:00:00:0a:03 none)"
expect_match "host A taking the static sandbox's address is refused" \
	"^error address used by another sandbox" \
	"$(reg "$SB_NS_A" hostA register x1 10.77.0.30 52:54:00:00:0a:03 none)"
expect_match "host A taking the static sandbox's MAC is refused" \
	"^error mac used by another sandbox" \
	"$(reg "$SB_NS_A" hostA register x2 10.77.0.29 52:54:00:00:0f:01 none)"
expect_match "a multicast MAC is refused" "^error mac: expected a unicast address" \
	"$(reg "$SB_NS_A" hostA register x3 10.77.0.28 53:54:00:00:0a:03 none)"
expect_match "host B removing host A's a1 is refused" "^error not this host's sandbox" \
	"$(reg "$SB_NS_B" hostB remove a1)"
expect_match "host B removing the static sandbox is refused" "^error no such sandbox" \
	"$(reg "$SB_NS_B" hostB remove st)"
printf '# registered by host hostB\n' >"$TOPO_TMP/outside.conf"
expect_match "a name that is a path gets nowhere" "^error no such sandbox" \
	"$(reg "$SB_NS_B" hostB remove ../outside)"
expect_eq "... the file outside sandboxes.d is still there" yes \
	"$([ -f "$TOPO_TMP/outside.conf" ] && echo yes || echo no)"
expect_eq "host B's sync leaves host A's sandboxes alone" "ok yes yes" \
	"$(reg "$SB_NS_B" hostB sync - | tr '\n' ' ')$(dropin a1) $(dropin a2)"
expect_eq "... and dropped its own b1" no "$(dropin b1)"
long=$(head -c 1100 /dev/zero | tr '\0' a)
expect_match "a line over the limit is refused, not served" "^error request too long" \
	"$(printf 'register %s 10.77.0.24 52:54:00:00:0a:04 none\nquit\n' "$long" |
		in_ns "$SB_NS_A" env -i timeout 30 openssl s_client -connect $MGMT:7443 \
		-CAfile "$PKI/box.crt" -cert "$PKI/hostA.crt" -key "$PKI/hostA.key" \
		-quiet -ign_eof 2>/dev/null)"
expect_eq "requests sent at once are answered in order, each once" "ok ok error unknown request ok" \
	"$(printf 'list\nlist\nbogus\nlist\nquit\nlist\n' |
		in_ns "$SB_NS_B" env -i timeout 30 openssl s_client -connect $MGMT:7443 \
		-CAfile "$PKI/box.crt" -cert "$PKI/hostB.crt" -key "$PKI/hostB.key" \
		-quiet -ign_eof 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"

expect_match "a host with an unknown key is refused" "^error unknown host key" \
	"$(reg "$SB_NS_A" stranger register s1 10.77.0.24 52:54:00:00:0c:01 none)"
expect_eq "... and nothing was written" no "$(dropin s1)"

# --- ctl hosts -------------------------------------------------------------
json=$(gw_ctl hosts --json)
hosts() { python3 -c "import json,sys
h={x['name']: x for x in json.loads(sys.argv[1])}
print(*($1,))" "$json"; }
expect_eq "ctl hosts --json: host A has 2 sandboxes and 5 refusals" "2 5" \
	"$(hosts "h['hostA']['sandboxes'], h['hostA']['refusals']")"
expect_eq "... host B has 0 sandboxes and 5 refusals" "0 5" \
	"$(hosts "h['hostB']['sandboxes'], h['hostB']['refusals']")"
expect_eq "... host A and B were seen, host C never" "True True None" \
	"$(hosts "h['hostA']['last_seen'] is not None, h['hostB']['last_seen'] is not None, h['hostC']['last_seen']")"
expect_eq "... each with its pool, trunk and a short key fingerprint" \
	"10.77.0.16/28 sb0 $(sbox_pin hostA | cut -c1-23)" \
	"$(hosts "h['hostA']['pool'], h['hostA']['trunk'], h['hostA']['key']")"
text=$(gw_ctl hosts)
expect_match "ctl hosts (text) shows host C as never seen" "^hostC .* never +0 +0$" "$text"
expect_match "... and the one connection with an unknown key" "^unknown keys refused: 1$" "$text"

# --- restarts --------------------------------------------------------------
kill -KILL "$pid"
new_reg() { local p; p=$(gw_child_pid register); [ -n "$p" ] && [ "$p" != "$pid" ]; }
wait_for 30 new_reg
expect_eq "the registration process killed, the parent starts another that answers" \
	"a1 10.77.0.21 a2 10.77.0.22 ok" "$(reg "$SB_NS_A" hostA list | tr '\n' ' ' | sed 's/ $//')"
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null
in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" flush
expect_eq "with gatewayd stopped and the policy flushed, a1 gets nothing out" "" "$(web a1)"
gw_start; expect_eq "gatewayd starts again with the registered drop-ins" 0 $?
expect_match "... and a1 reaches the internet again (policy from the drop-ins)" \
	"hello from the internet" "$(web a1)"
expect_match "... ctl sandboxes lists a1 and a2" "a1 .*a2 " "$(gw_ctl sandboxes | tr '\n' ' ')"
topo_wait_port "$NS_GW" $MGMT 7443
expect_eq "host A resyncs with only a1" ok "$(reg "$SB_NS_A" hostA sync a1)"
expect_eq "... a2's drop-in is gone and a1's stays" "no yes" "$(dropin a2) $(dropin a1)"
expect_eq "... and a1 still reaches the internet" "hello from the internet" \
	"$(web a1 | grep -o 'hello from the internet')"
expect_eq "ctl hosts after the restart: host A has 1 sandbox" 1 \
	"$(json=$(gw_ctl hosts --json); hosts "h['hostA']['sandboxes']")"

# --- a flood of idle connections -------------------------------------------
# One address on the management network opens TCP connections and never
# starts a handshake, keeping 60 open for 20 s, while hosts A and B
# register.  The box turns away all but a few from that address at once,
# drops those at the handshake deadline (5 s), and serves the hosts.
ip -n "$SB_NS_A" addr add 192.168.200.9/24 dev mgmt0
cat >"$TOPO_TMP/idle-flood.py" <<'PYEOF'
import selectors, socket, sys, time
dst, src = (sys.argv[1], 7443), sys.argv[2]
dur, want = float(sys.argv[3]), int(sys.argv[4])
sel, born, life, opened = selectors.DefaultSelector(), {}, [], 0
end = time.monotonic() + dur
while time.monotonic() < end:
    while len(born) < want and opened < 5000:
        s = socket.socket()
        s.bind((src, 0))
        s.setblocking(False)
        try:
            s.connect(dst)
        except BlockingIOError:
            pass
        born[s] = time.monotonic()
        opened += 1
        sel.register(s, selectors.EVENT_READ)
    for key, _ in sel.select(0.2):
        s = key.fileobj
        try:
            gone = s.recv(100) == b""
        except OSError:
            gone = True
        if gone:
            life.append(time.monotonic() - born.pop(s))
            sel.unregister(s)
            s.close()
print(opened, len(life), round(max(life) if life else 0, 1))
PYEOF
in_ns "$SB_NS_A" python3 "$TOPO_TMP/idle-flood.py" $MGMT 192.168.200.9 20 60 \
	>"$TOPO_TMP/flood.out" 2>&1 &
flood=$!
flooding() { in_ns "$NS_GW" ss -Htn state established '( sport = :7443 )' dst 192.168.200.9 | grep -q .; }
wait_for 20 flooding || not_ok "the flood's connections reach the box"
sleep 1
timed_reg() {	# timed_reg OUT HOSTNS CERT REQUEST... -- answer and seconds taken
	local out=$1 t0=$EPOCHREALTIME; shift
	reg "$@" >"$out.answer"
	echo "$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000000 ))" >"$out.secs"
}
timed_reg "$TOPO_TMP/fa" "$SB_NS_A" hostA register a5 10.77.0.25 52:54:00:00:0a:05 none &
ra=$!
timed_reg "$TOPO_TMP/fb" "$SB_NS_B" hostB register b2 10.77.0.34 52:54:00:00:0b:02 none &
rb=$!
wait $ra $rb
expect_eq "during the flood, host A registers a5 and host B registers b2" "ok ok" \
	"$(cat "$TOPO_TMP/fa.answer") $(cat "$TOPO_TMP/fb.answer")"
expect_eq "... each within 10 s (took $(cat "$TOPO_TMP/fa.secs") and $(cat "$TOPO_TMP/fb.secs") s)" yes \
	"$([ "$(cat "$TOPO_TMP/fa.secs")" -le 10 ] && [ "$(cat "$TOPO_TMP/fb.secs")" -le 10 ] && echo yes || echo no)"
# The registration process's descriptors beyond its own six (stdio,
# listener, IPC, epoll): the flood's connections it holds.
held=$(( $(ls /proc/$(gw_child_pid register)/fd | wc -l) - 6 ))
expect_eq "... the flooding address holds at most 8 connections (held $held)" yes \
	"$([ "$held" -le 8 ] && echo yes || echo no)"
wait $flood
read -r opened closed longest <"$TOPO_TMP/flood.out"
expect_eq "... no idle connection lived past the handshake deadline (longest ${longest:-?} s of $closed closed, $opened opened)" yes \
	"$(python3 -c "import sys; print('yes' if 0 < float(sys.argv[1]) <= 8 and int(sys.argv[2]) > 60 else 'no')" "${longest:-0}" "${closed:-0}")"
expect_eq "... and the box still answers afterwards" \
	"a1 10.77.0.21 a5 10.77.0.25 ok" "$(reg "$SB_NS_A" hostA list | tr '\n' ' ' | sed 's/ $//')"

kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
tap_done
