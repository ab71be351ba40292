#!/usr/bin/env bash
# A team-shared host: two real users in group moat (created here, removed
# on exit) drive gatewayd without root.  Each sees only their own
# sandboxes and secrets; the other's are refused; a secret one of them
# sets is injected only for their own sandbox and rotates without a
# restart; quotas refuse with a message; the audit log names the uid; the
# value never shows up in a log.  No guest boots: create uses kernel mode
# with a placeholder kernel file, and guests are namespaces.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh
MEMBER_GATEWAYD=$(topo_pub build/gatewayd)	# run as a member or nobody: a copy anyone can run
MEMBER_PROVISION=$(topo_pub build/provision)	# run as a member or nobody: a copy anyone can run

UA=mta$$ UB=mtb$$
team_cleanup() {
	userdel "$UA" 2>/dev/null
	userdel "$UB" 2>/dev/null
}
topo_up || { not_ok "topology comes up"; team_cleanup; exit 1; }
trap 'rc=$?; team_cleanup; topo_down; exit $rc' EXIT
trap 'team_cleanup; topo_down; exit 130' INT
trap 'team_cleanup; topo_down; exit 143' TERM

bash gatewayd/install-users.sh
for u in $UA $UB; do
	useradd -M -N -G moat -s /usr/sbin/nologin "$u" || { not_ok "useradd $u"; exit 1; }
