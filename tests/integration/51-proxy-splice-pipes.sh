#!/usr/bin/env bash
# Spliced CONNECT tunnels take their pipes from a pool only while bytes are
# in flight: several tunnels moving data at once through reused pipes each
# get exactly their own bytes back, and idle tunnels hold two descriptors
# each (their sockets), not six.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
# An echo server: what goes up a tunnel comes back down it.
topo_bg "$NS_INET" echo socat TCP-LISTEN:9000,bind=$PX_OTHER,fork,reuseaddr SYSTEM:cat
topo_wait_port "$NS_INET" $PX_OTHER 9000 || not_ok "echo server listens"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
# the worker (the last pid listed; the first may be the signer)
pid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o "pid=[0-9]*" | tail -1 | cut -d= -f2)

# tunnels N BYTES -- N concurrent CONNECT tunnels to the echo server, each
# sending BYTES of its own pseudo-random data and reading them back;
# prints how many came back intact.
tunnels() {
	in_ns "$TOPO-agent" timeout 60 python3 - "$1" "$2" "$GW_ADDR" "$PX_OTHER" <<'PY'
import os, selectors, socket, sys
n, size, gw, dst = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
sel = selectors.DefaultSelector()
st = {}
for i in range(n):
    s = socket.create_connection((gw, 3128), timeout=10)
    s.sendall(b"CONNECT %s:9000 HTTP/1.1\r\nHost: %s:9000\r\n\r\n" % ((dst.encode(),) * 2))
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            sys.exit("tunnel %d refused" % i)
        head += d
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit("tunnel %d: %r" % (i, head))
    s.setblocking(False)
    # Not 0x16 first: the proxy reads a tunnel opening with a TLS record's
    # first byte as a ClientHello, and refuses one that is not.
    data = b"\x00" + os.urandom(size - 1)
    st[s] = [data, 0, bytearray()]
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
good = 0
while st:
    ev = sel.select(timeout=20)
    if not ev:
        break
    for key, m in ev:
        s = key.fileobj
        data, off, got = st[s]
        if m & selectors.EVENT_WRITE and off < len(data):
            st[s][1] += s.send(data[off:off + 65536])
            if st[s][1] == len(data):
                sel.modify(s, selectors.EVENT_READ)
        if m & selectors.EVENT_READ:
            d = s.recv(262144)
            got += d
            if not d or len(got) >= len(data):
                good += got == data
                sel.unregister(s)
                s.close()
                del st[s]
print(good)
PY
}
expect_eq "4 tunnels at once echo 4 MiB each, intact" 4 "$(tunnels 4 4194304)"
expect_eq "again, through pooled pipes" 4 "$(tunnels 4 4194304)"

# Small messages are copied as they arrive (splice.c): each goes on at
# once, and what a guest that stopped reading cannot take waits in the
# tunnel's pipe, ahead of anything read later.  A talker on port 9001
# sends 5,000 numbered 99-byte messages, one send each, paced so that the
# proxy reads them one by one; the guest reads nothing for 3 seconds, so
# the proxy's sends to it fall short while it is copying, then reads
# them all back.  Prints "order ok" or what
# broke.
topo_bg "$NS_INET" talker python3 -c '
import socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 9001)); l.listen(8)
while True:
    c, _ = l.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if c.recv(1) == b"!":
        c.sendall(b"!")
    for i in range(5000):
        c.sendall(b"%099d" % i)
        time.sleep(0.0002)	# one read each: the proxy copies them
    c.close()
' $PX_OTHER
topo_wait_port "$NS_INET" $PX_OTHER 9001 || not_ok "talker listens"
in_order() {
	in_ns "$TOPO-agent" timeout 60 python3 - "$GW_ADDR" "$PX_OTHER" <<'PY'
import socket, sys, time
gw, dst = sys.argv[1:3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)	# fills at once
s.settimeout(20)
s.connect((gw, 3128))
s.sendall(b"CONNECT %s:9001 HTTP/1.1\r\nHost: %s:9001\r\n\r\n" % ((dst.encode(),) * 2))
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
# a byte goes through at once, alone, both ways
t = time.time()
s.sendall(b"!")
if s.recv(1) != b"!":
    sys.exit("no single byte back")
late = time.time() - t
time.sleep(3)
want = b"".join(b"%099d" % i for i in range(5000))
got = bytearray()
while True:
    d = s.recv(262144)
    if not d:
        break
    got += d
if got != want:
    sys.exit("%d of %d bytes, first difference at %d" % (len(got), len(want),
        next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), -1)))
print("order ok" if late < 1 else "a single byte took %.2f s" % late)
PY
}
expect_eq "a tunnel whose guest stops reading keeps small messages whole and in order" \
    "order ok" "$(in_order 2>&1)"

# 50 tunnels that carried a byte each way and went idle (under
# proxy.per_sandbox's 64): two descriptors each.
nfd() { ls /proc/"$pid"/fd | wc -l; }
before=$(nfd)
in_ns "$TOPO-agent" timeout 60 python3 - "$GW_ADDR" "$PX_OTHER" "$TOPO_TMP/idle-ready" "$TOPO_TMP/idle-done" <<'PY' &
import os, socket, sys, time
gw, dst, ready, done = sys.argv[1:5]
ss = []
for _ in range(50):
    s = socket.create_connection((gw, 3128), timeout=10)
    s.sendall(b"CONNECT %s:9000 HTTP/1.1\r\nHost: %s:9000\r\n\r\n" % ((dst.encode(),) * 2))
    ss.append(s)
for s in ss:
    s.recv(100)
# a byte each way: the tunnel is spliced (not still peeked at), then idle
for s in ss:
    s.sendall(b"x")
for s in ss:
    if s.recv(1) != b"x":
        sys.exit("no echo")
open(ready, "w").close()
deadline = time.time() + 50
while not os.path.exists(done) and time.time() < deadline:
    time.sleep(0.1)
PY
py=$!
wait_for 30 test -e "$TOPO_TMP/idle-ready" || not_ok "50 idle tunnels open"
after=$(nfd)
touch "$TOPO_TMP/idle-done"
wait $py
grown=$((after - before))
if [ "$grown" -le 108 ]; then
	ok "50 idle tunnels hold $grown descriptors (<= 2 each + 8)"
else
	not_ok "50 idle tunnels hold $grown descriptors (<= 2 each + 8)"
fi
tap_done
