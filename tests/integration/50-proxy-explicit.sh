#!/usr/bin/env bash
# moat-proxy as an explicit proxy (CONNECT and absolute-URI HTTP), with
# real curl, openssl s_client and raw sockets from guest namespaces.
# HTTPS servers in the internet namespace use certificates from a test CA
# that the proxy trusts through --upstream-ca.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect
topo_banner "$NS_LAN" $LAN_HOST 443 "lan-https"
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
# A deliberate hole to the LAN host's port 22: by default it applies to
# the open sandboxes only, never to the allowlist one.
sed -i 's|^  state_dir = |  exceptions = ( { to = "192.168.77.2/32"; proto = "tcp"; ports = [ 22 ]; } );\n  state_dir = |' \
	"$TOPO_TMP/moat.conf"
topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-lan-host"
# The gateway host's own services, bound to every address, and global
# IPv6 on the gateway and the LAN (only inside this run's namespaces).
topo_banner "$NS_GW" 0.0.0.0 2222 "gateway-host-service"
ip -n "$NS_GW" addr add 2001:470:77::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add 2001:470:77::2/64 dev eth0 nodad
topo_bg "$NS_GW" gw6 socat TCP6-LISTEN:2223,bind=[2001:470:77::1],fork,reuseaddr SYSTEM:"echo gw6"
topo_bg "$NS_LAN" lan6 socat TCP6-LISTEN:2222,bind=[2001:470:77::2],fork,reuseaddr SYSTEM:"echo lan6"
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
ok "moat-proxy starts and listens on $GW_ADDR:3128"
pid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)

# --- privileges ---------------------------------------------------------
expect_eq "runs as nobody" "$(id -u nobody)" "$(awk '/^Uid:/ {print $2}' /proc/$pid/status)"
expect_eq "no_new_privs is set" "1" "$(awk '/^NoNewPrivs:/ {print $2}' /proc/$pid/status)"
expect_eq "seccomp filter installed" "2" "$(awk '/^Seccomp:/ {print $2}' /proc/$pid/status)"
expect_eq "not dumpable (no core dumps)" "1" \
	"$(stat -c %u /proc/$pid/mem | awk -v r=0 '{print ($1 == r) ? 1 : 0}')"
expect_eq "gateway CA key is mode 0600" "600" "$(stat -c %a "$PX_DIR/state/proxy-ca.key")"

