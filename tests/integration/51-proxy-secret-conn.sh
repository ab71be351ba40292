#!/usr/bin/env bash
# moat-proxy: a connection that has carried a secret stays bound to the
# host the secret went to (regression, issue 40).  Interception on; the
# secret "api" is bound to api.bound.test; other.test is a second HTTPS
# echo server in the internet namespace.  On one intercepted TLS
# connection to api.bound.test the guest first has the secret injected,
# then tries to send the rest of the connection somewhere else: a Host
# that differs from the SNI and the bound host (with the placeholder and
# without), the same pipelined in the write that carried the secret, an
# absolute-form URI naming another host, an HTTP/2 offer (ALPN h2, the
# h2c Upgrade, the HTTP/2 preface) and a websocket Upgrade.  proxy.8
# promises 421 for a Host that is not the TLS server name, origin-form
# targets only, ALPN http/1.1 only, and no Upgrade forwarded on a
# connection that carried a secret (a 101 anyway is 502, connection
# closed).  The echo servers log every request head they get: the real
# value never reaches other.test, nothing but the first request reaches
# api.bound.test, and no response the guest reads holds the value.  A TLS
# connection that names no host (no SNI) never has the secret injected.
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
PXLOG=$TOPO_TMP/moat-proxy.log
A="Authorization: Bearer $PX_PLACEHOLDER"

# conn [--alpn P,P] [--no-sni] PARTS -- one CONNECT api.bound.test:443 tunnel through
# the proxy, TLS with the gateway's leaf; PARTS (with \r\n escapes) are
# sent in one write each, split at "|NEXT|", the next once the response to
# the one before has ended.  Prints "alpn=X" and each response's status
# code (then "closed" if the proxy closed the connection), space-separated;
# every byte the guest got goes to $TOPO_TMP/got.
conn() {
	local alpn="" sni=api.bound.test
	[ "$1" = --alpn ] && { alpn=$2; shift 2; }
	[ "$1" = --no-sni ] && { sni=""; shift; }
	in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" "$1" "$alpn" "$TOPO_TMP/got" "$sni" <<'PY'
import socket, ssl, sys, time
s = socket.create_connection(("10.77.0.1", 3128), timeout=6)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
r = s.recv(4096)
assert r.startswith(b"HTTP/1.1 200"), r
ctx = ssl.create_default_context(cafile=sys.argv[1])
if sys.argv[3]:
    ctx.set_alpn_protocols(sys.argv[3].split(","))
if not sys.argv[5]:
    ctx.check_hostname = False
t = ctx.wrap_socket(s, server_hostname=sys.argv[5] or None)
out = ["alpn=%s" % t.selected_alpn_protocol()]
parts = sys.argv[2].encode().decode("unicode_escape").encode("latin-1").split(b"|NEXT|")
data, closed = b"", False

def read_until(cond):
    global data, closed
    while not closed and not cond():
        try:
            d = t.recv(65536)
        except (socket.timeout, ssl.SSLError, OSError):
            return
        if not d:
            closed = True
        data += d

def done_responses():
    # a response re-chunked by the proxy ends in 0\r\n\r\n; a refusal has
    # a Content-Length body; count complete ones loosely by status lines
    return data.count(b"0\r\n\r\n") + data.count(b"\r\nContent-Length:") + data.count(b"HTTP/1.1 101 ")
for i, p in enumerate(parts):
    try:
        t.sendall(p)
    except OSError:
        closed = True
        break
    if i < len(parts) - 1:
        n = done_responses()
        read_until(lambda: done_responses() > n)
        time.sleep(0.2)
t.settimeout(3)
read_until(lambda: False)
open(sys.argv[4], "wb").write(data)
out += [l.split(b" ")[1].decode() for l in data.split(b"\r\n")
        if l.startswith(b"HTTP/1.") and len(l.split(b" ")) > 1]
if closed:
    out.append("closed")
print(" ".join(out))
PY
}
fresh() { : >"$PX_DIR/bound.log"; : >"$PX_DIR/other.log"; : >"$PX_DIR/plain80.log"; }
# served HOST-LOG -- how many request heads reached that server
served() { grep -c '^----$' "$PX_DIR/$1.log"; }
# clean DESC -- the value reached neither other server, nor the guest
clean() {
	expect_fail "$1: the value never reached other.test" \
		grep -qF "$PX_SECRET" "$PX_DIR/other.log" "$PX_DIR/plain80.log"
	expect_eq "... nothing reached other.test" "0 0" "$(served other) $(served plain80)"
	expect_fail "... and the guest never saw the value" grep -qF "$PX_SECRET" "$TOPO_TMP/got"
}
FIRST="GET /echo HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\n"

# --- the control: the secret goes up, and the echo comes back scrubbed -----------
fresh
out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nConnection: close\r\n\r\n")
expect_eq "two requests to the bound host on one connection are served" "alpn=None 200 200 closed" "$out"
expect_eq "... both injected" 2 "$(grep -c "^Authorization: Bearer $PX_SECRET" "$PX_DIR/bound.log")"
expect_match "... and the echo shows the guest the placeholder" "$A" "$(cat "$TOPO_TMP/got")"
clean "control"

# --- no SNI at all: the TLS did not name the host --------------------------------------
fresh
out=$(conn --no-sni "$FIRST")
expect_match "without SNI, a request carrying the placeholder is refused (403)" '^alpn=None 403' "$out"
expect_eq "... nothing reached api.bound.test" 0 "$(served bound)"
clean "no SNI"
out=$(conn --no-sni "GET /echo HTTP/1.1\r\nHost: api.bound.test\r\nConnection: close\r\n\r\n")
expect_match "... one without it is served (200)" '^alpn=None 200' "$out"

