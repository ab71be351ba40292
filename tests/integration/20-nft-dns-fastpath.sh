#!/usr/bin/env bash
# The guests' DNS fast path: a guest's UDP query to the gateway's resolver
# is decided by the first rule it meets in the bridge's prerouting (the
# anti-spoofing lookup), in raw_pre (after loopback) and in input, and
# dnsd's answer by the first rule of output, as the kernel's trace shows;
# and the fast path opens nothing else.  A guest's udp/53 to any other
# address (another guest, the LAN, the gateway's other addresses, a public
# resolver) is still refused; a query with a source that is not the
# guest's own (another guest's, the gateway's, an unknown or outside
# address) is still dropped, on the bridge and, from the LAN side with a
# guest's address, in raw_pre; a guest's query from port 67 is still a
# DHCP server's reply to the bridge; the LAN's queries to the guests'
# resolver are still refused; and a process other than dnsd's user still
# cannot answer a guest from the gateway's port 53.  Last, the probes are
# shown to see a fast path that accepts too broadly: with such a rule put
# in by hand, a guest's query reaches the gateway's uplink address.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/nft-trace.sh

[ -x build/nft-rules ] || { not_ok "build/nft-rules is built"; exit 1; }
getent passwd moat-dns >/dev/null ||
	{ not_ok "user moat-dns exists (make check installs moat's users)"; exit 1; }
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
W=$TOPO_TMP
cat >$W/moat.conf <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
expect_ok "nft-rules applies the policy in the gateway namespace" \
	in_ns "$NS_GW" build/nft-rules -c $W/moat.conf apply

# listen NS NAME ADDR... -- a UDP port-53 listener on each ADDR that logs
# "ADDR PAYLOAD" for every datagram and answers it (as dnsd's user on the
# gateway's sandbox-side address, like dnsd).
ip -n "$NS_INET" addr add 9.9.9.9/32 dev lo
listen() {
	local ns=$1 name=$2; shift 2
	topo_bg "$ns" "$name" "${PFX[@]}" python3 -c '
import select, socket, sys
socks = []
for a in sys.argv[1:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a, 53)); socks.append(s)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [], 120)[0]:
        d, peer = s.recvfrom(512)
        print(s.getsockname()[0], d.decode(errors="replace"), flush=True)
        try:
            s.sendto(d, peer)
        except OSError:
            pass	# the output hook dropped the answer' "$@"
}
PFX=($(as_dns_user)); listen "$NS_GW" resolver 10.77.0.1
PFX=(); listen "$NS_GW" gwother 203.0.113.1 192.168.77.1
listen "$TOPO-web" guest 10.77.0.10
listen "$NS_LAN" lan 192.168.77.2
listen "$NS_INET" public 9.9.9.9
for l in resolver gwother guest lan public; do
	wait_for 30 grep -q ready "$W/$l.log" || not_ok "listener $l starts" "$(cat "$W/$l.log")"
done
heard() { grep -c " $2\$" "$W/$1.log"; }	# heard LISTENER PAYLOAD

# ask NS DST PAYLOAD -- one UDP datagram to DST:53; prints the answer.
ask() {
	in_ns "$1" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
try:
    s.sendto(sys.argv[2].encode(), (sys.argv[1], 53))
    print(s.recvfrom(512)[0].decode())
except OSError as e:
    print("error", e.__class__.__name__)' "$2" "$3"
}
# forge NS SRC DST PAYLOAD [SPORT] -- one UDP datagram to DST:53 with
# source SRC (raw socket; the namespace's own MAC), from port SPORT.
forge() {
	in_ns "$1" python3 - "$2" "$3" "$4" "${5:-40000}" <<'PY'
import socket, struct, sys
src, dst, payload = sys.argv[1], sys.argv[2], sys.argv[3].encode()
udp = struct.pack("!HHHH", int(sys.argv[4]), 53, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
    socket.inet_aton(src), socket.inet_aton(dst))
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
s.sendto(ip + udp, (dst, 0))
PY
}
counter() { in_ns "$NS_GW" nft list counter "$1" moat "$2" | awk '/packets/ {print $2}'; }

# --- the fast path, from the kernel's trace ---------------------------------
expect_eq "control: dev's query is answered by the resolver" fast-0 "$(ask "$TOPO-dev" 10.77.0.1 fast-0)"
trace_start "$NS_GW" "ip saddr 10.77.0.11 ip daddr 10.77.0.1 udp dport 53"
in_ns "$NS_GW" nft add rule inet mtrace out ip saddr 10.77.0.1 ip daddr 10.77.0.11 udp sport 53 meta nftrace set 1
expect_eq "a traced query is answered" fast-1 "$(ask "$TOPO-dev" 10.77.0.1 fast-1)"
trace_stop "$NS_GW"
walk=$(trace_walk "$NS_GW" | cut -d' ' -f2-)
expect_match "bridge: the first rule, the anti-spoofing lookup (guest_ip), accepts it" "^bridge prerouting 1 accept" "$walk"
expect_match "raw_pre: the second rule, after loopback, accepts it" "^inet raw_pre 2 accept" "$walk"
expect_match "input: the first rule accepts it" "^inet input 1 accept" "$walk"
expect_match "output: the first rule accepts the answer" "^inet output 1 accept" "$walk"
expect_fail "...which meets no other chain of input or output (guest_in, dns_out)" \
	grep -Eq "guest_in|dns_out" <<<"$walk"
