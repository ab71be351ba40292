#!/usr/bin/env bash
# Guests' own verdicts in gatewayd, without a guest: the console reader's
# record (state_dir/guests/NAME/verdict.rec, struct verdict_rec) is
# written here as the reader writes it.  gatewayd shows each verdict with
# its age (ctl sandboxes, ctl status, metrics), counts the console lines
# the reader refused and the records that are not one, audits a guest's
# NOT CONTAINED, and with quarantine_on_breach moves the sandbox to
# egress "none" through a commit of the policy (the guest's HTTP to the internet is then
# refused) until an admin runs ctl clear-quarantine.  The quarantine
# outlives a restart of gatewayd.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet" || not_ok "internet HTTP server"
mkdir -p "$TOPO_TMP/state"
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
  metrics: { listen = "192.168.77.1:9477"; interval = 1; };
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "open"; quarantine_on_breach = true; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
expect_match "-nv prints quarantine_on_breach" "quarantine_on_breach = true;" \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
gw_start; expect_eq "gatewayd starts" 0 $?

# rec NAME VERDICT AGE FORGED OVERLONG ESCAPED [MAGIC] -- the reader's record.
# VERDICT: 1 contained, 2 NOT CONTAINED, 3 error.
rec() {
	mkdir -p "$TOPO_TMP/state/guests/$1"
	python3 - "$TOPO_TMP/state/guests/$1/verdict.rec" "$2" "$3" "$4" "$5" "$6" "${7:-0x3152564d}" <<'PY'
import struct, sys, time, os
p, v, age, f, o, e, magic = sys.argv[1], *map(lambda x: int(x, 0), sys.argv[2:])
b = struct.pack("=IIqIIII", magic, v, int(time.time()) - age, 1, f, o, e)
open(p + ".tmp", "wb").write(b); os.rename(p + ".tmp", p)
PY
}
scrape() { in_ns "$NS_LAN" env -i curl -s --max-time 3 "http://192.168.77.1:9477/metrics"; }
fetch() { in_ns "$TOPO-$1" curl -s --max-time 4 -o /dev/null -w '%{http_code}' "http://$INET_HTTP/"; }
sbjson() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }

expect_eq "web reaches the internet (open)" 200 "$(fetch web)"
expect_match "no verdict yet: ctl status says so" "^guests +no verdict yet, 0 quarantined" "$(gw_ctl status)"

rec web 1 30 0 0 0
rec dev 3 5 0 0 0
seen() { [ "$(sbjson web verdict)" = "$1" ]; }
wait_for 20 seen contained
expect_eq "ctl sandboxes --json: web's verdict" contained "$(sbjson web verdict)"
age=$(sbjson web verdict_age)
expect_ok "ctl sandboxes --json: its age is the record's (30 s or a little more)" test "${age:-0}" -ge 30 -a "${age:-0}" -lt 90
expect_match "ctl sandboxes: verdict and age in the text" "^web .*verdict contained [0-9]+s ago" "$(gw_ctl sandboxes)"
expect_match "ctl status: the oldest verdict is web's" "^guests +2 with a verdict, the oldest [0-9]+s ago \(web\), 0 quarantined" "$(gw_ctl status)"
# The metrics are rendered on their own interval: wait for the next.
mseen() { scrape | grep -q '^moat_guest_verdict{sandbox="web"} 1$'; }
wait_for 10 mseen
m=$(scrape)
expect_match "metrics: moat_guest_verdict for web is 1" '^moat_guest_verdict\{sandbox="web"\} 1$' "$m"
expect_match "metrics: dev's check failed (-1)" '^moat_guest_verdict\{sandbox="dev"\} -1$' "$m"
expect_match "metrics: web's verdict age" '^moat_guest_verdict_age_seconds\{sandbox="web"\} [3-8][0-9]$' "$m"
expect_match "audit: web's verdict" '"event":"guest-verdict".*"sandbox":"web".*"verdict":"contained"' "$(cat "$GW_AUDIT")"