done
UIDA=$(id -u $UA)
as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
actl() { as $UA "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" "$@"; }
bctl() { as $UB "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" "$@"; }
bpv() { as $UB "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
apv() { as $UA "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }

# --- configuration: two sandboxes made by an admin, quotas --------------
chmod 711 "$TOPO_TMP"
proxy_certs || not_ok "test certificates"
mkdir -p "$TOPO_TMP/sandboxes.d" "$PX_DIR/state"
# Interception off as before: every request here goes to the explicit proxy.
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
quotas = (
  { user = "$UA"; sandboxes = 1; },
  { user = "$UB"; sandboxes = 3; cpus = 4; memory_mb = 2048; disk_gb = 10; }
);
CONF
dropin() {	# dropin NAME ADDR MAC OWNER [EXTRA]
	printf 'mac = "%s";\naddress = "%s";\ntap = "mt-%s";\negress = "allowlist";\nallow = [ "api.bound.test" ];\nowner = "%s";\n%s' \
	    "$3" "$2" "$1" "$4" "${5:-}" >"$TOPO_TMP/sandboxes.d/$1.conf"
}
dropin a-web 10.77.0.10 52:54:00:00:00:0a $UA
dropin b-old 10.77.0.11 52:54:00:00:00:0b $UB
topo_guest a-web 10.77.0.10 52:54:00:00:00:0a mt-a-web
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
PX_NO_DNS=1 proxy_servers || not_ok "test servers start"
echo "# placeholder kernel" >"$TOPO_TMP/vmlinuz"; chmod 0644 "$TOPO_TMP/vmlinuz"

gw_start; expect_eq "gatewayd starts" 0 $?

# --- the host's users and the guests (gateway.host_access "owners") --------
topo_banner "$TOPO-a-web" 10.77.0.10 8888 "a-web-service"
cp tests/harness/probe.py "$TOPO_TMP/probe.py"; chmod 0644 "$TOPO_TMP/probe.py"
from_host() {	# from_host UID -- one TCP connection from the host to a-web:8888
	in_ns "$NS_GW" setpriv --reuid="$1" --regid=65534 --clear-groups \
	    /usr/bin/python3 "$TOPO_TMP/probe.py" tcp 10.77.0.10 8888
}
expect_eq "a-web's owner $UA connects from the host to a-web" connected "$(from_host "$UA")"
expect_eq "$UB, another member, is refused" EHOSTUNREACH "$(from_host "$UB")"
expect_eq "uid 12345, not in group moat, is refused" EHOSTUNREACH "$(from_host 12345)"
expect_eq "root connects" connected "$(from_host 0)"

# --- visibility -----------------------------------------------------------
out=$(actl sandboxes)
expect_match "$UA sees their own sandbox" "^a-web " "$out"
expect_fail "$UA does not see $UB's" grep -q "b-old" <<<"$out"
out=$(bctl sandboxes --json)
expect_match "$UB sees their own (sandboxes --json)" '"name":"b-old"' "$out"
expect_fail "$UB does not see $UA's" grep -q "a-web" <<<"$out"
expect_ok "sandboxes --json parses, one object per sandbox, owner a string" python3 -c '
import json, sys
v = json.loads(sys.argv[1])
assert [s["name"] for s in v] == ["b-old"] and v[0]["owner"] == sys.argv[2], v
assert set(v[0]) == {"name","address","tap","egress","owner","allow","secrets",
    "bytes_in","bytes_out","packets_in","packets_out","conns_in","conns_out","connections_live",
    "verdict","verdict_at","verdict_age","quarantined"}, v' "$out" "$UB"
out=$(gw_ctl sandboxes)
expect_match "root sees everyone's" "a-web.*$UA" "$out"
expect_match "root sees everyone's (2)" "b-old.*$UB" "$out"
expect_fail "the audit log is for admins" actl log

# --- secrets ------------------------------------------------------------
VA=sk-alice-$RANDOM$RANDOM VB=sk-bob-$RANDOM$RANDOM VB2=sk-bob2-$RANDOM$RANDOM
out=$(printf '%s\n' "$VA" | actl secret set akey --host api.bound.test 2>&1)
expect_match "$UA sets a secret from stdin" "^secret akey: placeholder moat-akey-" "$out"
PA=$(sed -n 's/^secret akey: placeholder //p' <<<"$out")
out=$(printf '%s' "$VB" | bctl secret set bkey --host api.bound.test 2>&1)
PB=$(sed -n 's/^secret bkey: placeholder //p' <<<"$out")
expect_match "$UB sets a secret" "^moat-bkey-" "$PB"
f=$PX_DIR/state/secrets/bkey
expect_eq "stored 0600 root-only" "600 root" "$(stat -c '%a %U' "$f")"
expect_fail "$UA cannot read $UB's stored value" as $UA cat "$f"
expect_fail "$UB cannot read it either (root-only)" as $UB cat "$f"
expect_match "the drop-in names the owner" "owner = \"$UB\"" "$(cat "$TOPO_TMP/secrets.d/bkey.conf")"
expect_fail "the drop-in holds no value" grep -q "$VB" "$TOPO_TMP/secrets.d/bkey.conf"
out=$(printf '%s' "stolen" | actl secret set bkey --host api.bound.test 2>&1)
expect_match "$UA cannot overwrite $UB's secret" "the name \"bkey\" is not available to you" "$out"
expect_eq "$UB's value is unchanged" "$VB" "$(cat "$f")"
out=$(actl secret list)
expect_match "$UA lists their secret" "^akey " "$out"
expect_fail "$UA does not list $UB's" grep -q bkey <<<"$out"
out=$(actl secret list --json)
expect_ok "secret list --json parses: names, hosts, no value" python3 -c '
import json, sys
v = json.loads(sys.argv[1])
assert [x["name"] for x in v] == ["akey"], v
assert v[0]["hosts"] == ["api.bound.test"] and v[0]["owner"] == sys.argv[2], v
assert set(v[0]) == {"name","owner","header","placeholder","hosts","shared_with","requests","budget"}, v
assert v[0]["requests"] is None and v[0]["budget"] is None, v' "$out" "$UA"
expect_fail "secret list --json holds no value" grep -qF "$VA" <<<"$out"
out=$(printf v | actl secret set --json x --host h 2>&1); rc=$?
expect_eq "a verb without a JSON form refuses --json (exit 1)" "1:only \"secret list\" has --json output" "$rc:$out"
out=$(gw_ctl counters --json)
expect_ok "counters --json parses; each counter its own family's description" python3 -c '
import json, sys
c = {(x["family"], x["name"]): x for x in json.loads(sys.argv[1])["counters"]}
assert isinstance(c[("inet","guest")]["packets"], int), c
assert c[("inet","guest")]["description"] == "to another guest through the gateway", c
assert c[("bridge","guest")]["description"] == "frame bridged between guest ports", c
assert c[("inet","spoof")]["description"] != c[("bridge","spoof")]["description"], c
assert c[("inet","ipv6")]["description"] == "IPv6 from a guest", c' "$out"
expect_match "counters (text): inet guest has its own description" \
	'inet +guest .* to another guest through the gateway' "$(gw_ctl counters)"
out=$(gw_ctl reload --json 2>&1); rc=$?
expect_eq "reload --json: an error, not text posing as JSON" "1:reload has no --json output" "$rc:$out"
expect_fail "a secret value is never an argument" actl secret set ckey --host api.bound.test "$VA"

# --- create through gatewayd: attach, quotas, files -----------------------
out=$(apv create a-two --kernel "$TOPO_TMP/vmlinuz" --egress none 2>&1)
expect_match "quota: $UA's second sandbox is refused with the limit" \
	"quota: $UA may use at most 1 sandboxes; 1 in use" "$out"
out=$(bctl create b-x --kernel "$TOPO_TMP/vmlinuz" --egress none --secret akey 2>&1)
expect_match "$UB cannot attach $UA's secret" "no secret \"akey\" that $UB owns" "$out"
out=$(bpv create b-x --kernel /etc/shadow --egress none 2>&1)
expect_match "a file the member cannot read is refused (opened as the member)" "kernel /etc/shadow: Permission denied" "$out"
out=$(bctl create b-x --kernel /etc/shadow --egress none 2>&1)
expect_match "gatewayd never opens a path a member names" "1 file option.s. but 0 open file.s. sent: use provision" "$out"
out=$(bctl create b-x --kernel "$TOPO_TMP/vmlinuz" --egress none --user root 2>&1)
expect_match "members cannot pick the QEMU user" "option --user is not available" "$out"
out=$(bctl create b-x --kernel "$TOPO_TMP/vmlinuz" --egress none --memory 3G 2>&1)
expect_match "quota: memory over the limit is refused" "at most 2048 MiB of memory" "$out"
out=$(bpv create b-api --kernel "$TOPO_TMP/vmlinuz" --egress allowlist \
	--allow api.bound.test --secret bkey --user moat-qemu 2>&1)
expect_match "provision --user is refused for members" "not available" "$out"
out=$(bpv create b-api --kernel "$TOPO_TMP/vmlinuz" --egress allowlist \
	--allow api.bound.test --secret bkey 2>&1); rc=$?
expect_eq "$UB creates b-api with their secret via provision (no root)" 0 "$rc"
expect_match "create's output reaches the member" "created b-api" "$out"
d=$TOPO_TMP/sandboxes.d/b-api.conf
expect_match "b-api is owned by $UB" "owner = \"$UB\"" "$(cat "$d" 2>/dev/null)"
expect_match "b-api carries bkey" '"bkey"' "$(cat "$d" 2>/dev/null)"
out=$(bctl sandboxes)
expect_match "gatewayd reloaded: $UB sees b-api" "^b-api " "$out"

# provision list: a member's (run by gatewayd) has root's rows and schema.
out=$(bpv list 2>&1)
expect_match "provision list by a member goes through gatewayd" "^b-api .* stopped" "$out"
expect_fail "provision list by a member: only their own" grep -q "a-web\|b-old" <<<"$out"
expect_fail "$UA's provision list does not show $UB's guest" grep -q "b-api" <<<"$(apv list 2>&1)"
mine=$(bpv list --json 2>&1)
root=$(build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" list --json 2>&1)
expect_ok "provision list --json: one schema for members and root, null when stopped" python3 -c '
import json, sys
m, r = json.loads(sys.argv[1]), json.loads(sys.argv[2])
keys = {"name","owner","address","tap","egress","mode","state","verdict","verdict_source","verdict_at","verdict_age","verdict_rejected","accel","accel_reason","pid","uptime"}
assert m and all(set(x) == keys for x in m + r), (m, r)
assert m == [x for x in r if x["owner"] == sys.argv[3]], (m, r)
b = m[0]
assert b["name"] == "b-api" and b["state"] == "stopped", b
assert b["pid"] is None and b["uptime"] is None, b' "$mine" "$root" "$UB"

# --- cross-user life cycle ---------------------------------------------------
for v in start stop destroy; do
	out=$(actl $v b-api 2>&1)
	expect_match "$UA cannot $v $UB's sandbox" "$v: no sandbox \"b-api\" owned by $UA" "$out"
done
out=$(apv stop b-old 2>&1)
expect_match "provision stop of another's sandbox is refused" "no sandbox \"b-old\" owned by $UA" "$out"
expect_ok "b-api still exists after the refusals" test -f "$d"

# --- injection: each secret only for its owner's sandbox --------------------
mac=$(sed -n 's/^mac = "\(.*\)";/\1/p' "$d"); addr=$(sed -n 's/^address = "\(.*\)";/\1/p' "$d")
tap=$(sed -n 's/^tap = "\(.*\)";/\1/p' "$d")
topo_guest b-api "$addr" "$mac" "$tap"
dropin a-web 10.77.0.10 52:54:00:00:00:0a $UA 'secrets = [ "bkey" ];'
out=$(gw_ctl reload 2>&1)
expect_match "the loader refuses $UA's sandbox carrying $UB's secret" "belongs to $UB and is not shared with $UA" "$out"
# proxy_replaced OLD -- a new proxy runs and the draining one (which closed
# its listeners but could still be exiting) is gone.
proxy_replaced() {
	gw_proxy_new "$1" && ! kill -0 $1 2>/dev/null
}
dropin a-web 10.77.0.10 52:54:00:00:00:0a $UA 'secrets = [ "akey" ];'
old=$(gw_proxy_pids)
expect_ok "an admin attaches $UA's own secret" gw_ctl reload
wait_for 30 proxy_replaced "$old"
topo_wait_port "$NS_GW" $GW_ADDR 3128
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
: >"$PX_DIR/bound.log"
px_curl b-api https://api.bound.test/echo -H "Authorization: Bearer $PB" >/dev/null
expect_match "$UB's sandbox gets $UB's real value" "Authorization: Bearer $VB" "$(cat "$PX_DIR/bound.log")"
: >"$PX_DIR/bound.log"
px_curl a-web https://api.bound.test/echo -H "Authorization: Bearer $PB" >/dev/null
expect_fail "$UA's sandbox with $UB's placeholder gets nothing of $UB's" grep -q "$VB" "$PX_DIR/bound.log"
px_curl a-web https://api.bound.test/echo -H "Authorization: Bearer $PA" >/dev/null
expect_match "$UA's sandbox gets $UA's real value" "Authorization: Bearer $VA" "$(cat "$PX_DIR/bound.log")"

# --- rotation: new value for new requests, same placeholder, guest untouched --
# The proxy takes the new value in place: the intercepted connections of
# the sandboxes holding the secret are cut (they could carry the old
# value); every other member's connections go on.
itunnel() {	# itunnel GUEST NAME -- a kept intercepted tunnel to api.bound.test
	in_ns "$TOPO-$1" python3 tests/harness/tunnel.py $GW_ADDR 3128 \
		api.bound.test:443 api.bound.test "$TOPO_TMP/$2" --for 120 \
		--tls "$PX_DIR/bundle.crt" &
	TOPO_PIDS+=($!)
}
has() { grep -qx "$2" "$TOPO_TMP/$1" 2>/dev/null; }
use() {	# use NAME N -- one request through tunnel NAME; waits for its verdict
	touch "$TOPO_TMP/$1.go-$2"
	wait_for 30 grep -Eqx "(ok|closed) $2" "$TOPO_TMP/$1"
}
itunnel b-api ib; itunnel a-web ia
wait_for 30 has ib 200; wait_for 30 has ia 200
use ib 1; use ia 1
expect_ok "before the rotation: $UB's intercepted connection answers" has ib "ok 1"
expect_ok "... and $UA's" has ia "ok 1"
old=$(gw_proxy_pids)
out=$(printf '%s\n' "$VB2" | bctl secret set bkey --host api.bound.test 2>&1)
expect_eq "rotation keeps the placeholder" "secret bkey: placeholder $PB" "$out"
expect_eq "rotation keeps the proxy workers" "$old" "$(gw_proxy_pids)"
expect_match "... which take the new value in place" \
	"new secret value.* sent, reconfigured in place" "$(cat "$GW_LOG")"
use ib 2; use ia 2
expect_ok "$UB's open intercepted connection is cut (it could carry the old value)" has ib "closed 2"
expect_match "... audited with the reason and the secret's name" \
	'"event":"cut","sandbox":"b-api".*"reason":"secret changed","secret":"bkey"' "$(cat "$GW_AUDIT")"
expect_ok "$UA's intercepted connection goes on through $UB's rotation" has ia "ok 2"
: >"$PX_DIR/bound.log"
px_curl b-api https://api.bound.test/echo -H "Authorization: Bearer $PB" >/dev/null
expect_match "after rotation the new value is injected" "Authorization: Bearer $VB2" "$(cat "$PX_DIR/bound.log")"
expect_fail "... and the old one never again" grep -qF "Bearer $VB" "$PX_DIR/bound.log"
: >"$PX_DIR/bound.log"
px_curl a-web https://api.bound.test/echo -H "Authorization: Bearer $PA" >/dev/null
expect_match "$UA's value is unchanged by $UB's rotation" "Authorization: Bearer $VA" "$(cat "$PX_DIR/bound.log")"

# --- a secret added, or one's definition changed: in place too -------------
itunnel b-api ib2; wait_for 30 has ib2 200; use ib2 1
expect_ok "$UB's new intercepted connection answers" has ib2 "ok 1"
old=$(gw_proxy_pids)
VC=sk-carol-$RANDOM$RANDOM
out=$(printf '%s\n' "$VC" | actl secret set ckey --host api.bound.test 2>&1)
expect_match "$UA adds a new secret" "^secret ckey: placeholder moat-ckey-" "$out"
expect_eq "a secret added keeps the proxy workers" "$old" "$(gw_proxy_pids)"
use ia 3; use ib2 2
expect_ok "... $UA's intercepted connection goes on" has ia "ok 3"
expect_ok "... and so does $UB's" has ib2 "ok 2"
out=$(printf '%s\n' "$VB2" | bctl secret set bkey --host api.bound.test --header X-Api-Key 2>&1)
expect_match "$UB gives bkey another header" "^secret bkey: placeholder $PB" "$out"
expect_eq "a secret's definition changed keeps the proxy workers" "$old" "$(gw_proxy_pids)"
use ia 4; use ib2 3
expect_ok "... $UB's connection, which holds bkey, is cut" has ib2 "closed 3"
expect_ok "... $UA's goes on" has ia "ok 4"
: >"$PX_DIR/bound.log"
px_curl b-api https://api.bound.test/echo -H "X-Api-Key: $PB" >/dev/null
expect_match "bkey now goes in its new header" "X-Api-Key: $VB2" "$(cat "$PX_DIR/bound.log")"

# --- own destroy, audit, no value anywhere ----------------------------------
ip -n "$NS_GW" link del "$tap" 2>/dev/null	# the test's veth, not a tap
out=$(bpv destroy b-api 2>&1)
expect_match "$UB destroys their own sandbox" "destroyed b-api" "$out"
expect_fail "b-api is gone from $UB's list" grep -q b-api <<<"$(bctl sandboxes)"
a=$(cat "$GW_AUDIT")
expect_match "audit: $UA's refused stop names the uid and sandbox" \
	"\"event\":\"control-refused\",\"uid\":$UIDA,\"user\":\"$UA\",\"verb\":\"stop\",\"sandbox\":\"b-api\"" "$a"
expect_match "audit: every request names uid, user, verb" \
	"\"event\":\"control\",\"uid\":$UIDA,\"user\":\"$UA\",\"verb\":\"sandboxes\"" "$a"
expect_match "audit: the secret set is recorded by name" "\"event\":\"secret-set\",\"uid\":$(id -u $UB),\"user\":\"$UB\",\"secret\":\"bkey\"" "$a"
expect_match "audit: provision's result is recorded" "\"event\":\"control-done\",\"uid\":$(id -u $UB),\"user\":\"$UB\",\"verb\":\"destroy\",\"sandbox\":\"b-api\",\"result\":\"ok\"" "$a"
expect_ok "every audit line is JSON; uid and exit are numbers" python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    for k in ("uid", "exit", "errors", "flows_cut", "count", "port"):
        assert k not in e or isinstance(e[k], int), e
    n += "uid" in e
assert n > 0' "$GW_AUDIT"
for v in "$VA" "$VB" "$VB2" "$VC"; do
	expect_fail "no secret value in the audit log or gatewayd's log" \
		grep -rqF "$v" "$GW_AUDIT" "$GW_LOG"
done
tap_done