# --- Host differs from SNI after the secret went up ---------------------------------
for h in other.test other.test:443 api.bound.test:444 203.0.113.21 203.0.113.20 \
    api.bound.test.other.test; do
	fresh
	out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: $h\r\n$A\r\n\r\n")
	expect_match "Host: $h with the placeholder, after an injected request: 421" \
		'^alpn=None 200 421' "$out"
	expect_eq "... only the first request reached api.bound.test" 1 "$(served bound)"
	clean "Host: $h"
done
expect_match "... the proxy said why" 'Host disagrees with the TLS server name' "$(cat "$PXLOG")"
fresh
out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: API.Bound.TEST.\r\n$A\r\n\r\n")
expect_match "Host: API.Bound.TEST. is the same host, spelt otherwise: served" '^alpn=None 200 200' "$out"
clean "Host: API.Bound.TEST."
fresh
out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: other.test\r\n\r\n")
expect_match "Host: other.test without the placeholder: 421 as well" '^alpn=None 200 421' "$out"
clean "Host: other.test, no placeholder"

# --- pipelined in the write that carried the secret ---------------------------------
fresh
out=$(conn "${FIRST}GET /echo HTTP/1.1\r\nHost: other.test\r\n$A\r\nConnection: close\r\n\r\n")
expect_match "pipelined: the second request to other.test is refused (421)" '^alpn=None 200 421' "$out"
expect_eq "... only the first reached api.bound.test" 1 "$(served bound)"
clean "pipelined"
fresh
out=$(conn "GET /echo HTTP/1.1\r\nHost: other.test\r\n\r\n${FIRST}")
expect_match "pipelined the other way (other.test first): 421, the secret never goes up" \
	'^alpn=None 421' "$out"
expect_eq "... nothing reached api.bound.test" 0 "$(served bound)"
clean "pipelined, other host first"

# --- absolute-form targets ------------------------------------------------------------
for u in https://other.test/echo http://other.test/echo https://api.bound.test/echo \
    other.test:443 'http://api.bound.test@other.test/echo'; do
	fresh
	out=$(conn "$FIRST|NEXT|GET $u HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\n")
	expect_match "GET $u after an injected request: 400" '^alpn=None 200 400' "$out"
	expect_eq "... only the first reached api.bound.test" 1 "$(served bound)"
	clean "GET $u"
done
expect_match "... the proxy said why" 'expected an origin-form request target' "$(cat "$PXLOG")"
fresh
out=$(conn "$FIRST|NEXT|GET //other.test/echo HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\n")
expect_match "GET //other.test/echo is a path on api.bound.test (its 404)" '^alpn=None 200 404' "$out"
clean "GET //other.test/echo"
fresh
out=$(conn "GET https://other.test/echo HTTP/1.1\r\nHost: other.test\r\n$A\r\n\r\n")
expect_match "an absolute-form first request to other.test: 400, not routed" '^alpn=None 400' "$out"
clean "absolute-form first"

# --- HTTP/2 ---------------------------------------------------------------------------
fresh
out=$(conn --alpn h2 "$FIRST")
expect_eq "ALPN offering only h2: none chosen, HTTP/1.1 spoken" "alpn=None 200" "$out"
out=$(conn --alpn h2,http/1.1 "$FIRST")
expect_eq "ALPN offering h2 and http/1.1: http/1.1 chosen" "alpn=http/1.1 200" "$out"
clean "ALPN"
fresh
out=$(conn "$FIRST|NEXT|PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
expect_match "the HTTP/2 preface after an injected request is refused (400)" '^alpn=None 200 400' "$out"
expect_eq "... only the first reached api.bound.test" 1 "$(served bound)"
clean "HTTP/2 preface"
fresh
out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: api.bound.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
expect_match "an h2c Upgrade after an injected request is answered in HTTP/1.1 (200)" '^alpn=None 200 200' "$out"
expect_fail "... the Upgrade was not forwarded" grep -qi '^Upgrade:' "$PX_DIR/bound.log"
clean "h2c Upgrade"

# --- websocket Upgrade after the secret went up ------------------------------------------
WS="GET /ws HTTP/1.1\r\nHost: api.bound.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
fresh
out=$(conn "$FIRST|NEXT|$WS|NEXT|echo-me $PX_PLACEHOLDER")
expect_match "a websocket Upgrade after an injected request is not switched (502, closed)" \
	'^alpn=None 200 502 closed$' "$out"
expect_match "... the proxy withheld Upgrade, so the 101 was unasked" \
	'upstream switched protocols unasked' "$(cat "$PXLOG")"
expect_fail "... nothing after the refusal came back" grep -qF echo-me "$TOPO_TMP/got"
clean "websocket"
fresh
out=$(conn "$FIRST|NEXT|GET /echo HTTP/1.1\r\nHost: api.bound.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
expect_match "an Upgrade to a path that does not switch is served (200)" '^alpn=None 200 200' "$out"
expect_fail "... without its Upgrade" grep -qi '^Upgrade:' "$PX_DIR/bound.log"
clean "Upgrade withheld"
out=$(conn "$WS|NEXT|echo-me")
expect_match "without a secret first, the websocket still switches (101)" '^alpn=None 101' "$out"
expect_match "... and echoes" 'echo-me' "$(cat "$TOPO_TMP/got")"

expect_fail "the real value never appears in the proxy's log" grep -qF "$PX_SECRET" "$PXLOG"
tap_done
