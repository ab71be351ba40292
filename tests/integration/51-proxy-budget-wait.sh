#!/usr/bin/env bash
# A request that carries a budgeted secret waits for gatewayd to charge
# the budget, and then goes on from the head the proxy parsed before the
# wait: each head is parsed once, however long the answer takes.  The
# guest pipelines two such requests on one intercepted connection while
# gatewayd's parent is stopped (no answer comes); neither reaches the
# server until the parent runs again, then both are answered in order.
# gatewayd runs with -v, so the proxy logs each head it parses ("request
# N: head parsed"); a proxy that parsed again after the answer would log
# more of them.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs || not_ok "test certificates"
proxy_servers || not_ok "test servers start"

GH_PH=moat-gh-PLACEHOLDER
GH_REAL=ghp-real-value-77
mkdir -p "$PX_DIR/state" "$PX_DIR/secrets" && chmod 0700 "$PX_DIR/secrets"
printf '%s\n' "$GH_REAL" >"$PX_DIR/secrets/gh"
chmod 0600 "$PX_DIR/secrets/gh"
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "gh"; file = "$PX_DIR/secrets/gh"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$GH_PH";
    requests = [ "GET /repos/acme/*" ];
    budget = { requests_per_minute = 10; requests_per_day = 100; }; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "gh" ]; }
);
CONF
gw_start -v; expect_eq "gatewayd starts (-v: its children log debug)" 0 $?
proxy_up() { [ -n "$(gw_child_pid proxy)" ] && topo_listening "$NS_GW" $GW_ADDR 3128; }
wait_for 30 proxy_up || not_ok "the proxy listens"
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
reached() { grep -c "^GET $1 HTTP" "$PX_DIR/bound.log" 2>/dev/null; }
: >"$PX_DIR/bound.log"

# The host's leaf is made now, so that the wait below is the budget's alone.
code=$(px_curl agent https://api.bound.test/repos/acme/first -o /dev/null \
	-w '%{http_code}' -H "Authorization: Bearer $GH_PH")
expect_eq "a budgeted request is answered (200)" 200 "$code"

req() {	# req PATH [more header lines]
	printf 'GET %s HTTP/1.1\r\nHost: api.bound.test\r\nAuthorization: Bearer %s\r\n%b\r\n' \
	    "$1" "$GH_PH" "${2:-}"
}
parent=$(ps -o ppid= -p "$(gw_child_pid proxy | sed -n 1p)" | tr -d ' ')
mark=$(wc -l <"$GW_LOG")
kill -STOP "$parent"
# Both heads in one write: the second is in the proxy's buffer while the
# first waits.
( { req /repos/acme/one; req /repos/acme/two 'Connection: close\r\n'; sleep 8; } |
	timeout 15 ip netns exec "$TOPO-agent" openssl s_client -quiet \
	    -proxy $GW_ADDR:3128 -connect api.bound.test:443 \
	    -servername api.bound.test -CAfile "$PX_DIR/bundle.crt" \
	    >"$TOPO_TMP/pipelined.out" 2>"$TOPO_TMP/pipelined.err" ) &
client=$!
sleep 2
expect_eq "while gatewayd is stopped, the first request waits (not sent)" 0 \
	"$(reached /repos/acme/one)"
kill -0 "$client" 2>/dev/null; expect_eq "... and its connection stays open" 0 $?
kill -CONT "$parent"
wait "$client"
out=$(tr -d '\r' <"$TOPO_TMP/pipelined.out")
expect_eq "once gatewayd answers, both pipelined requests are answered (200, 200)" \
	"HTTP/1.1 200 OK HTTP/1.1 200 OK" "$(grep '^HTTP/' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... each reached the server once, in order" "/repos/acme/one /repos/acme/two" \
	"$(sed -n 's|^GET \(/repos/acme/[a-z]*\) HTTP.*|\1|p' "$PX_DIR/bound.log" | grep -v first | tr '\n' ' ' | sed 's/ $//')"
expect_match "... with the real value" "^Authorization: Bearer $GH_REAL" "$(cat "$PX_DIR/bound.log")"
parsed=$(tail -n +"$((mark + 1))" "$GW_LOG" | grep -c '10\.77\.0\.10: request [0-9]*: head parsed')
expect_eq "each head was parsed once: 2 parses for 2 requests" 2 "$parsed"
expect_match "the budget was charged once for each (3 of 10 used)" '^gh .*budget 3/10 per minute' \
	"$(gw_ctl secret list)"
# A guest that resets its connection while it waits for the answer: epoll
# reports the reset on every turn of the loop even with no interest asked;
# the waiting connection is closed at once, and no worker spins.
workers=$(gw_child_pid proxy)		# asked before gatewayd stops
cputicks() { local p t=0; for p in $workers; do
	t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo $t; }
kill -STOP "$parent"
in_ns "$TOPO-agent" python3 -c 'import socket, ssl, struct, sys, time
s = socket.create_connection((sys.argv[1], 3128), timeout=5)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
r = b""
while b"\r\n\r\n" not in r:
    r += s.recv(1024)
ctx = ssl.create_default_context(cafile=sys.argv[2])
t = ctx.wrap_socket(s, server_hostname="api.bound.test")
t.sendall(b"GET /repos/acme/reset HTTP/1.1\r\nHost: api.bound.test\r\n"
    b"Authorization: Bearer " + sys.argv[3].encode() + b"\r\n\r\n")
time.sleep(2)
t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
t.close()                   # RST' $GW_ADDR "$PX_DIR/bundle.crt" "$GH_PH"
c0=$(cputicks); sleep 2; c1=$(cputicks)
closed=$(tail -n +"$((mark + 1))" "$GW_LOG" | grep -c '10\.77\.0\.10: api\.bound\.test:443: closed in state 8$')
kill -CONT "$parent"
expect_eq "a guest that reset while waiting for the answer is closed at once (S_BUDGET)" 1 "$closed"
[ $((c1 - c0)) -lt 10 ] && ok "... and the workers stay idle meanwhile ($((c1 - c0)) ticks of CPU in 2 s)" ||
	not_ok "the workers stay idle while gatewayd is stopped" "$((c1 - c0)) ticks of CPU in 2 s"
expect_eq "... and its request never reached the server" 0 "$(reached /repos/acme/reset)"

expect_fail "the real value appears in no log" grep -qF "$GH_REAL" "$GW_AUDIT" "$GW_LOG"

tap_done