# --- injection ------------------------------------------------------------
out=$(px_curl agent https://api.bound.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER")
expect_match "bound host receives the real secret" "Authorization: Bearer $PX_SECRET" \
	"$(cat "$PX_DIR/bound.log" 2>/dev/null)"
expect_match "guest's echo shows the placeholder" "Bearer $PX_PLACEHOLDER" "$out"
expect_fail "guest never sees the real value" grep -q "$PX_SECRET" <<<"$out"
expect_match "injection is audited by name" '"event":"inject".*"secret":"api"' \
	"$(cat "$TOPO_TMP/moat-proxy.log")"

: >"$PX_DIR/bound.log"
px_curl agent https://api.bound.test/echo -u "user:$PX_PLACEHOLDER" >/dev/null
want=$(printf 'user:%s' "$PX_SECRET" | base64)
expect_match "Basic credentials: placeholder replaced inside base64" "Basic $want" \
	"$(cat "$PX_DIR/bound.log")"

: >"$PX_DIR/bound.log"
px_curl agent https://api.bound.test/echo -d "token=$PX_PLACEHOLDER" \
	-H "X-Other: $PX_PLACEHOLDER" >/dev/null
expect_fail "never injected into a body or another header" grep -q "$PX_SECRET" "$PX_DIR/bound.log"

out=$(px_curl agent https://api.bound.test/leak -D -)
expect_match "real value in a response body (split across chunks) becomes the placeholder" \
	"key=$PX_PLACEHOLDER;end" "$out"
expect_match "real value in a response header becomes the placeholder" \
	"X-Echo-Key: $PX_PLACEHOLDER" "$out"

: >"$PX_DIR/bound.log"
code=$(px_curl agent https://api.bound.test/echo -o /dev/null -w '%{http_code}' \
	-H "Host: other.test" -H "Authorization: Bearer $PX_PLACEHOLDER")
expect_eq "Host disagreeing with SNI gets 421" "421" "$code"
expect_eq "... and nothing reached the server" "" "$(cat "$PX_DIR/bound.log")"

px_curl plain https://api.bound.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" >/dev/null
expect_fail "a guest not entitled gets no injection even to the bound host" \
	grep -q "$PX_SECRET" "$PX_DIR/bound.log"

px_curl agent https://other.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" >/dev/null
expect_match "unbound host receives only the placeholder" "Bearer $PX_PLACEHOLDER" \
	"$(cat "$PX_DIR/other.log")"
expect_fail "... never the real value" grep -q "$PX_SECRET" "$PX_DIR/other.log"

# --- certificates: intercepted vs spliced ------------------------------------
issuer() {
	in_ns "$TOPO-$1" timeout 5 openssl s_client -proxy $GW_ADDR:3128 \
	    -connect "$2":443 -servername "$2" </dev/null 2>/dev/null |
	    sed -n 's/^issuer=//p' | head -1
}
expect_match "a non-intercepted host presents its own certificate" \
	"moat test upstream CA" "$(issuer agent other.test)"
expect_match "an intercepted host presents a gateway leaf" \
	"moat gateway CA" "$(issuer agent api.bound.test)"
expect_fail "the gateway CA does not validate a spliced host" \
	in_ns "$TOPO-agent" curl -sS --max-time 5 -x http://$GW_ADDR:3128 \
	--cacert "$PX_DIR/state/proxy-ca.crt" https://other.test/echo

# --- refusals ---------------------------------------------------------------
connect_code() {	# connect_code GUEST HOST:PORT
	in_ns "$TOPO-$1" curl -s --max-time 5 -o /dev/null -w '%{http_connect}' \
	    -x http://$GW_ADDR:3128 -p "https://$2/" 2>/dev/null
}
expect_eq "CONNECT to 192.168.77.2 is refused (403)" "403" "$(connect_code agent $LAN_HOST:443)"
expect_eq "CONNECT to a name that resolves into the LAN is refused" "403" \
	"$(connect_code agent lan.test:443)"
expect_eq "a name with one private answer among public ones is refused" "403" \
	"$(connect_code agent mixed.test:443)"
expect_eq "CONNECT to 0x7f.1 (127.0.0.1 spelt oddly) is refused" "403" \
	"$(connect_code agent 0x7f.1:443)"
expect_eq "CONNECT to [::ffff:192.168.77.2] is refused" "403" \
	"$(connect_code agent '[::ffff:192.168.77.2]:443')"
expect_match "refusal is audited with its reason" \
	'"event":"refuse".*"host":"lan.test".*"reason":"name resolves to a private address"' \
	"$(cat "$TOPO_TMP/moat-proxy.log")"
expect_eq "allowlist: a listed name is allowed" "200" \
	"$(px_curl listed https://api.bound.test/echo -o /dev/null -w '%{http_code}')"
expect_eq "allowlist: an unlisted name is refused" "403" "$(connect_code listed other.test:443)"
expect_eq "allowlist: an address literal is refused" "403" "$(connect_code listed $PX_OTHER:443)"
expect_eq "plain HTTP through the proxy works" "200" \
	"$(px_curl agent http://other.test/echo -o /dev/null -w '%{http_code}')"
expect_eq "plain HTTP to a LAN address is refused" "403" \
	"$(px_curl agent http://$LAN_HOST/ -o /dev/null -w '%{http_code}')"
: >"$PX_DIR/plain80.log"
px_curl agent http://other.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" -o /dev/null
expect_eq "plaintext upstream: a placeholder is blocked, never injected" "" \
	"$(cat "$PX_DIR/plain80.log")"
# --- the proxy dials only what the guest could reach directly ---------------
expect_eq "CONNECT to the gateway's uplink address is refused" "403" \
	"$(connect_code agent 203.0.113.1:2222)"
expect_eq "CONNECT to the gateway's LAN address is refused" "403" \
	"$(connect_code agent 192.168.77.1:2222)"
expect_eq "absolute-URI to the gateway's uplink address is refused" "403" \
	"$(px_curl agent http://203.0.113.1:2222/ -o /dev/null -w '%{http_code}')"
expect_eq "CONNECT to the gateway's global IPv6 address is refused" "403" \
	"$(connect_code agent '[2001:470:77::1]:2223')"
expect_eq "CONNECT to a LAN host's global IPv6 address is refused" "403" \
	"$(connect_code agent '[2001:470:77::2]:2222')"
expect_eq "CONNECT to an IPv6 ULA is refused" "403" "$(connect_code agent '[fd00::1]:443')"
expect_eq "CONNECT to IPv6 link-local is refused" "403" "$(connect_code agent '[fe80::1]:443')"
expect_eq "CONNECT to another guest is refused" "403" "$(connect_code agent 10.77.0.11:80)"
expect_match "the refusal names the gateway host" \
	'"event":"refuse".*"reason":"an address of the gateway host"' "$(cat "$TOPO_TMP/moat-proxy.log")"
ip -n "$NS_GW" addr add 203.0.113.77/24 dev up0
expect_eq "an address the gateway gains later is refused too (RTM_NEWADDR)" "403" \
	"$(connect_code agent 203.0.113.77:2222)"
ip -n "$NS_GW" addr del 203.0.113.77/24 dev up0
expect_eq "exception: an open sandbox reaches it (default)" "200" \
	"$(connect_code agent $LAN_HOST:22)"
expect_eq "exception: not for an allowlist sandbox it does not name" "403" \
	"$(connect_code listed lan.test:22)"
expect_eq "allowlist: a listed name on a port not in allow_ports is refused" "403" \
	"$(connect_code listed api.bound.test:8443)"
expect_eq "an unknown source address is refused: closed unanswered (no CONNECT code)" "000" \
	"$(in_ns "$NS_GW" curl -s --max-time 5 -o /dev/null -w '%{http_connect}' \
	  -x http://$GW_ADDR:3128 -p https://other.test/ 2>/dev/null)"

# --- inspect: every TLS connection is intercepted -----------------------------
code=$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer $PX_PLACEHOLDER")
expect_eq "inspect: placeholder to an unbound host is blocked (403)" "403" "$code"
code=$(px_curl inspect "https://other.test/echo?k=moat-api-PLACEH%4fLDER" -o /dev/null \
	-w '%{http_code}')
expect_eq "inspect: percent-encoded placeholder in the URL is blocked" "403" "$code"
code=$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}' \
	-u "me:$PX_PLACEHOLDER")
expect_eq "inspect: placeholder inside Basic credentials is blocked" "403" "$code"
code=$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}' \
	--data-binary '{"k":"moat-api-\u0050LACEHOLDER"}')
