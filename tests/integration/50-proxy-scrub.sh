#!/usr/bin/env bash
# moat-proxy: what comes back from a host a secret was injected into.  A
# bound host that echoes what it got must hand the guest only the forms
# the guest wrote (raw and inside Basic credentials); compressed echoes and
# protocol switches, which the scrubber could not read, are not allowed on
# a connection that carried a secret; a placeholder split across the
# chunks of a request body is still caught.  Real curl and python clients
# in guest namespaces; real HTTPS echo servers in the internet namespace.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }

real64=$(printf 'alice:%s' "$PX_SECRET" | base64 -w0)
ph64=$(printf 'alice:%s' "$PX_PLACEHOLDER" | base64 -w0)

# --- Basic credentials echoed back --------------------------------------
: >"$PX_DIR/bound.log"
out=$(px_curl agent https://api.bound.test/echo -u "alice:$PX_PLACEHOLDER")
expect_match "the bound host got the real Basic pair" "Basic $real64" \
	"$(cat "$PX_DIR/bound.log")"
expect_match "the echo shows the guest its own Basic form" "Basic $ph64" "$out"
expect_fail "... never the base64 of the real pair" grep -qF "$real64" <<<"$out"
expect_fail "... nor the raw value" grep -qF "$PX_SECRET" <<<"$out"

# --- compression ------------------------------------------------------------
: >"$PX_DIR/bound.log"
out=$(px_curl agent https://api.bound.test/gzecho --compressed -u "alice:$PX_PLACEHOLDER" \
	-w '\n%{http_code}')
expect_fail "Accept-Encoding is not sent with a secret" \
	grep -qi '^Accept-Encoding' "$PX_DIR/bound.log"
expect_match "the echo arrives uncompressed and scrubbed" "Basic $ph64" "$out"
expect_eq "... with status 200" "200" "$(tail -1 <<<"$out")"
expect_fail "a compressed echo cannot carry the pair" grep -qF "$real64" <<<"$out"
out=$(px_curl agent https://api.bound.test/gzalways -H "Authorization: Bearer $PX_PLACEHOLDER" \
	-o /dev/null -w '%{http_code}')
expect_eq "a response compressed anyway is refused (502)" "502" "$out"
expect_match "... saying why" \
	'upstream compressed a response on a connection that carried a secret' \
	"$(cat "$TOPO_TMP/moat-proxy.log")"
: >"$PX_DIR/bound.log"
px_curl agent https://api.bound.test/gzecho --compressed -o /dev/null
expect_match "without a secret Accept-Encoding still goes up" '^Accept-Encoding: .*gzip' \
	"$(cat "$PX_DIR/bound.log")"

# --- protocol upgrade -------------------------------------------------------
ws() {	# ws AUTH-HEADER-LINE -- /ws through interception; first status line
	in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" "$1" <<'PY'
import socket, ssl, sys
s = socket.create_connection(("10.77.0.1", 3128), timeout=8)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
s.recv(4096)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="api.bound.test")
t.sendall(b"GET /ws HTTP/1.1\r\nHost: api.bound.test\r\nConnection: Upgrade\r\n"
          b"Upgrade: websocket\r\n" + sys.argv[2].encode() +
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    d = t.recv(4096)
    if not d:
        break
    head += d
print(head.split(b"\r\n")[0].decode())
PY
}
expect_match "an upgrade without a secret still switches (101)" "^HTTP/1.1 101 " "$(ws '')"
expect_match "an upgrade carrying a secret is not switched (502)" "^HTTP/1.1 502 " \
	"$(ws "Authorization: Bearer $PX_PLACEHOLDER"$'\r\n')"
expect_match "... the proxy withheld Upgrade, so the 101 was unasked" \
	'upstream switched protocols unasked' "$(cat "$TOPO_TMP/moat-proxy.log")"

# --- a placeholder split across request chunks ------------------------------
: >"$PX_DIR/other.log"
code=$(in_ns "$TOPO-inspect" python3 - "$PX_DIR/bundle.crt" "$PX_PLACEHOLDER" <<'PY'
import socket, ssl, sys
ph = sys.argv[2].encode()
s = socket.create_connection(("10.77.0.1", 3128), timeout=8)
s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
s.recv(4096)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="other.test")
a, b = ph[:7], ph[7:]
t.sendall(b"POST /echo HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"%x\r\n%s\r\n" % (len(a), a))
t.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(b), b))
d = b""
while b"\r\n" not in d:
    x = t.recv(4096)
    if not x:
        break
    d += x
print(d.split(b" ")[1].decode() if d else "closed")
PY
)
expect_eq "a placeholder split across chunks to an unbound host is refused (403)" "403" "$code"
expect_match "... and audited" '"event":"placeholder-blocked".*"host":"other.test"' \
	"$(cat "$TOPO_TMP/moat-proxy.log")"

expect_fail "the real value never appears in the proxy's log" \
	grep -qF "$PX_SECRET" "$TOPO_TMP/moat-proxy.log"
tap_done
