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
    data = os.urandom(size)
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