# Lines the reader refused, counted per reason; a record that is not one.
rec dev 3 5 2 1 4
refused() { scrape | grep -q '^moat_guest_verdict_lines_refused_total{sandbox="dev",reason="escaped"} 4$'; }
wait_for 20 refused
m=$(scrape)
expect_match "metrics: refused forged lines" '^moat_guest_verdict_lines_refused_total\{sandbox="dev",reason="forged"\} 2$' "$m"
expect_match "metrics: refused overlong lines" '^moat_guest_verdict_lines_refused_total\{sandbox="dev",reason="overlong"\} 1$' "$m"
expect_match "metrics: refused escaped lines" '^moat_guest_verdict_lines_refused_total\{sandbox="dev",reason="escaped"\} 4$' "$m"
expect_match "audit: the refused lines" '"event":"guest-verdict-refused".*"sandbox":"dev".*"forged":"2","overlong":"1","escaped":"4"' "$(cat "$GW_AUDIT")"
rec dev 3 5 0 0 0 0x41414141
bad() { scrape | grep -q '^moat_guest_verdict_records_invalid_total 1$'; }
wait_for 20 bad; expect_ok "metrics: a record with a wrong magic is counted" bad
expect_eq "a bad record keeps the last good verdict" -1 \
	"$(scrape | sed -n 's/^moat_guest_verdict{sandbox="dev"} //p')"

# NOT CONTAINED: audited, an alert, and web (quarantine_on_breach) loses
# its egress through a commit of the policy; dev (no quarantine) would not.
rec web 2 0 0 0 0
q() { [ "$(sbjson web quarantined)" = True ]; }
wait_for 30 q; expect_ok "web is quarantined after reporting NOT CONTAINED" q
expect_eq "ctl sandboxes --json: web's egress is none" none "$(sbjson web egress)"
expect_match "the log says it is an alert" "ALERT: guest web reports NOT CONTAINED" "$(cat "$GW_LOG")"
expect_match "audit: the quarantine" '"event":"quarantine".*"sandbox":"web"' "$(cat "$GW_AUDIT")"
cm() { scrape | grep -q '^moat_commits_total [1-9]'; }
wait_for 15 cm; expect_ok "the quarantine is a commit of the policy" cm
expect_eq "web's HTTP to the internet is refused now" 000 "$(fetch web)"
expect_eq "dev still reaches the internet" 200 "$(fetch dev)"
mq() { scrape | grep -q '^moat_guest_quarantined{sandbox="web"} 1$'; }
wait_for 15 mq
m=$(scrape)
expect_match "metrics: moat_guest_quarantined for web" '^moat_guest_quarantined\{sandbox="web"\} 1$' "$m"
expect_match "metrics: web's verdict is 0" '^moat_guest_verdict\{sandbox="web"\} 0$' "$m"

# A reload keeps it; so does a restart.
expect_ok "reload" gw_ctl reload
expect_eq "after a reload web is still none" none "$(sbjson web egress)"
kill "$GW_PID"; wait_for 20 sh -c "! kill -0 $GW_PID 2>/dev/null"
gw_start; expect_eq "gatewayd starts again" 0 $?
expect_eq "after a restart web is still none" none "$(sbjson web egress)"
expect_eq "after a restart web's HTTP is still refused" 000 "$(fetch web)"

# Only an admin clears it; then the configured egress is back.
out=$(gw_ctl clear-quarantine dev 2>&1)
expect_match "clear-quarantine of a sandbox not quarantined is an error" "dev is not quarantined" "$out"
out=$(gw_ctl clear-quarantine web 2>&1)
expect_match "ctl clear-quarantine web" "quarantine of web cleared" "$out"
expect_eq "web is open again" open "$(sbjson web egress)"
expect_eq "web reaches the internet again" 200 "$(fetch web)"
expect_match "audit: cleared, and by whom" '"event":"quarantine-cleared".*"sandbox":"web".*"by":"root"' "$(cat "$GW_AUDIT")"
sleep 6
expect_eq "the old NOT CONTAINED does not quarantine it again" False "$(sbjson web quarantined)"
tap_done