expect_match "inspect: JSON-escaped placeholder in a body is blocked" "^(403|000)$" "$code"
expect_match "blocked placeholder is audited" '"event":"placeholder-blocked".*"secret":"api"' \
	"$(cat "$TOPO_TMP/moat-proxy.log")"
expect_eq "inspect: clean requests pass" "200" \
	"$(px_curl inspect https://other.test/echo -o /dev/null -w '%{http_code}')"
expect_fail "upstream certificate must match the name (gh.bound.test served as other.test)" \
	px_curl inspect https://gh.bound.test/echo

# --- streaming and upgrade -------------------------------------------------
sse=$(in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" <<'PY'
import socket, ssl, sys, time
s = socket.create_connection(("10.77.0.1", 3128), timeout=5)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
assert b" 200 " in s.recv(4096)
ctx = ssl.create_default_context(cafile=sys.argv[1])
t = ctx.wrap_socket(s, server_hostname="api.bound.test")
t.sendall(b"GET /sse HTTP/1.1\r\nHost: api.bound.test\r\n\r\n")
start, seen, buf = time.time(), [], b""
while len(seen) < 3:
    d = t.recv(4096)
    if not d:
        break
    buf += d
    while b"data: event %d" % len(seen) in buf:
        seen.append(time.time() - start)
print(" ".join("%.2f" % x for x in seen))
PY
)
set -- $sse
expect_eq "SSE: all three events arrive" "3" "$#"
expect_eq "SSE: events arrive one by one (first well before last)" "yes" \
	"$(awk -v a="${1:-9}" -v c="${3:-0}" 'BEGIN { print (c - a > 0.6) ? "yes" : "no" }')"

