#!/usr/bin/env bash
# A secret injected only for the requests it is meant for, within a
# budget.  gatewayd runs the proxy; secret "gh" (bound to api.bound.test)
# allows "GET /repos/acme/*", "POST /repos/acme/*/issues/*/comments" and
# "GET /sse", at most 3 requests a minute.  Real curl in a guest
# namespace, the HTTPS echo server in the internet namespace; the
# budgets' clock is a file (gatewayd --test-clock) so a minute passes
# without waiting for it.
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
CLOCK=$TOPO_TMP/clock
T0=$(( 1800000000 - 1800000000 % 60 + 5 ))	# 5 s into a minute
echo $T0 >"$CLOCK"
mkdir -p "$PX_DIR/state" "$PX_DIR/secrets" && chmod 0700 "$PX_DIR/secrets"
printf '%s\n' "$PX_SECRET" >"$PX_DIR/secrets/api"
printf '%s\n' "$GH_REAL" >"$PX_DIR/secrets/gh"
chmod 0600 "$PX_DIR/secrets/api" "$PX_DIR/secrets/gh"
# Interception off as before: every request here goes to the explicit proxy.
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "gh"; file = "$PX_DIR/secrets/gh"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$GH_PH";
    requests = [ "GET /repos/acme/*", "POST /repos/acme/*/issues/*/comments",
                 "GET /sse" ];
    budget = { requests_per_minute = 3; requests_per_day = 100; }; },
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "other.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "gh", "api" ]; }
);
CONF
gw_start --test-clock "$CLOCK"; expect_eq "gatewayd starts" 0 $?
proxy_up() { [ -n "$(gw_child_pid proxy)" ] && topo_listening "$NS_GW" $GW_ADDR 3128; }
wait_for 30 proxy_up || not_ok "the proxy listens"
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"

# gh METHOD PATH [curl args] -- status code; the body goes to $TOPO_TMP/body
gh() {
	local m=$1 p=$2; shift 2
	px_curl agent "https://api.bound.test$p" --path-as-is -X "$m" \
	    -H "Authorization: Bearer $GH_PH" -o "$TOPO_TMP/body" \
	    -D "$TOPO_TMP/headers" -w '%{http_code}' "$@"
}
reached() { grep -c "^$1 $2 HTTP" "$PX_DIR/bound.log" 2>/dev/null; }
: >"$PX_DIR/bound.log"

# --- allowed method and path: injected ---------------------------------
expect_eq "GET /repos/acme/widgets is allowed (200)" 200 "$(gh GET /repos/acme/widgets)"
expect_match "... and the real value was injected" "^Authorization: Bearer $GH_REAL" \
	"$(cat "$PX_DIR/bound.log")"
expect_eq "an encoded unreserved letter is the same path (200)" 200 "$(gh GET /repos/%61cme/gadgets)"

# --- refused: wrong method, wrong path, normalisation tricks -------------
refused() {	# refused DESCRIPTION METHOD PATH
	local code
	code=$(gh "$2" "$3")
	expect_eq "$1 is refused (403)" 403 "$code"
	expect_match "... the body names the secret and its rules" \
		'moat: secret "gh": .*its request rules allow only: GET /repos/acme/\*, POST /repos/acme/\*/issues/\*/comments, GET /sse' \
		"$(cat "$TOPO_TMP/body")"
	expect_eq "... and it never reached the server" 0 "$(reached "$2" "$3")"
}
refused "a wrong method (DELETE /repos/acme/widgets)" DELETE /repos/acme/widgets
refused "a wrong path (GET /repos/other/widgets)" GET /repos/other/widgets
refused "a path one segment deeper" GET /repos/acme/widgets/secrets
refused "/repos/acme/../other" GET /repos/acme/../other
refused "/repos/acme/x/../../other/x" GET /repos/acme/x/../../other/x
refused "/repos/acme/.. (a '*' would take the dots)" GET /repos/acme/..
refused "/repos/acme/%2e%2e" GET /repos/acme/%2e%2e
refused "/repos/acme/%2e%2e/other" GET /repos/acme/%2e%2e/other
refused "/repos/acme/%2E%2e/other" GET /repos/acme/%2E%2e/other
refused "//repos/acme/x (an empty segment)" GET //repos/acme/x
refused "/repos/acme%2fx (an encoded slash)" GET /repos/acme%2fx
refused "/Repos/acme/x (the origin's paths are case-sensitive)" GET /Repos/acme/x
refused "/repos/ACME/x" GET /repos/ACME/x
expect_match "the 403 says why a trick was refused" 'the path has no normal form' \
	"$(gh GET /repos/acme/../other >/dev/null; cat "$TOPO_TMP/body")"

# --- budget: 3 a minute, two used above -----------------------------------
expect_eq "POST a comment is allowed (200)" 200 \
	"$(gh POST /repos/acme/w/issues/7/comments -d 'hello')"
expect_eq "the fourth request of the minute is over budget (429)" 429 \
	"$(gh GET /repos/acme/widgets)"
expect_match "... with Retry-After: the seconds until the oldest of them is a minute old" '^Retry-After: 60' \
	"$(tr -d '\r' <"$TOPO_TMP/headers")"
expect_match "... the body names the secret and the budget" \
	'secret "gh": budget of 3 requests per minute spent' "$(cat "$TOPO_TMP/body")"
