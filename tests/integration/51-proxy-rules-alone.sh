#!/usr/bin/env bash
# moat-proxy run on its own (no gatewayd): request rules still apply, and
# the proxy counts the budget itself.  Secret "api" may be used only for
# "GET /echo", twice a minute.  Real curl in a guest namespace, the HTTPS
# echo server in the internet namespace.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
sed -i "s|placeholder = \"$PX_PLACEHOLDER\"; },|placeholder = \"$PX_PLACEHOLDER\";\n    requests = [ \"GET /echo\" ]; budget = { requests_per_minute = 2; }; },|" \
	"$TOPO_TMP/moat.conf"
expect_match "the configuration has the rule" 'requests = \[ "GET /echo" \]' "$(cat "$TOPO_TMP/moat.conf")"
proxy_servers || not_ok "test servers start"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }

api() {	# api METHOD -- status of METHOD /echo with the placeholder
	px_curl agent https://api.bound.test/echo -X "$1" -o /dev/null -w '%{http_code}' \
	    -H "Authorization: Bearer $PX_PLACEHOLDER"
}
# The budget counts the last 60 seconds: the three requests below fall in
# them wherever a calendar minute begins.
: >"$PX_DIR/bound.log"
expect_eq "GET /echo is allowed (200)" 200 "$(api GET)"
expect_match "... with the real value" "^Authorization: Bearer $PX_SECRET" "$(cat "$PX_DIR/bound.log")"
expect_eq "POST /echo is refused (403)" 403 "$(api POST)"
expect_eq "GET /echo again (200)" 200 "$(api GET)"
expect_eq "a third in the minute is over budget (429)" 429 "$(api GET)"
log=$(cat "$TOPO_TMP/moat-proxy.log")
expect_match "the refusal is audited" '"event":"request-refused".*"secret":"api","method":"POST","path":"/echo","status":403' "$log"
expect_match "the budget refusal is audited" '"event":"request-over-budget".*"secret":"api".*"budget":"minute"' "$log"
expect_match "the injected request is audited with its status and size" \
	'"event":"request".*"secret":"api","method":"GET","path":"/echo","status":200,"bytes":[1-9]' "$log"
expect_fail "the real value never appears in the proxy's log" grep -qF "$PX_SECRET" "$TOPO_TMP/moat-proxy.log"
tap_done
