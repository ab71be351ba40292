#!/usr/bin/env bash
# unallow takes back exactly what it names, and ctl grants shows what is
# granted.  docs/provision.homelab.md step 8 as a new admin runs it: dev's
# file has pypi.org (provision create --allow pypi.org), a grant of
# files.pythonhosted.org for 1h, then `allow dev @pypi` and `unallow dev
# @pypi`: the file is back as it was, pypi.org still resolves, the 1h
# grant is still listed and answered, and the reply says why each stays.
# unallow @pypi of a grant --for ends the list's grants only.  `ctl grants
# [SANDBOX] [--json]` lists live grants with who, when and their end;
# members see their own sandboxes' only; the metrics count them.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mgr$$ UB=mgs$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members $UA and $UB"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }

topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest lab 10.77.0.13 52:54:00:00:00:0d mt-lab
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
PROM=$TOPO_TMP/textfile/moat.prom
mkdir -p "$TOPO_TMP/textfile" "$TOPO_TMP/sandboxes.d" "$TOPO_TMP/allow.d"
cp data/allow.d/pypi.list "$TOPO_TMP/allow.d/"
cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  member_allow = [ "short.test" ];
  metrics: { textfile = "$PROM"; interval = 1; };
};
EOF
DEV=$TOPO_TMP/sandboxes.d/dev.conf
printf '%s\n' 'mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";' \
	'egress = "allowlist";' 'allow = [ "pypi.org" ];' "owner = \"$UA\";" >"$DEV"
printf '%s\n' 'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "allowlist";' 'allow = [ "github.test" ];' "owner = \"$UB\";" \
	>"$TOPO_TMP/sandboxes.d/lab.conf"
chmod 0640 "$DEV" "$TOPO_TMP/sandboxes.d/lab.conf"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
status_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 @$GW_ADDR "$2" A | grep -o 'status: [A-Z]*'; }

# --- step 8 of the homelab page -----------------------------------------------
expect_eq "before: dev resolves pypi.org (its file)" "status: NOERROR" "$(status_in dev pypi.org)"
expect_match "allow dev files.pythonhosted.org --for 1h" '^dev may reach files\.pythonhosted\.org for 1h' \
	"$(gw_ctl allow dev files.pythonhosted.org --for 1h 2>&1)"
expect_match "allow dev @pypi (for good)" 'dev may reach pypi\.org, files\.pythonhosted\.org \(written to its file\)' \
	"$(gw_ctl allow dev @pypi 2>&1)"
expect_match "...the file has the list as named" 'allow = \[ "pypi.org", "@pypi" \];' "$(cat "$DEV")"
expect_match "ctl grants lists it as written to the file, forever" \
	'^dev +@pypi +- +root +[0-9T:-]+Z +forever +\(in its file\)$' "$(gw_ctl grants dev 2>&1)"
perm_json() {
	gw_ctl grants dev --json | python3 -c '
import json, sys
p = [x for x in json.load(sys.stdin) if x["entry"] == "@pypi"][0]
assert p["permanent"] is True and p["until"] is None, p
assert p["seconds_left"] is None and p["list"] == "@pypi" and p["name"] is None, p
'
}
expect_ok "...in --json: permanent, no end" perm_json
out=$(gw_ctl unallow dev @pypi 2>&1); rc=$?
expect_eq "unallow dev @pypi succeeds" 0 $rc
expect_match "...and says pypi.org stays, and why" "pypi\.org stays: it is in the sandbox's file" "$out"
expect_match "...and that the 1h grant keeps files.pythonhosted.org" \
	'files\.pythonhosted\.org stays: a grant for a while has it until [0-9T:-]+Z' "$out"
expect_match "the file is as it was before the allow" 'allow = \[ "pypi.org" \];' "$(cat "$DEV")"
expect_eq "dev still resolves pypi.org" "status: NOERROR" "$(status_in dev pypi.org)"
expect_eq "...and files.pythonhosted.org (the 1h grant)" "status: NOERROR" "$(status_in dev files.pythonhosted.org)"
expect_eq "the record of @pypi for good went with it" "" "$(gw_ctl grants dev | grep -F '@pypi')"
expect_match "ctl grants still lists the 1h grant" \
	"^dev +files\.pythonhosted\.org +- +root +[0-9T:-]+Z +[0-9T:-]+Z +3[56][0-9][0-9]s$" "$(gw_ctl grants 2>&1)"

# --- a list granted for a while: unallow @LIST ends its grants only ------------
out=$(gw_ctl allow dev @pypi --for 10m 2>&1)
expect_match "allow dev @pypi --for 10m" 'dev may reach pypi\.org, files\.pythonhosted\.org for 10m' "$out"
expect_match "...noting pypi.org is in the file already" "note: pypi\.org is on dev's allow list from its configuration already" "$out"
expect_eq "ctl grants lists the 1h grant and the list's two" 3 "$(gw_ctl grants dev | grep -c '^dev ')"
expect_match "...each of the list's with the list" '^dev +pypi\.org +@pypi ' "$(gw_ctl grants dev)"
out=$(gw_ctl unallow dev @pypi 2>&1)
expect_match "unallow dev @pypi (the grant for a while)" 'dev no longer reaches nothing more than before|files\.pythonhosted\.org stays' "$out"
expect_match "...says what stays" "pypi\.org stays: it is in the sandbox's file" "$out"
expect_eq "...the list's grants are gone, the 1h one stays" "files.pythonhosted.org -" \
	"$(gw_ctl grants dev | awk '/^dev /{print $2, $3}')"
