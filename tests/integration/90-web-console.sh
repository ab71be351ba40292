#!/usr/bin/env bash
# The web console (moat-web): served on a management address only, with
# a certificate of its own, by an unprivileged process that acts only as
# the user who logged in through a one-time link.  Driven by a real
# headless browser (Debian's chromium through selenium) from the LAN
# namespace, which stands in for the management network; curl forges what
# a browser would not send.  Screenshots at a phone's width are kept in
# $WEB_ARTEFACTS (default build/test-artefacts/web).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=wa$$ UB=wb$$
ART=${WEB_ARTEFACTS:-$PWD/build/test-artefacts/web}
mkdir -p "$ART"
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest lab 10.77.0.13 52:54:00:00:00:0d mt-lab
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --answer-all 203.0.113.10
topo_wait_port "$NS_INET" 203.0.113.53 53
topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet"
topo_http "$NS_INET" $INET_HTTP 8080 "a direct port"
chmod 711 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/sandboxes.d"
WEB=192.168.77.1:8443
cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
  member_allow = [ "*.member.test" ];
  web: { listen = "$WEB"; };
};
EOF
printf '%s\n' 'mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";' \
	'egress = "allowlist";' 'allow = [ "pypi.org" ];' "owner = \"$UA\";" \
	'allow_ports = [ "tcp/80", "tcp/443", "tcp/8080" ];' >"$TOPO_TMP/sandboxes.d/dev.conf"
printf '%s\n' 'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "allowlist";' 'allow = [ "github.test" ];' "owner = \"$UB\";" \
	>"$TOPO_TMP/sandboxes.d/lab.conf"
