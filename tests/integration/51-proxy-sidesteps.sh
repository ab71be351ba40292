#!/usr/bin/env bash
# Ways around a secret's rules, budget and scrubbing, tried from a guest
# with real curl and a raw TLS client, against the HTTPS echo server (which
# records what reached it).  gatewayd runs two proxy workers.
#
#   company  the shared key: "GET /repos/acme/*" only
#   mine     a member's own secret on the same host and header, whose
#            value wraps company's placeholder in Basic credentials
#            ("chaining": one substitution feeding the next)
#   metered  no rules, 3 requests a minute, used from two guests that
#            reach different workers
#
# Also: a value holding a placeholder is refused by `secret set` and at
# load; the reason phrase and header names of a response never carry the
# value; method overrides and %00 never ride on an injected secret; the
# path tricks, pipelining and smuggling that held stay held.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent	# even: worker 0
topo_guest agent2 10.77.0.11 52:54:00:00:00:0b mt-agent2	# odd: worker 1
proxy_certs || not_ok "test certificates"
proxy_servers || not_ok "test servers start"

CO_PH=moat-company-PLACEHOLDER CO_REAL=sk-company-real-5e8d1c
MINE_PH=moat-mine-PLACEHOLDER MT_PH=moat-metered-PLACEHOLDER MT_REAL=mt-real-3a7b
MINE_VAL="Basic $(printf 'u:%s' "$CO_PH" | base64 -w0)"
CO_B64=$(printf 'u:%s' "$CO_REAL" | base64 -w0)
S=$PX_DIR/secrets
mkdir -p "$PX_DIR/state" "$S" && chmod 0700 "$S"
printf '%s\n' "$CO_REAL" >"$S/company"
printf '%s\n' "$MINE_VAL" >"$S/mine"
printf '%s\n' "$MT_REAL" >"$S/metered"
chmod 0600 "$S"/*
# Interception off: every request here names the proxy (curl -x), and the
# test's counts of what reached the server assume nothing else is proxied.
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; workers = 2; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "mine"; file = "$S/mine"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$MINE_PH"; },
  { name = "company"; file = "$S/company"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$CO_PH";
    requests = [ "GET /repos/acme/*" ]; },
  { name = "metered"; file = "$S/metered"; hosts = [ "api.bound.test" ];
    header = "X-Api-Key"; placeholder = "$MT_PH";
    budget = { requests_per_minute = 3; }; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "mine", "company", "metered" ]; },
  { name = "agent2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-agent2";
    egress = "open"; secrets = [ "metered" ]; }
);
CONF
gw_start; expect_eq "gatewayd starts" 0 $?
proxy_up() { [ "$(gw_proxy_pids | wc -w)" = 2 ] && topo_listening "$NS_GW" $GW_ADDR 3128; }
wait_for 30 proxy_up || not_ok "both proxy workers listen"
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"

# req GUEST METHOD PATH [curl args] -- status; body in $TOPO_TMP/body,
# head in $TOPO_TMP/headers
req() {
	local g=$1 m=$2 p=$3; shift 3
	px_curl "$g" "https://api.bound.test$p" --path-as-is -X "$m" \
	    -o "$TOPO_TMP/body" -D "$TOPO_TMP/headers" -w '%{http_code}' "$@"
}
co() { req agent "$@" -H "Authorization: Bearer $CO_PH"; }
# The request lines that reached the server (each logged record's first
# line: a body may hold more lines that look like one).
requests() { awk 'NR == 1 || prev == "----" { print } { prev = $0 }' "$PX_DIR/bound.log"; }
reached() { requests | grep -c "^$1 $2 HTTP"; }
status_line() { grep '^HTTP/' "$TOPO_TMP/headers" | tail -1 | tr -d '\r'; }

# --- chaining: one secret's value carrying another's placeholder ----------
: >"$PX_DIR/bound.log"
code=$(req agent DELETE /repos/other/x -H "Authorization: $MINE_PH")
expect_eq "a request with the member's placeholder is sent (200)" 200 "$code"
expect_match "... carrying the member's value as it is" "^Authorization: $MINE_VAL" \
	"$(cat "$PX_DIR/bound.log")"
expect_fail "... never the company key, raw or in Basic credentials" \
	grep -qF -e "$CO_REAL" -e "$CO_B64" "$PX_DIR/bound.log"
code=$(req agent GET /repos/other/x -H "Authorization: Bearer $MINE_PH $CO_PH")
expect_eq "both placeholders in one header: company's rules apply (403)" 403 "$code"
expect_match "... naming company" 'secret "company"' "$(cat "$TOPO_TMP/body")"
expect_eq "... and nothing reached the server" 0 "$(reached GET /repos/other/x)"
: >"$PX_DIR/bound.log"
code=$(req agent GET /repos/acme/x -H "Authorization: Bearer $MINE_PH $CO_PH")
expect_eq "both, where company's rules allow (200)" 200 "$code"
expect_match "... each replaced once" "^Authorization: Bearer $MINE_VAL $CO_REAL\$" \
	"$(tr -d '\r' <"$PX_DIR/bound.log")"
log=$(cat "$GW_AUDIT")
expect_match "... each injection audited by name (mine)" '"event":"inject".*"secret":"mine"' "$log"
expect_match "... each injection audited by name (company)" '"event":"inject".*"secret":"company"' "$log"
expect_match "... and the request names both" '"event":"request".*"secret":"mine,company","method":"GET","path":"/repos/acme/x"' "$log"

# --- a budget is one across workers and reloads (regression) -----------------
mt() { req "$1" GET /echo -H "X-Api-Key: $MT_PH"; }
expect_eq "metered from agent (worker 0): 200" 200 "$(mt agent)"
expect_eq "metered from agent2 (worker 1): 200" 200 "$(mt agent2)"
gw_ctl reload >/dev/null; expect_eq "reload" 0 $?
expect_eq "metered from agent after a reload: 200" 200 "$(mt agent)"
expect_eq "the fourth in the minute, from agent2, is over budget (429)" 429 "$(mt agent2)"
expect_eq "... and from agent (429)" 429 "$(mt agent)"
log=$(cat "$GW_AUDIT")
expect_match "worker 0 served one" '"worker":0,.*"event":"request".*"secret":"metered"' "$log"
expect_match "worker 1 served one" '"worker":1,.*"event":"request".*"secret":"metered"' "$log"

# --- a value holding a placeholder is refused --------------------------------
out=$(printf 'Bearer %s\n' "$CO_PH" | gw_ctl secret set chained --host api.bound.test 2>&1); rc=$?
expect_eq "secret set: a value holding a placeholder is refused (exit 1)" 1 $rc
expect_match "... saying why" 'the value contains the placeholder of a secret; a value may hold no placeholder' "$out"
expect_fail "... and nothing was written" test -e "$(dirname "$GW_CONF")/secrets.d/chained.conf"
cp "$GW_CONF" "$TOPO_TMP/good.conf"
printf 'x-%s-y\n' "$MT_PH" >"$S/raw"; chmod 0600 "$S/raw"
sed -i "s|^secrets = (|secrets = (\n  { name = \"raw\"; file = \"$S/raw\"; hosts = [ \"api.bound.test\" ];\n    placeholder = \"moat-raw-PLACEHOLDER\"; },|" "$GW_CONF"
out=$(gw_ctl reload 2>&1); rc=$?
expect_eq "a reload whose secret value holds a placeholder is refused (exit 1)" 1 $rc
expect_match "... naming file, line and both secrets" \
	"moat.conf:[0-9]+: secret \"raw\": its value \\($S/raw\\) contains the placeholder of secret \"metered\"" "$out"
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1); rc=$?
expect_eq "gatewayd -n refuses it too (exit 1)" 1 $rc
expect_match "... with the same message" 'secret "raw": its value .* contains the placeholder of secret "metered"' "$out"
cp "$TOPO_TMP/good.conf" "$GW_CONF"

# --- responses: the reason phrase and header names ---------------------------
: >"$PX_DIR/bound.log"
code=$(co GET '/repos/acme/x?echo=reason')
expect_eq "a 401 whose reason echoes the key reaches the guest as 401" 401 "$code"
expect_match "... with the standard reason phrase" '^HTTP/1.1 401 Unauthorized$' \
	"$(status_line)"
expect_match "... although the server sent the key in it (the test works)" "^Authorization: Bearer $CO_REAL" \
	"$(cat "$PX_DIR/bound.log")"
expect_fail "... the guest never sees the key" grep -qF "$CO_REAL" "$TOPO_TMP/headers" "$TOPO_TMP/body"
code=$(co GET '/repos/acme/x?echo=name')
expect_eq "a header named after the key: 200" 200 "$code"
expect_fail "... the header is not passed on" grep -qF "$CO_REAL" "$TOPO_TMP/headers" "$TOPO_TMP/body"
code=$(req agent GET '/echo?echo=reason')
expect_match "any reason phrase is the standard one, with no secret too" '^HTTP/1.1 401 Unauthorized$' \
	"$(status_line)"

# --- method overrides and %00 do not ride on a secret -------------------------
: >"$PX_DIR/bound.log"
for h in X-HTTP-Method-Override X-HTTP-Method X-Method-Override x-http-method-override; do
	code=$(co GET /repos/acme/x -H "$h: DELETE")
	expect_eq "$h with the secret is refused (403)" 403 "$code"
	expect_match "... saying why" 'moat: .*method override' "$(cat "$TOPO_TMP/body")"
done
for q in '_method=DELETE' 'a=1&_method=DELETE' '%5Fmethod=DELETE' '_METHOD=delete' '.method=DELETE'; do
	code=$(co GET "/repos/acme/x?$q")
	expect_eq "?$q with the secret is refused (403)" 403 "$code"
done
code=$(co GET /repos/acme/x%00.json)
expect_eq "%00 in the path with the secret is refused (403)" 403 "$code"
expect_match "... saying why" 'moat: .*%00' "$(cat "$TOPO_TMP/body")"
code=$(req agent GET /echo -H "X-Api-Key: $MT_PH" -H "X-HTTP-Method-Override: DELETE")
expect_eq "an override with a secret that has no rules is refused too (403)" 403 "$code"
expect_eq "none of them reached the server" 0 "$(requests | grep -c .)"
code=$(req agent GET '/echo?_method=DELETE' -H "X-HTTP-Method-Override: DELETE")
expect_eq "without a secret they pass (200)" 200 "$code"
expect_eq "?method= is not _method (200)" 200 "$(co GET '/repos/acme/x?method=DELETE')"
log=$(cat "$GW_AUDIT")
expect_match "the refusal is audited" \
	'"event":"request-refused".*"secret":"company","method":"GET","path":"/repos/acme/x","status":403,"reason":"a method override' "$log"

# --- path tricks that hold (regression) -----------------------------------------
: >"$PX_DIR/bound.log"
for p in /repos/acme/../other /repos/acme/%2e%2e/other /repos/acme/%2E%2E/other \
    /repos/acme%2fother /repos/acme%2Fx /repos/acme%5cx '/repos/acme\x' //repos/acme/x \
    /repos//acme/x /repos/acme/..%3b/other '/repos/acme/..;/other' '/repos/acme/x/..;/..;/other' \
    /repos/acme/%252e%252e/other /Repos/acme/x /repos/ACME/x /repos/acme/x/y; do
	expect_eq "GET $p is refused (403)" 403 "$(co GET "$p")"
done
expect_eq "none of them reached the server" 0 "$(requests | grep -c .)"

# --- pipelining, keep-alive, smuggling (regression) ------------------------------
# raw REQUESTS -- sent over TLS to api.bound.test in one write, or, for
# keep-alive, in parts split at "|NEXT|", each sent once the response to
# the one before has ended; prints each response's status code,
# space-separated
raw() {
	in_ns "$TOPO-agent" python3 - "$PX_DIR/bundle.crt" "$1" <<'PY'
import socket, ssl, sys
s = socket.create_connection(("10.77.0.1", 3128), timeout=8)
s.sendall(b"CONNECT api.bound.test:443 HTTP/1.1\r\nHost: api.bound.test:443\r\n\r\n")
s.recv(4096)
t = ssl.create_default_context(cafile=sys.argv[1]).wrap_socket(s, server_hostname="api.bound.test")
parts = sys.argv[2].encode().decode("unicode_escape").encode("latin-1").split(b"|NEXT|")
data = b""
for p in parts[:-1]:
    t.sendall(p)
    while not data.endswith(b"0\r\n\r\n"):    # a response re-chunked by the proxy
        data += t.recv(65536)
t.sendall(parts[-1])
try:
    while True:
        d = t.recv(65536)
        if not d:
            break
        data += d
except (socket.timeout, ssl.SSLError):
    pass
print(" ".join(l.split(b" ")[1].decode() for l in data.split(b"\r\n") if l.startswith(b"HTTP/1.")))
PY
}
A="Authorization: Bearer $CO_PH"
: >"$PX_DIR/bound.log"
out=$(raw "GET /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\nDELETE /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nConnection: close\r\n\r\n")
expect_eq "pipelined: the allowed GET is served, the DELETE after it refused" "200 403" "$out"
out=$(raw "GET /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\nGET /repos/acme/../../admin HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nConnection: close\r\n\r\n")
expect_eq "pipelined: a trick after an allowed request is refused" "200 403" "$out"
out=$(raw "GET /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\n|NEXT|DELETE /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nConnection: close\r\n\r\n")
expect_eq "keep-alive: a DELETE after a served GET on the same connection is refused" "200 403" "$out"
out=$(raw "GET /echo HTTP/1.1\r\nHost: api.bound.test\r\n\r\n|NEXT|GET /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nX-HTTP-Method-Override: DELETE\r\nConnection: close\r\n\r\n")
expect_eq "keep-alive: an override after a request without a secret is refused" "200 403" "$out"
out=$(raw "POST /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nDELETE /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\n\r\n")
expect_eq "Content-Length with Transfer-Encoding is refused (400), nothing after it read" "400" "$out"
out=$(raw "GET /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n$A\r\nContent-Length: 55\r\n\r\nDELETE /repos/acme/x HTTP/1.1\r\nHost: api.bound.test\r\n\r\nGET /repos/acme/y HTTP/1.1\r\nHost: api.bound.test\r\nConnection: close\r\n\r\n")
expect_eq "a request smuggled in a body is a body, not a request" "200 200" "$out"
expect_eq "no DELETE ever reached the server" 0 "$(requests | grep -c '^DELETE')"

expect_fail "the real values appear in no log" \
	grep -qF -e "$CO_REAL" -e "$MT_REAL" -e "$CO_B64" "$GW_AUDIT" "$GW_LOG"
tap_done