expect_eq "...and dev still resolves both" "status: NOERROR status: NOERROR" \
	"$(status_in dev pypi.org) $(status_in dev files.pythonhosted.org)"
out=$(gw_ctl unallow dev @pypi 2>&1); rc=$?
expect_eq "unallow @pypi again: nothing of it is left (exit 1)" 1 $rc
expect_match "...saying so" '@pypi is not a grant of dev; nothing changed' "$out"
out=$(gw_ctl unallow dev files.pythonhosted.org 2>&1)
expect_match "unallow dev files.pythonhosted.org ends the 1h grant" '^dev no longer reaches files\.pythonhosted\.org$' "$(head -1 <<<"$out")"
expect_eq "...refused now" "status: REFUSED" "$(status_in dev files.pythonhosted.org)"
expect_eq "...pypi.org is not" "status: NOERROR" "$(status_in dev pypi.org)"
expect_match "no grants for a while left" '^no grants$' "$(gw_ctl grants 2>&1)"

# --- a name held by a grant and the file: says which it changed ------------------
gw_ctl allow dev files.pythonhosted.org --for 1h >/dev/null 2>&1
out=$(gw_ctl allow dev files.pythonhosted.org 2>&1)
expect_match "allow for good of a name granted for a while says so" \
	"note: files\.pythonhosted\.org was granted for a while; now it is in dev's file too" "$out"
out=$(gw_ctl unallow dev files.pythonhosted.org 2>&1)
expect_match "unallow of a name held by a grant and the file says both went" \
	"files\.pythonhosted\.org: its grant for a while ended, and it was taken out of the sandbox's file" "$out"
expect_match "...the file is as before" 'allow = \[ "pypi.org" \];' "$(cat "$DEV")"

# --- ctl grants: who, when, until; members see their own --------------------------
expect_match "a member grants on their own sandbox (member_allow)" '^dev may reach short\.test for 5m' \
	"$(as $UA allow dev short.test --for 5m 2>&1)"
expect_match "root grants on lab with ports" '^lab may reach other\.test on tcp/22 only for 2m' \
	"$(gw_ctl allow lab other.test --ports tcp/22 --for 2m 2>&1)"
out=$(gw_ctl grants 2>&1)
expect_match "ctl grants lists dev's, by the member" "^dev +short\.test +- +$UA +[0-9T:-]+Z +[0-9T:-]+Z +(2[0-9][0-9]|300)s$" "$out"
expect_match "...and lab's with its ports" "^lab +other\.test:tcp/22 +- +root " "$out"
end=$(date -u -d @$(($(date +%s) + 120)) +%Y-%m-%dT%H:%M)
expect_match "...with its end time" "^lab .* $end:[0-9][0-9]Z +1[0-2][0-9]s$" "$out"
json=$(gw_ctl grants --json 2>&1)
check_json() {
	python3 -c '
import json, sys
g = json.loads(sys.stdin.read())
lab = [x for x in g if x["sandbox"] == "lab"][0]
assert lab["entry"] == "other.test:tcp/22" and lab["name"] == "other.test", lab
assert lab["ports"] == "tcp/22" and lab["list"] is None, lab
assert lab["uid"] == 0 and lab["user"] == "root", lab
assert 100 <= lab["seconds_left"] <= 120, lab
for k in ("since", "until"):
    assert lab[k].endswith("Z") and "T" in lab[k], lab
dev = [x for x in g if x["sandbox"] == "dev"][0]
assert dev["ports"] == "allow_ports" and dev["user"] == sys.argv[1], dev
assert len(g) == 2, g
' "$UA" <<<"$json"
}
expect_ok "--json is one valid JSON array with those fields" check_json
expect_eq "a member sees only their own sandbox's grants" "dev" \
	"$(as $UA grants 2>&1 | awk 'NR > 1 {print $1}' | sort -u)"
expect_eq "...in --json too" '["dev"]' \
	"$(as $UA grants --json | python3 -c 'import json,sys; print(json.dumps(sorted({x["sandbox"] for x in json.load(sys.stdin)})).replace(" ",""))')"
out=$(as $UA grants lab 2>&1); rc=$?
expect_eq "...and asking for another's sandbox fails (exit 1)" 1 $rc
expect_match "...as if it did not exist" 'no sandbox lab \(or not yours\)' "$out"
expect_match "the other member sees lab's only" '^lab ' "$(as $UB grants 2>&1 | sed -n 2p)"
expect_fail "a stray argument is a usage error" gw_ctl grants dev lab
metrics_have() { grep -q "^moat_grants{sandbox=\"lab\"} 1$" "$PROM" && grep -q "^moat_grants{sandbox=\"dev\"} 1$" "$PROM"; }
wait_for 5 metrics_have
expect_ok "the metrics count each sandbox's live grants" metrics_have
expect_match "...and the seconds until the soonest ends" '^moat_grant_seconds_left\{sandbox="lab"\} 1[0-2][0-9]$' "$(cat "$PROM")"
expect_match "the unallow is audited as before" \
	'"event":"unallow","uid":0,"user":"root","sandbox":"dev","names":"pypi.org,files.pythonhosted.org","for":"permanent","ports":"all"' \
	"$(cat "$GW_AUDIT")"

expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
tap_done
