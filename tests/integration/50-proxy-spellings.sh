#!/usr/bin/env bash
# moat-proxy never dials the gateway host, its loopback, the LAN or
# another guest, however the address is spelt: every IPv4 number form
# (decimal, octal, hex, short), IPv4-mapped, -compatible and NAT64 IPv6,
# 6to4, names that are loopback, the unspecified address.  Each form goes
# as a CONNECT and as an absolute URI, in raw request lines (no client
# normalises them first), and listeners on those addresses count every
# connection that reaches them: none may.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
HITS=$TOPO_TMP/hits; : >"$HITS"; chmod 666 "$HITS"
hit() { topo_bg "$1" "$2" socat "$3" SYSTEM:"echo $2 >>$HITS"; }
hit "$NS_GW" lo4 TCP-LISTEN:4443,bind=127.0.0.1,fork,reuseaddr
hit "$NS_GW" lo6 TCP6-LISTEN:4443,bind=[::1],fork,reuseaddr,ipv6only=1
hit "$NS_GW" any TCP-LISTEN:4444,fork,reuseaddr
hit "$NS_LAN" lan TCP-LISTEN:4443,fork,reuseaddr
hit "$TOPO-plain" guest TCP-LISTEN:4443,fork,reuseaddr
for p in "$NS_GW 127.0.0.1 4443" "$NS_GW 0.0.0.0 4444" "$NS_LAN 0.0.0.0 4443" "$TOPO-plain 0.0.0.0 4443"; do
	set -- $p; topo_wait_port "$1" "$2" "$3" || not_ok "listener $p"
done
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }

# One raw request from guest agent; prints the status code (000: none).
raw() {	# raw "REQUEST LINE" HOSTHEADER
	in_ns "$TOPO-agent" python3 - "$GW_ADDR" "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 3128), timeout=8)
s.sendall(("%s\r\nHost: %s\r\nConnection: close\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode())
d = b""
try:
    while b"\r\n" not in d:
        c = s.recv(4096)
        if not c: break
        d += c
except OSError:
    pass
parts = d.split(b" ")
print(parts[1].decode() if len(parts) > 1 and d.startswith(b"HTTP/") else "000")
PY
}
check() {	# check WHAT HOST:PORT
	local c u
	c=$(raw "CONNECT $2 HTTP/1.1" "$2")
	u=$(raw "GET http://$2/ HTTP/1.1" "$2")
	case "$c/$u" in
	200/*|*/200) not_ok "$1 ($2) is refused" "CONNECT $c, GET $u" ;;
	*) ok "$1 ($2) is refused (CONNECT $c, GET $u)" ;;
	esac
}
for h in 127.0.0.1 127.1 127.0.1 0x7f.1 0x7f000001 2130706433 0177.0.0.1 017700000001 \
    127.0.0.2 0x7F.0.0.1 '[::1]' '[0:0:0:0:0:0:0:1]' '[::ffff:127.0.0.1]' '[::ffff:7f00:1]' \
    '[::127.0.0.1]' '[64:ff9b::7f00:1]' '[2002:7f00:1::]' localhost localhost. LOCALHOST \
    0.0.0.0 0 '[::]'; do
	check "loopback" "$h:4443"
done
for h in 0.0.0.0:4444 0:4444 10.77.0.1:4444 '[::ffff:10.77.0.1]:4444' 3405803777:4444 \
    203.0.113.1:4444 0xcb.0.0x71.1:4444 192.168.77.1:4444 3232255233:4444; do
	check "the gateway host" "$h"
done
for h in 192.168.77.2:4443 3232255234:4443 0xc0a84d02:4443 0300.0250.0115.02:4443 \
    192.168.19714:4443 '[::ffff:192.168.77.2]:4443' '[::ffff:c0a8:4d02]:4443' \
    '[64:ff9b::c0a8:4d02]:4443' '[64:ff9b::192.168.77.2]:4443' '[2002:c0a8:4d02::1]:4443' \
    lan.test:4443; do
	check "the LAN" "$h"
done
for h in 10.77.0.11:4443 0x0a4d000b:4443 172818443:4443 '[::ffff:10.77.0.11]:4443'; do
	check "another guest" "$h"
done
expect_eq "no listener was ever reached through the proxy" "" "$(sort -u "$HITS" | tr '\n' ' ')"
# The control: the same request to a public host is served.
expect_eq "control: a public host through the same raw CONNECT" 200 \
	"$(raw "CONNECT other.test:443 HTTP/1.1" other.test:443)"
tap_done