expect_eq "... and it never reached the server" 1 "$(reached GET /repos/acme/widgets)"
out=$(gw_ctl secret list)
expect_match "secret list shows usage against budget" '^gh .*budget 3/3 per minute, 3/100 per day  3 request rules' "$out"
out=$(gw_ctl secret list --json)
expect_ok "secret list --json: rules and usage" python3 -c '
import json, sys
v = {x["name"]: x for x in json.loads(sys.argv[1])}
b = v["gh"]["budget"]
assert b == {"requests_per_minute": 3, "used_minute": 3, "requests_per_day": 100, "used_day": 3}, b
assert v["gh"]["requests"][0] == "GET /repos/acme/*", v
assert v["api"]["budget"] is None and v["api"]["requests"] is None, v' "$out"

# --- counters survive a reload and a proxy restart ----------------------
old=$(gw_proxy_pids)
gw_ctl reload >/dev/null; expect_eq "reload" 0 $?
expect_eq "an unchanged reload keeps the proxy workers" "$old" "$(gw_proxy_pids)"
new_proxy() { gw_proxy_new "$old" && proxy_up; }
expect_eq "after a reload the budget is still spent (429)" 429 "$(gh GET /repos/acme/widgets)"
old=$(gw_proxy_pids)
kill -KILL $old
wait_for 60 new_proxy || not_ok "the proxy restarted"
expect_eq "after a proxy restart the budget is still spent (429)" 429 "$(gh GET /repos/acme/widgets)"

# --- the next minute: recovered -------------------------------------------
echo $(( T0 + 60 )) >"$CLOCK"
expect_eq "a minute later the budget is back (200)" 200 "$(gh GET /repos/acme/widgets?token=q-$$)"
expect_match "secret list shows the new minute" '^gh .*budget 1/3 per minute, 4/100 per day' \
	"$(gw_ctl secret list)"

# --- streaming is unaffected ------------------------------------------------
out=$(px_curl agent https://api.bound.test/sse -N -H "Authorization: Bearer $GH_PH")
expect_eq "an allowed SSE stream delivers its 3 events" 3 "$(grep -c '^data: event' <<<"$out")"
t0=$(sed -n 's/^data: event 0 t=//p' <<<"$out"); t2=$(sed -n 's/^data: event 2 t=//p' <<<"$out")
expect_ok "... as they were sent, 0.8 s apart" python3 -c "assert $t2 - $t0 > 0.6"

# --- a secret without requests: today's behaviour ----------------------------
: >"$PX_DIR/other.log"
code=$(px_curl agent https://other.test/echo -X DELETE -H "Authorization: Bearer $PX_PLACEHOLDER" \
	-o /dev/null -w '%{http_code}')
expect_eq "a secret without request rules is injected into any request (200)" 200 "$code"
expect_match "... with its real value" "^Authorization: Bearer $PX_SECRET" "$(cat "$PX_DIR/other.log")"

# --- a malformed rule in a reload: an error with file:line, nothing changes ---
cp "$GW_CONF" "$TOPO_TMP/good.conf"
sed -i 's|"GET /sse" \]|"GET /sse", "GET /repos/ac*" ]|' "$GW_CONF"
out=$(gw_ctl reload 2>&1); rc=$?
expect_eq "a reload with a malformed rule is refused (exit 1)" 1 $rc
expect_match "... naming file and line" \
	"moat.conf:[0-9]+: secret \"gh\": requests: '\\*' and '\\*\\*' stand for whole segments; got \"ac\\*\"" "$out"
expect_eq "... and the running rules still refuse (403)" 403 "$(gh DELETE /repos/acme/widgets)"
cp "$TOPO_TMP/good.conf" "$GW_CONF"

# --- the audit ----------------------------------------------------------------
expect_match "refusals are visible in ctl log" '"event":"request-over-budget"' "$(gw_ctl log)"
log=$(cat "$GW_AUDIT")
expect_eq "every rule refusal is audited" 15 "$(grep -c '"event":"request-refused"' <<<"$log")"
expect_match "... with method, normalised or raw path, status and secret" \
	'"event":"request-refused".*"host":"api.bound.test","secret":"gh","method":"DELETE","path":"/repos/acme/widgets","status":403' "$log"
expect_match "... a trick with the path it came with" \
	'"event":"request-refused".*"method":"GET","path":"/repos/acme/%2e%2e/other","status":403' "$log"
expect_eq "every budget refusal is audited" 3 "$(grep -c '"event":"request-over-budget"' <<<"$log")"
expect_match "... saying which budget and when to retry" \
	'"event":"request-over-budget".*"secret":"gh".*"status":429,"budget":"minute","retry_after":60' "$log"
expect_match "an injected request is audited with method, normalised path, status and size" \
	'"event":"request".*"secret":"gh","method":"GET","path":"/repos/acme/gadgets","status":200,"bytes":[1-9]' "$log"
expect_match "... a POST too" '"event":"request".*"method":"POST","path":"/repos/acme/w/issues/7/comments","status":200' "$log"
expect_match "... and the secret without rules" \
	'"event":"request".*"host":"other.test","secret":"api","method":"DELETE","path":"/echo","status":200' "$log"
expect_fail "no query string in the audit" grep -q "q-$$" <<<"$log"
expect_fail "the real values appear in no log" grep -qF -e "$GH_REAL" -e "$PX_SECRET" "$GW_AUDIT" "$GW_LOG"
tap_done
