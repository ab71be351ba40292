#!/usr/bin/env bash
# moat-proxy: large intercepted downloads.  A body of several MiB that
# carries the real value of a secret many times over (back to back, a few
# bytes apart, and near misses), with Content-Length and in chunks of
# random sizes, reaches the guest byte for byte as the server sent it with
# every real value turned into the placeholder (sha256 of the whole), so
# re-framing in full TLS records and scrubbing straight into the guest's
# buffer lose or mangle nothing at any boundary.  A guest that stops
# reading holds the download back: the proxy stops reading upstream and
# its memory stays bounded, and the download then completes intact.
# Real curl and a python TLS client in a guest namespace; the HTTPS test
# server in the internet namespace.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
pxpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)

want() {	# want N SEED -> sha256 of what the guest must get
	python3 tests/harness/bigleak.py "$1" "$2" "$PX_SECRET" "$PX_PLACEHOLDER" |
	    sha256sum | cut -d' ' -f1
}
got() {		# got QUERY -> sha256 of the body through interception
	in_ns "$TOPO-agent" curl -sS --max-time 120 -x http://$GW_ADDR:3128 \
	    --cacert "$PX_DIR/bundle.crt" -H "Authorization: Bearer $PX_PLACEHOLDER" \
	    "https://api.bound.test/bigleak?$1" | sha256sum | cut -d' ' -f1
}
raw=$(python3 -c 'import sys; sys.path.insert(0, "tests/harness"); import bigleak
b = bigleak.body(8 << 20, 7, sys.argv[1].encode()); print(b.count(sys.argv[1].encode()))' "$PX_SECRET")
[ "$raw" -gt 1000 ] && ok "the 8 MiB body carries the real value $raw times" ||
	not_ok "the 8 MiB body carries the real value many times" "$raw"

expect_eq "8 MiB with Content-Length arrives whole, every value scrubbed (sha256)" \
	"$(want 8388608 7)" "$(got 'n=8388608&seed=7')"
expect_eq "8 MiB in random-size chunks arrives whole, every value scrubbed (sha256)" \
	"$(want 8388608 11)" "$(got 'n=8388608&seed=11&chunked=1')"
expect_eq "a body that ends inside a near miss arrives whole" \
	"$(want 100003 3)" "$(got 'n=100003&seed=3')"

# AES-128-GCM first: curl lists AES-256-GCM first, the proxy (which has AES
# instructions to spare on every intercepted byte) picks AES-128-GCM.
expect_match "the guest's TLS 1.3 suite is the proxy's first choice, AES-128-GCM" \
	'SSL connection using TLSv1.3 / TLS_AES_128_GCM_SHA256' \
	"$(in_ns "$TOPO-agent" curl -sS -v --max-time 20 -x http://$GW_ADDR:3128 \
	    --cacert "$PX_DIR/bundle.crt" https://api.bound.test/small -o /dev/null 2>&1)"

# --- a guest that stops reading ----------------------------------------------
# The client reads the head, then nothing until told (a file appears); the
# 48 MiB body must then wait in the sockets, not in the proxy.
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/"$pxpid"/status; }
rss0=$(rss_kb)
go=$TOPO_TMP/slow-go
in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" "$PX_PLACEHOLDER" "$go" \
    >"$TOPO_TMP/slow.out" 2>&1 <<'PY' &
import hashlib, os, socket, ssl, sys, time
s = socket.create_connection(("10.77.0.1", 3128), timeout=120)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
s.recv(4096)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="api.bound.test")
t.sendall(b"GET /bigleak?n=50331648&seed=5 HTTP/1.1\r\nHost: api.bound.test\r\n"
          b"Authorization: Bearer " + sys.argv[2].encode() + b"\r\n\r\n")
d = b""
while b"\r\n\r\n" not in d:
    d += t.recv(4096)
head, body = d.split(b"\r\n\r\n", 1)
print("head", flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.1)
# the proxy re-frames as chunked: decode
buf, out = body, hashlib.sha256()
def more():
    global buf
    x = t.recv(65536)
    if not x:
        raise SystemExit("closed early")
    buf += x
while True:
    while b"\r\n" not in buf:
        more()
    line, buf = buf.split(b"\r\n", 1)
    n = int(line, 16)
    while len(buf) < n + 2:
        more()
    out.update(buf[:n])
    buf = buf[n + 2:]
    if n == 0:
        break
print("sha", out.hexdigest(), flush=True)
PY
slow=$!
upq() {	# bytes waiting in the proxy's upstream socket (gateway namespace)
	in_ns "$NS_GW" ss -Htn "dst $PX_BOUND:443" | awk '{ q += $2 } END { print q + 0 }'
}
upq_full() { [ "$(upq)" -gt 32768 ]; }
wait_for 60 grep -q head "$TOPO_TMP/slow.out"
if wait_for 60 upq_full; then
	ok "with the guest not reading, the proxy stops reading upstream ($(upq) bytes wait in its socket)"
else
	not_ok "with the guest not reading, the proxy stops reading upstream" "upstream Recv-Q $(upq)"
fi
grow=$(( $(rss_kb) - rss0 ))
[ "$grow" -lt 8192 ] && ok "... and its RSS grew by $grow KiB, not by the 48 MiB body" ||
	not_ok "the proxy's RSS stays bounded while the guest does not read" "grew $grow KiB"
touch "$go"
wait $slow
expect_eq "... the guest then reads it all, intact and scrubbed (sha256)" \
	"sha $(want 50331648 5)" "$(grep '^sha' "$TOPO_TMP/slow.out")"

expect_fail "the real value never appears in the proxy's log" \
	grep -qF "$PX_SECRET" "$TOPO_TMP/moat-proxy.log"
tap_done