ws=$(in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" <<'PY'
import socket, ssl, sys
s = socket.create_connection(("10.77.0.1", 3128), timeout=5)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
s.recv(4096)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="api.bound.test")
t.sendall(b"GET /ws HTTP/1.1\r\nHost: api.bound.test\r\nConnection: Upgrade\r\n"
          b"Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          b"Sec-WebSocket-Version: 13\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += t.recv(4096)
t.sendall(b"\x81\x05hello")
print(head.split(b"\r\n")[0].decode(), t.recv(4096))
PY
)
expect_match "websocket: 101 then echo through the interception" "101.*hello" "$ws"

# --- strict HTTP: smuggling shapes ------------------------------------------------
raw() {	# raw REQUEST -- send bytes to the explicit proxy from the agent
	in_ns "$TOPO-agent" python3 -c '
import socket, sys
s = socket.create_connection(("10.77.0.1", 3128), timeout=5)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode("latin-1"))
s.shutdown(socket.SHUT_WR)
d = b""
while True:
    x = s.recv(4096)
    if not x: break
    d += x
print(d.split(b"\r\n")[0].decode("latin-1"))' "$1" 2>&1
}
U='GET http://other.test/echo HTTP/1.1\r\nHost: other.test\r\n'
while IFS='|' read -r what req; do
	expect_match "smuggling refused: $what" "^HTTP/1.1 (400|431) " "$(raw "$req")"
done <<EOF
CL with TE|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
duplicate Content-Length|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx
Content-Length list|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nContent-Length: 1, 1\r\n\r\nx
obs-fold|${U}X-A: 1\r\n  folded\r\n\r\n
bare LF|GET http://other.test/echo HTTP/1.1\nHost: other.test\n\n
bare CR|${U}X-A: a\rb\r\n\r\n
space before colon|${U}X-A : 1\r\n\r\n
TE other than chunked|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n
duplicate Host|${U}Host: lan.test\r\n\r\n
invalid chunk size|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n
chunk size overflow|POST http://other.test/echo HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nx\r\n0\r\n\r\n
HTTP/1.1 without Host|GET http://other.test/echo HTTP/1.1\r\n\r\n
NUL in a value|${U}X-A: a\x00b\r\n\r\n
EOF
big=$(head -c 20000 /dev/zero | tr '\0' a)
expect_match "oversized head is refused (431)" "^HTTP/1.1 431 " "$(raw "${U}X-Big: $big\r\n\r\n")"

# --- slowloris does not hurt others -------------------------------------------
in_ns "$TOPO-plain" python3 -c '
import socket, time
ss = [socket.create_connection(("10.77.0.1", 3128)) for _ in range(50)]
for s in ss: s.sendall(b"GET http://other.test/ HTTP/1.1\r\n")
print("ready", flush=True)
time.sleep(60)' >"$TOPO_TMP/slow" 2>&1 &
slow=$!
wait_for 30 grep -q ready "$TOPO_TMP/slow"	# all 50 heads are open
expect_eq "while 50 slow heads are open, another sandbox is served" "200" \
	"$(px_curl agent https://api.bound.test/echo -o /dev/null -w '%{http_code}')"
kill $slow 2>/dev/null; wait $slow 2>/dev/null

expect_fail "the real value never appears in the proxy's log" \
	grep -q "$PX_SECRET" "$TOPO_TMP/moat-proxy.log"
expect_ok "moat-proxy is still running" kill -0 "$pid"
tap_done
