#!/usr/bin/env bash
# 88-ha-replicate-quarantine.sh -- a quarantine is on both boxes of a
# pair (gateway.ha.peer), whichever box's guest reported the breach:
# - a guest's NOT CONTAINED on A quarantines the sandbox on A and, within
#   the replication lag, on B (egress "none" there too, audited, shown as
#   the other box's);
# - an admin's clear-quarantine on A ends it on B;
# - made or cleared while the link is cut, it reaches B once the link is
#   back (the whole state carries each sandbox's quarantine);
# - the other box can add a quarantine, never lift one of this box's own:
#   B's own quarantine stays when A holds none.
# Topology and boxes: tests/harness/ha-repl.sh.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh
. tests/harness/ha-repl.sh

repl_up
for x in A B; do
	sed -i 's|egress_bytes_per_day = "64K";|egress_bytes_per_day = "64K"; quarantine_on_breach = true;|' \
		"$TOPO_TMP/$x/moat.conf"
done
expect_match "web has quarantine_on_breach on A" "quarantine_on_breach = true;" \
	"$(in_ns "$NS_A" build/gatewayd -nv -c "$TOPO_TMP/A/moat.conf" 2>&1)"
box_start A "$NS_A"; expect_eq "box A's gatewayd starts" 0 $?
box_start B "$NS_B"; expect_eq "box B's gatewayd starts" 0 $?
ctl A ha master >/dev/null; ctl B ha backup >/dev/null

# rec X VERDICT AGE -- the console reader's record of web's guest on box X
# (VERDICT: 1 contained, 2 NOT CONTAINED).
rec() {
	mkdir -p "$TOPO_TMP/state-$1/guests/web"
	python3 - "$TOPO_TMP/state-$1/guests/web/verdict.rec" "$2" "$3" <<'PY'
import struct, sys, time, os
p, v, age = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = struct.pack("=IIqIIII", 0x3152564d, v, int(time.time()) - age, 1, 0, 0, 0)
open(p + ".tmp", "wb").write(b); os.rename(p + ".tmp", p)
PY
}
field() {	# field X SANDBOX KEY -- from ctl X sandboxes --json
	ctl "$1" sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$2': print(s['$3'])"
}
q() { [ "$(field "$1" web quarantined)" = "$2" ]; }

expect_eq "web is not quarantined on A" False "$(field A web quarantined)"
expect_eq "nor on B" False "$(field B web quarantined)"

# --- A's guest reports a breach --------------------------------------------
rec A 2 0
wait_for 20 q A True; expect_ok "A quarantines web" q A True
expect_ok "B quarantines it too, within 5 s" wait_for 5 q B True
expect_eq "B's web has egress none" none "$(field B web egress)"
expect_match "B says whose quarantine it is" 'QUARANTINED \(by the other box\)' \
	"$(ctl B sandboxes 2>&1)"
expect_match "B audited it, from the other box" \
	'"event":"quarantine".*"sandbox":"web".*"reason":"the other box quarantined it"' \
	"$(cat "$TOPO_TMP/B-audit.log")"
expect_match "B logged an alert" "ALERT: sandbox web quarantined by the other box" \
	"$(cat "$TOPO_TMP/B-gatewayd.log")"
expect_match "B kept it in its state" '^web 2 ' "$(cat "$TOPO_TMP/state-B/guest-verdicts")"

# --- the admin clears it on A ----------------------------------------------
expect_match "A: clear-quarantine web" "quarantine of web cleared" "$(ctl A clear-quarantine web 2>&1)"
expect_ok "B's ends with it, within 5 s" wait_for 5 q B False
expect_eq "B's web is an allowlist again" allowlist "$(field B web egress)"
expect_match "B audited the end, by the other box" \
	'"event":"quarantine-cleared".*"sandbox":"web".*"by":"ha-peer"' "$(cat "$TOPO_TMP/B-audit.log")"

# --- made while the link is cut, it arrives when the link is back ----------
ip -n "$NS_B" link set peer0 down
rec A 2 0
wait_for 20 q A True; expect_ok "with the link cut, A quarantines web again" q A True
sleep 3
expect_ok "B does not have it yet" q B False
ip -n "$NS_B" link set peer0 up
expect_ok "B has it once the link is back" wait_for 15 q B True

ip -n "$NS_B" link set peer0 down
expect_match "with the link cut, A clears it" "quarantine of web cleared" \
	"$(ctl A clear-quarantine web 2>&1)"
sleep 3
expect_ok "B still holds it" q B True
ip -n "$NS_B" link set peer0 up
expect_ok "B's ends once the link is back (the whole state says so)" wait_for 15 q B False

# --- a box's own quarantine is not the other box's to lift -----------------
rec B 2 0
wait_for 20 q B True; expect_ok "B's own guest reports a breach: B quarantines web" q B True
expect_ok "A takes it from B" wait_for 5 q A True
expect_match "A: clear-quarantine web (B's)" "quarantine of web cleared" "$(ctl A clear-quarantine web 2>&1)"
sleep 4
expect_ok "B's own quarantine stays" q B True
expect_eq "B's web still has egress none" none "$(field B web egress)"
expect_match "B's is its own" '^web 1 ' "$(cat "$TOPO_TMP/state-B/guest-verdicts")"
# A's whole state, sent again on a new link, empties web's sets there:
# quarantined on B, web has none, and nothing is refused.
states() { grep -c 'ha replication: the whole state to the other box' "$TOPO_TMP/A-gatewayd.log"; }
s0=$(states)
# (6 s: longer than a ping's interval and its deadline, so the link drops.)
ip -n "$NS_B" link set peer0 down; sleep 6; ip -n "$NS_B" link set peer0 up
more() { [ "$(states)" -gt "$s0" ]; }
expect_ok "A sends its whole state again once the link is back" wait_for 20 more
sleep 2
expect_ok "B's own quarantine stays through it" q B True
expect_eq "no refusals counted on B" 0 "$(ctl B status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['ha_replication']['refused'])")"

tap_done
