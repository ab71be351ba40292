#!/usr/bin/env bash
# moat-proxy: a worker never waits for its signer.  While the signer is
# stopped, a guest whose intercepted connection needs a new leaf waits in
# its own state, and every other connection on the same worker goes on at
# once; when the signer answers, the waiting connection completes; when
# the signer does not answer in 5 s, that connection alone is refused.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
pxpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
signer=$(pgrep -P "$pxpid" | head -1)
expect_eq "the stand-alone proxy has its signer (user moat-ca)" moat-ca \
	"$(ps -o user= -p "${signer:-1}" | tr -d ' ')"

# No leaf is cached yet: the first intercepted request needs the signer.
kill -STOP "$signer"
( px_curl agent https://api.bound.test/small -H "Authorization: Bearer $PX_PLACEHOLDER" \
	-o /dev/null -w '%{http_code}\n' >"$TOPO_TMP/waiting.out" 2>&1 ) &
waiting=$!
sleep 0.5
t0=$(date +%s%N)
code=$(px_curl plain https://other.test/small -o /dev/null -w '%{http_code}' 2>&1)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "another guest's tunnel on the same worker answers meanwhile" 200 "$code"
[ "$ms" -lt 2500 ] && ok "... at once ($ms ms, not after the signer's 5 s)" ||
	not_ok "another guest's tunnel answers at once" "$ms ms"
kill -0 "$waiting" 2>/dev/null; expect_eq "the connection that needs a leaf is still waiting" 0 $?
kill -CONT "$signer"
wait "$waiting"
expect_eq "once the signer answers, it completes" 200 "$(cat "$TOPO_TMP/waiting.out")"

# A guest that resets its connection while its leaf is awaited: epoll
# reports the reset even with no interest asked, on every turn of the
# loop; the waiting connection is closed at once, and the worker does not
# spin until the signer answers.
cputicks() { awk '{ print $14 + $15 }' "/proc/$pxpid/stat"; }
kill -STOP "$signer"
in_ns "$TOPO-inspect" python3 -c 'import socket, ssl, struct, sys, time
s = socket.create_connection((sys.argv[1], 3128), timeout=5)
s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
r = b""
while b"\r\n\r\n" not in r:
    r += s.recv(1024)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
t = ctx.wrap_socket(s, server_hostname="other.test", do_handshake_on_connect=False)
t.setblocking(False)
try:
    t.do_handshake()        # the ClientHello goes; the proxy asks the signer
except ssl.SSLWantReadError:
    pass
time.sleep(2)
t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
t.close()                   # RST' $GW_ADDR
c0=$(cputicks); sleep 2; c1=$(cputicks)
closed() { grep -q '10\.77\.0\.13: other\.test:443: closed in state 4$' "$TOPO_TMP/moat-proxy.log"; }
closed; expect_eq "a guest that reset while its leaf was awaited is closed at once (within 2 s; the signer's deadline is 5 s)" 0 $?
[ $((c1 - c0)) -lt 10 ] && ok "... and the worker stays idle meanwhile ($((c1 - c0)) ticks of CPU in 2 s)" ||
	not_ok "the worker stays idle while the signer is stopped" "$((c1 - c0)) ticks of CPU in 2 s"
# The signer's request for other.test is given up before the next part.
gaveup() { grep -q 'the signer did not answer for other.test in 5 s' "$TOPO_TMP/moat-proxy.log"; }
wait_for 15 gaveup; expect_eq "... and its request for the leaf is given up after 5 s" 0 $?

# A signer that never answers: that connection alone is refused, in about
# the signer's 5 s, and the worker keeps serving.
kill -STOP "$signer"
t0=$(date +%s%N)
# (sandbox "inspect" intercepts every host: other.test needs a leaf now)
out=$(in_ns "$TOPO-inspect" curl -sS --max-time 12 -x http://$GW_ADDR:3128 --cacert "$PX_DIR/bundle.crt" \
	https://other.test/small -o /dev/null -w '%{http_code}' 2>&1)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -CONT "$signer"
expect_match "a leaf the signer never sends: the guest's handshake is refused" \
	'alert|SSL|TLS|000' "$out"
[ "$ms" -ge 4000 ] && [ "$ms" -lt 11000 ] && ok "... after the signer's deadline ($ms ms)" ||
	not_ok "refused after the signer's deadline" "$ms ms: $out"
expect_eq "the worker serves on" 200 "$(px_curl plain https://other.test/small -o /dev/null -w '%{http_code}' 2>&1)"
expect_match "the give-up is logged" 'the signer did not answer for other.test in 5 s' "$(cat "$TOPO_TMP/moat-proxy.log" 2>/dev/null)"
tap_done
