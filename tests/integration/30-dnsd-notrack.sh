#!/usr/bin/env bash
# Guests' UDP queries to the gateway's resolver, and dnsd's answers, make
# no conntrack entry (each guest query comes from a new port: an entry per
# query is the firewall's largest cost per answer).  The exemption is
# exact: only UDP to the gateway's address and port 53 from the bridge,
# and answers sent by dnsd's user; any other process on the gateway that
# sends UDP from port 53 to a guest is dropped and counted.  dnsd's own
# queries upstream stay tracked.  Policy from nft-rules, in the gateway
# namespace.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

[ -x build/nft-rules ] || { not_ok "build/nft-rules is built"; exit 1; }
getent passwd moat-dns >/dev/null ||
	{ not_ok "user moat-dns exists (make check installs moat's users)"; exit 1; }
dns_topology || { not_ok "topology comes up"; exit 1; }
dns_conf
expect_ok "nft-rules applies the policy in the gateway namespace" \
	in_ns "$NS_GW" build/nft-rules -c "$DNS_CONF" apply
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
dns_start || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }

# --- guests' DNS works, untracked ----------------------------------------
out=$(qdig dev open.test)
expect_eq "an open guest's query is answered" "NOERROR" "$(rcode_of <<<"$out")"
expect_match "...with the upstream's address" "^203\.0\.113\." "$(answers_of <<<"$out")"
expect_match "an allowlist guest's answer is given" "203.0.113.10" \
	"$(qdig web pypi.org | answers_of)"
# Each dig asks from a port of its own, as guests' resolvers do.
for i in $(seq 20); do qdig dev open.test >/dev/null; done
expect_eq "refused names are still refused" "REFUSED" \
	"$(qdig web denied.test | rcode_of)"
expect_eq "a TCP query is answered too (TCP stays tracked)" "NOERROR" \
	"$(qdig dev +tcp open.test | rcode_of)"
ct() { in_ns "$NS_GW" conntrack -L -p udp "$@" 2>/dev/null | grep -c udp; }
expect_eq "no conntrack entry for guests' UDP queries to the gateway" 0 \
	"$(ct --orig-dst "$GW_ADDR" --dport 53)"
n=$(ct --orig-dst 203.0.113.53 --dport 53)
if [ "$n" -gt 0 ]; then ok "dnsd's own queries upstream are tracked ($n entries)"
else not_ok "dnsd's own queries upstream are tracked" "no entry"; fi
expect_match "the query rule is in raw prerouting" \
	'iifname "moat0" ip daddr 10\.77\.0\.1 udp dport 53 notrack' \
	"$(in_ns "$NS_GW" nft list chain inet moat raw_pre)"

# --- nothing but dnsd answers guests from port 53 --------------------------
# A receiver on web; a root process on the gateway sends from port 53 (of
# the uplink address: dnsd holds the sandbox-side one) and from 5353.
RX=$TOPO_TMP/rx.log
topo_bg "$TOPO-web" rx python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.10", 4444)); s.settimeout(120)
while True:
    d, a = s.recvfrom(100)
    print(d.decode(), a[1], flush=True)'
listening() { in_ns "$TOPO-web" ss -Hlun 'src 10.77.0.10:4444' | grep -q .; }
wait_for 30 listening || not_ok "receiver listens"
send() {	# send SPORT PAYLOAD -- one datagram from the gateway to web
	in_ns "$NS_GW" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.1", int(sys.argv[1])))
try:
    s.sendto(sys.argv[2].encode(), ("10.77.0.10", 4444))
except PermissionError:
    pass	# the output hook dropped it' "$1" "$2"
}
got() { send "$1" "$2"; grep -q "^$2 " "$RX"; }
counter() { in_ns "$NS_GW" nft list counter inet moat dnsreply | awk '/packets/ {print $2}'; }
c0=$(counter)
expect_ok "the gateway reaches web from port 5353 (the path works)" \
	wait_for 30 got 5353 before
for i in 1 2 3; do send 53 "from53-$i"; done
expect_ok "...and again after the port-53 datagrams" wait_for 30 got 5353 after
expect_eq "a non-dnsd process's UDP from port 53 never reaches the guest" "" \
	"$(grep '^from53' "$RX")"
c1=$(counter)
if [ "${c1:-0}" -ge $((${c0:-0} + 3)) ]; then ok "and each one is counted (dnsreply: $c0 -> $c1)"
else not_ok "and each one is counted" "dnsreply counter $c0 -> $c1"; fi
# Another guest forging the resolver's answer: dev sends web a datagram
# that claims to come from the gateway's address and port 53 (raw socket,
# its own MAC), and one from its own address and port 53.  Neither reaches
# web: a guest may send only as itself, and guests never reach each other.
forge() {	# forge SRC PAYLOAD -- one UDP datagram from dev, source SRC:53
	in_ns "$TOPO-dev" python3 - "$1" "$2" <<'PY'
import socket, struct, sys
src, payload = sys.argv[1], sys.argv[2].encode()
udp = struct.pack("!HHHH", 53, 4444, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
    socket.inet_aton(src), socket.inet_aton("10.77.0.10"))
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
s.sendto(ip + udp, ("10.77.0.10", 0))
PY
}
for i in 1 2 3; do forge 10.77.0.1 "forged-gw-$i"; forge 10.77.0.11 "forged-own-$i"; done
expect_ok "web still hears the gateway (the path works)" wait_for 30 got 5353 after-forgery
expect_eq "a guest's forged DNS answers (as the gateway, or as itself) never reach another guest" "" \
	"$(grep '^forged' "$RX")"
expect_eq "dnsd still answers after all that" "NOERROR" "$(qdig dev pypi.org | rcode_of)"
tap_done