chmod 0640 "$TOPO_TMP"/sandboxes.d/*.conf

# Wrong places and halves are config errors, with file:line.
bad() { sed "s|^  web: .*|  web: { $1 };|" "$GW_CONF" >"$TOPO_TMP/bad.conf"
	in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1; }
expect_match "web.listen inside the sandbox network is refused" \
	'bad.conf:[0-9]+: gateway.web: listen: expected an address on the management network, not inside gateway.network' \
	"$(bad 'listen = "10.77.0.1:8443";')"
expect_match "a cert without its key is refused" \
	'bad.conf:[0-9]+: gateway.web: expected cert and key together' \
	"$(bad "listen = \"$WEB\"; cert = \"/x.pem\";")"
expect_match "-nv prints the web settings" "web: \{ listen = \"$WEB\"; \};" \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"

export MOAT_WEB_ROOT=$PWD/web
gw_start; expect_eq "gatewayd starts with the web console" 0 $?
topo_wait_port "$NS_GW" 192.168.77.1 8443
wpid=$(gw_child_pid web)
expect_eq "the web process runs as moat-web" moat-web \
	"$(ps -o user= -p "${wpid:-1}" 2>/dev/null | tr -d ' ')"
expect_match "under seccomp, no_new_privs" 'NoNewPrivs:	1.*Seccomp:	2' \
	"$(tr '\n' ' ' </proc/${wpid:-1}/status 2>/dev/null)"
expect_eq "its certificate is its own, in the state folder" 600 \
	"$(stat -c %a "$TOPO_TMP/state/web/key.pem" 2>&1)"
expect_fail "and not the interception CA's" cmp -s "$TOPO_TMP/state/web/cert.pem" \
	"$TOPO_TMP/state/proxy-ca.crt"

lan() { in_ns "$NS_LAN" env -i curl -sk --max-time 5 "$@"; }
link() { as "$1" web-login "${@:2}" | head -1; }

# --- login links ---------------------------------------------------------
out=$(as "$UA" web-login)
expect_match "web-login prints a one-time link" "^https://$WEB/login\?t=[0-9a-f]{64}$" "$(echo "$out" | head -1)"
fp=$(in_ns "$NS_LAN" openssl s_client -connect $WEB </dev/null 2>/dev/null |
	openssl x509 -noout -fingerprint -sha256 | sed 's/.*=//')
expect_match "and the certificate's SHA-256 fingerprint, as served" "^${fp:-none}$" "$(echo "$out" | tail -1)"
l=$(echo "$out" | head -1)
expect_eq "a link logs in once (303 with a session cookie)" 303 \
	"$(lan -o /dev/null -w '%{http_code}' -c "$TOPO_TMP/jar" "$l")"
expect_match "the cookie is Secure, HttpOnly, SameSite=Strict" \
	'#HttpOnly_192.168.77.1	FALSE	/	TRUE	[0-9]+	moat_session	[0-9a-f]{64}' "$(cat "$TOPO_TMP/jar")"
expect_eq "the same link again is refused" 403 "$(lan -o /dev/null -w '%{http_code}' "$l")"
l=$(link "$UA" --for 1s); sleep 3
expect_eq "an expired link is refused" 403 "$(lan -o /dev/null -w '%{http_code}' "$l")"
expect_eq "a made-up link is refused" 403 \
	"$(lan -o /dev/null -w '%{http_code}' "https://$WEB/login?t=$(printf '%064d' 0)")"
expect_match "whoami names the user" "\"user\":\"$UA\"" "$(lan -b "$TOPO_TMP/jar" https://$WEB/api/whoami)"
if [ -n "${WEB_DEBUG:-}" ]; then
	lan -b "$TOPO_TMP/jar" https://$WEB/api/refused > "$ART/refused.txt" 2>&1
	lan -N --max-time 3 -b "$TOPO_TMP/jar" https://$WEB/api/events > "$ART/events.txt" 2>&1
fi
lan -o /dev/null -c "$TOPO_TMP/jar3" "$(link "$UA" --session 3s)"
code() { lan -o /dev/null -w '%{http_code}' -b "$TOPO_TMP/jar3" https://$WEB/api/whoami; }
expect_eq "a session made to last 3 s works" 200 "$(code)"
sleep 5
expect_eq "...and is refused once it has ended" 401 "$(code)"
expect_match "a session longer than 8 hours is a usage error" "usage: web-login" \
	"$(as "$UA" web-login --session 9h 2>&1)"
expect_eq "no cookie: 401" 401 "$(lan -o /dev/null -w '%{http_code}' https://$WEB/api/sandboxes)"

# --- forged requests -----------------------------------------------------
csrf=$(lan -b "$TOPO_TMP/jar" https://$WEB/api/whoami | python3 -c 'import json,sys; print(json.load(sys.stdin)["csrf"])')
# What the member may grant (dev is theirs, member_allow has it): only
# the forgery stands in the way.
post() { lan -o /dev/null -w '%{http_code}' -b "$TOPO_TMP/jar" -X POST \
	-H 'Content-Type: application/x-www-form-urlencoded' "$@" \
	--data 'sandbox=dev&name=forged.member.test&for=1h' https://$WEB/api/allow; }
expect_eq "a cross-origin POST is refused, even with the token" 403 \
	"$(post -H "Origin: https://evil.test" -H "X-CSRF-Token: $csrf")"
expect_eq "a POST without Origin is refused" 403 "$(post -H "X-CSRF-Token: $csrf")"
expect_eq "a same-origin POST without the CSRF token is refused" 403 \
	"$(post -H "Origin: https://$WEB")"
expect_eq "a same-origin POST with a wrong CSRF token is refused" 403 \
	"$(post -H "Origin: https://$WEB" -H "X-CSRF-Token: $(printf '%064d' 1)")"
expect_fail "...and none of them granted anything" grep -q forged <(gw_ctl grants 2>&1)
expect_eq "the same POST from the console's origin with its token is taken" 200 \
	"$(post -H "Origin: https://$WEB" -H "X-CSRF-Token: $csrf")"
expect_match "...as the member, for 1h" "^dev +forged.member.test .* $UA " "$(gw_ctl grants dev 2>&1)"
gw_ctl unallow dev forged.member.test >/dev/null
expect_match "the refusal is audited with the address and session" \
	'"event":"web-refused","from":"192.168.77.2","session":"[0-9a-f]{12}","verb":"allow","reason":"the request lacks' \
	"$(cat "$GW_AUDIT")"
big=$(head -c 20000 /dev/zero | tr '\0' a)
expect_eq "a body over the size limit is refused" 413 \
	"$(lan --http1.1 -o /dev/null -w '%{http_code}' -b "$TOPO_TMP/jar" -X POST -H "Origin: https://$WEB" \
	-H "X-CSRF-Token: $csrf" --data "name=$big" https://$WEB/api/allow)"

urls=$(for i in $(seq 100); do printf 'https://%s/app.css ' "$WEB"; done)
codes=$(lan -o /dev/null -w '%{http_code}\n' $urls | sort | uniq -c)
expect_match "100 requests at once from one address meet the rate limit (429)" ' 429$' "$codes"

# --- sessions --------------------------------------------------------------
expect_match "web-sessions lists the session with its user and address" \
	"^[0-9a-f]{12} +$UA +from 192.168.77.2" "$(as "$UA" web-sessions)"
expect_eq "the other member does not see it" "" "$(as "$UB" web-sessions)"
sid=$(as "$UA" web-sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
expect_match "nor may revoke it" "no web session $sid of yours" "$(as "$UB" web-sessions revoke "$sid" 2>&1)"
expect_ok "its owner may" as "$UA" web-sessions revoke "$sid"
expect_eq "a revoked session is logged out" 401 \
	"$(lan -o /dev/null -w '%{http_code}' -b "$TOPO_TMP/jar" https://$WEB/api/sandboxes)"

# --- live connections: the kernel's view, proxied and direct ---------------
live() { gw_ctl sandboxes --json | python3 -c 'import json, sys
print([s.get("connections_live") for s in json.load(sys.stdin) if s["name"] == sys.argv[1]][0])' "$1"; }
expect_eq "ctl sandboxes --json: no live connection of dev at first" 0 "$(live dev)"
# pypi.org is dev's (the upstream answers it with the web server's
# address): port 80 goes through the proxy, port 8080 straight out.
in_ns $TOPO-dev dig +short +time=2 +tries=1 @$GW_ADDR pypi.org A >/dev/null
flag=$TOPO_TMP/hold.flag; : >"$flag"
in_ns $TOPO-dev timeout 70 python3 tests/harness/tcp-idle.py "$flag" $INET_HTTP:80 \
	$INET_HTTP:80 $INET_HTTP:8080 $INET_HTTP:8080 >"$TOPO_TMP/hold.out" 2>&1 &
hold=$!
wait_for 10 grep -q "^up 4" "$TOPO_TMP/hold.out"
expect_match "the guest holds 2 proxied and 2 direct connections" "^up 4" "$(cat "$TOPO_TMP/hold.out")"
four() { [ "$(live dev)" = 4 ]; }
expect_ok "ctl sandboxes --json counts them: connections_live 4" wait_for 3 four
expect_eq "...and the other sandbox none" 0 "$(live lab)"
expect_match "the text form says it too" "^dev .* live 4" "$(gw_ctl sandboxes)"
rm -f "$flag"; wait "$hold"
t0=$(date +%s%N)
zero() { [ "$(live dev)" = 0 ]; }
expect_ok "once they close the count is 0 again (within 2 s)" wait_for 2 zero
echo "# closed connections left the count in $((($(date +%s%N) - t0) / 1000000)) ms"

# --- in a real browser ------------------------------------------------------
used=$(link "$UA"); lan -o /dev/null "$used"
res=$(in_ns "$NS_LAN" /usr/bin/python3 tests/harness/web-browser.py --base "https://$WEB" \
	--owner-link "$(gw_ctl web-login | head -1)" --member-link "$(link "$UB")" --reused-link "$used" \
	--guest-ns "$TOPO-dev" --art "$ART" --gw "$GW_ADDR" --lan-host "$LAN_HOST" --owner root --member "$UB" \
	--sandbox dev --member-sandbox lab --hold "$INET_HTTP:80" 2>&1)
echo "$res" | grep '^INFO' | sed 's/^INFO/#/'
while IFS= read -r line; do
	case $line in
	PASS\ *) ok "browser: ${line#PASS }" ;;
	FAIL\ *) not_ok "browser: ${line#FAIL }" ;;
	esac
done <<<"$res"
expect_match "the browser run finished" 'PASS a member.s grant within member_allow' "$res" ||
	echo "$res" | tail -20 | sed 's/^/# /'
expect_match "the page's grant is audited with user, address and session" \
	'"event":"web","user":"root","from":"192.168.77.2","session":"[0-9a-f]{12}","verb":"allow","sandbox":"dev"' \
	"$(cat "$GW_AUDIT")"
expect_match "...and its revoke" \
	'"event":"web","user":"root","from":"192.168.77.2","session":"[0-9a-f]{12}","verb":"unallow","sandbox":"dev"' \
	"$(cat "$GW_AUDIT")"
expect_eq "the live page's reads (twice a second) do not flood the audit log" 0 \
	"$(grep -c '"verb":"refused"' "$GW_AUDIT")"
for p in refused grants sandboxes audit gateway member-sandboxes; do
	expect_ok "screenshot $p.png at 390 px kept" test -s "$ART/$p.png"
done

restarts() { gw_ctl status --json | python3 -c "import json,sys
print([c['restarts'] for c in json.load(sys.stdin)['children'] if c['name']=='web'][0])"; }
expect_eq "through all of it the web process never died (no system call outside its list)" 0 "$(restarts)"

# --- sessions live in gatewayd, not in the web process ----------------------
lan -o /dev/null -c "$TOPO_TMP/jar2" "$(link "$UA")"
old=$(gw_child_pid web)
kill -9 "$old"
restarted() { local p; p=$(gw_child_pid web); [ -n "$p" ] && [ "$p" != "$old" ] &&
	topo_listening "$NS_GW" 192.168.77.1 8443; }
expect_ok "a killed web process is restarted" wait_for 30 restarted
# mem_has PID HEX -- is the secret (as bytes) anywhere in PID's memory?
mem_has() { python3 - "$@" <<'PY'
import re, sys
pid, secret = sys.argv[1], bytes.fromhex(sys.argv[2])
found = False
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        try:
            mem.seek(a)
            if secret in mem.read(b - a):
                found = True
                break
        except OSError:
            pass
print("yes" if found else "no")
PY
}
sess=$(awk '$6 == "moat_session" {print $7}' "$TOPO_TMP/jar2")
expect_eq "gatewayd holds the session's secret (the check can see it)" yes "$(mem_has "$GW_PID" "$sess")"
expect_eq "the new web process does not: it cannot act for a session no browser shows it" no \
	"$(mem_has "$(gw_child_pid web)" "$sess")"
serving() { lan -b "$TOPO_TMP/jar2" https://$WEB/api/whoami | grep -q "\"user\":\"$UA\""; }
expect_ok "and the session still works with the new one" wait_for 10 serving
expect_ok "a reload leaves the console up" gw_ctl reload
expect_ok "...and the session with it" serving
sed -i "s|listen = \"$WEB\"|listen = \"192.168.77.1:8444\"|" "$GW_CONF"
expect_ok "a reload moving the console to another port is taken" gw_ctl reload
moved() { topo_listening "$NS_GW" 192.168.77.1 8444 && ! topo_listening "$NS_GW" 192.168.77.1 8443; }
expect_ok "...it listens there, and no longer on the old port" wait_for 30 moved
WEB=192.168.77.1:8444
expect_ok "...the session goes with it" wait_for 10 serving
expect_match "...and login links name the new address" "^https://$WEB/login" "$(link "$UA")"

# --- never from a guest ---------------------------------------------------
expect_eq "a guest cannot reach the console on the management address" unreachable \
	"$(tcp_probe $TOPO-dev 192.168.77.1 ${WEB##*:})"
expect_eq "nor on the gateway's sandbox-side address" unreachable \
	"$(tcp_probe $TOPO-dev $GW_ADDR ${WEB##*:})"
expect_eq "nor through the proxy" 000 \
	"$(in_ns $TOPO-dev curl -sk -o /dev/null -w '%{http_code}' --max-time 5 -x http://$GW_ADDR:3128 https://$WEB/)"
expect_eq "nor through the proxy by plain HTTP" 403 \
	"$(in_ns $TOPO-dev curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://$GW_ADDR:3128 http://$WEB/)"

[ -n "${WEB_DEBUG:-}" ] && cp "$GW_LOG" "$GW_AUDIT" "$ART/" 2>/dev/null
tap_done