total=$(awk '{ n += $3 } END { print n }' <<<"$walk")
if [ "${total:-99}" -le 8 ]; then ok "query and answer meet $total rules in all (24 before the fast path)"
else not_ok "query and answer meet at most 8 rules" "$walk"; fi
expect_eq "the fast path counts the query in dev's accounting (acct_out)" 1 \
	"$(in_ns "$NS_GW" nft list set inet moat acct_out | grep -c '10.77.0.11 counter packets [1-9]')"
expect_eq "...and makes no conntrack entry" 0 \
	"$(in_ns "$NS_GW" conntrack -L -p udp --orig-dst 10.77.0.1 --dport 53 2>/dev/null | grep -c udp)"

# --- a guest's udp/53 anywhere else is refused ------------------------------
for dst in "10.77.0.10 guest another guest" "192.168.77.2 lan the LAN host" \
    "203.0.113.1 gwother the gateway's uplink address" \
    "192.168.77.1 gwother the gateway's LAN address" "9.9.9.9 public a public resolver"; do
	set -- $dst; a=$1 l=$2; shift 2
	got=$(ask "$TOPO-dev" $a "to-$a")
	expect_eq "dev's udp/53 to $* ($a) gets no answer ($got)" 0 \
		"$(case $got in to-*) echo 1;; *) echo 0;; esac)"
	expect_eq "...and never arrives" 0 "$(heard $l "to-$a")"
done

# --- spoofed sources stay dropped ------------------------------------------
s0=$(counter bridge spoof)
for src in 10.77.0.10 10.77.0.1 10.77.0.99 203.0.113.99; do
	forge "$TOPO-dev" $src 10.77.0.1 "spoof-$src"
done
# A LAN host sending as a guest, straight to the gateway's resolver.
i0=$(counter inet spoof)
forge "$NS_LAN" 10.77.0.11 10.77.0.1 "spoof-lan"
expect_eq "control: dev still reaches the resolver" fast-2 "$(ask "$TOPO-dev" 10.77.0.1 fast-2)"
for src in 10.77.0.10 10.77.0.1 10.77.0.99 203.0.113.99; do
	expect_eq "a query from dev as $src never reaches the resolver" 0 "$(heard resolver "spoof-$src")"
done
expect_eq "...each dropped on the bridge (spoof counter +4)" $((s0 + 4)) "$(counter bridge spoof)"
expect_eq "a query from the LAN as guest dev never reaches the resolver" 0 "$(heard resolver spoof-lan)"
h0=$(counter bridge dhcp)
forge "$TOPO-dev" 10.77.0.11 10.77.0.1 from-67 67
expect_eq "control: dev reaches the resolver" fast-3 "$(ask "$TOPO-dev" 10.77.0.1 fast-3)"
expect_eq "dev's own query from port 67 is still dropped as a DHCP server's (dhcp +1)" \
	"$((h0 + 1)) 0" "$(counter bridge dhcp) $(heard resolver from-67)"
expect_eq "...dropped in raw_pre (spoof counter +1)" $((i0 + 1)) "$(counter inet spoof)"
expect_match "the LAN's own query to the guests' resolver is refused" "^error|^$" \
	"$(ask "$NS_LAN" 10.77.0.1 lan-q)"
expect_eq "...and never arrives" 0 "$(heard resolver lan-q)"

# --- only dnsd's user answers guests from the gateway's port 53 -------------
d0=$(counter inet dnsreply)
in_ns "$NS_GW" python3 - <<'PY'
import socket, struct
payload = b"forged-answer"
udp = struct.pack("!HHHH", 53, 40001, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
    socket.inet_aton("10.77.0.1"), socket.inet_aton("10.77.0.11"))
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
try:
    s.sendto(ip + udp, ("10.77.0.11", 0))
except PermissionError:
    pass
PY
expect_eq "root's datagram from the gateway's address, port 53, to a guest is dropped (dnsreply +1)" \
	$((d0 + 1)) "$(counter inet dnsreply)"

# --- the probes see a fast path that accepts too broadly ---------------------
in_ns "$NS_GW" nft insert rule inet moat input iifname moat0 udp dport 53 accept
ask "$TOPO-dev" 203.0.113.1 broad >/dev/null
expect_eq "with an input rule for any local address, dev's query reaches the uplink address (the probe sees it)" \
	1 "$(heard gwother broad)"
tap_done
