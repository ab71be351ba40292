#!/usr/bin/env bash
# gatewayd watches its own tables.  A rule deleted or the table flushed by
# an admin's nft is reported within 2 s from the nf_tables notification
# (the timer is off here), audited naming the object, shown by ctl status
# and the metrics, and repaired: the rule is back and a guest refused
# before is refused again; so is the table deleted, and a change whose
# notification was lost (an overrun) is found all the same.  With repair
# off it stays reported (and the hole is real) until gatewayd's own
# reload puts the policy back, which is not drift itself.  A foreign table whose forward chain runs before
# moat's is reported; one that runs after is not.  The timed comparison
# runs when gateway.verify.interval asks, and not when it is 0.  The
# gate of a pair (gateway.ha), opened by hand, is shut again.
#
# The kernel here gives tables the flag owner, which refuses every other
# program's change to moat's tables; MOAT_TEST_NO_TABLE_OWNER has
# gatewayd apply them as on a kernel without it, so nft can tamper.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
cp examples/demo.conf "$GW_CONF"
PROM=$TOPO_TMP/moat.prom
# The forward chain decides tcp 80 (no interception); the timer is off,
# so whatever is found within 2 s was found by a notification.
sed -i -e 's/intercept = true;/intercept = false;/' \
	-e "s|^  treat_as_public|  verify: { interval = 0; repair = true; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n&|" "$GW_CONF"
export MOAT_TEST_NO_TABLE_OWNER=1
gw_start; expect_eq "gatewayd starts" 0 $?
expect_fail "... its tables have no owner (as on an older kernel)" \
	grep -q "flags owner" <<<"$(in_ns "$NS_GW" nft list table inet moat | head -3)"

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
n_audit() { audit "$1" | wc -l; }
status() { gw_ctl status; }
vjson() { gw_ctl status --json | python3 -c "import json,sys
v=json.load(sys.stdin)['verify']; print(v['$1'])"; }
metric() { grep -E "^$1( |\{)" "$PROM"; }
rule_handle() { # rule_handle TEXT -- handle of the first guest_fwd rule matching TEXT
	in_ns "$NS_GW" nft -a list chain inet moat guest_fwd | grep -m1 -F "$1" |
		sed -n 's/.*# handle \([0-9]*\)$/\1/p'
}
locked_web() { tcp_probe "$TOPO-locked" 203.0.113.10 80; }
has_dns_rule() { in_ns "$NS_GW" nft list chain inet moat guest_fwd | grep -q 'udp dport 53 goto refuse_dns'; }

expect_eq "locked (egress none) is refused the web" unreachable "$(locked_web)"
expect_eq "dev (open) reaches it" connected "$(tcp_probe "$TOPO-dev" 203.0.113.10 80)"
expect_match "ctl status: the kernel matches the policy" \
	"^verify +(matches the policy|not yet)" "$(status)"
wait_for 5 test -s "$PROM"
expect_eq "moat_policy_drift 0" "moat_policy_drift 0" "$(metric moat_policy_drift)"

# gatewayd's own reloads (each a whole replacement without the owner
# flag: thousands of notifications) are not drift.
gw_ctl reload >/dev/null
sed -i 's|"pypi.org", |"pypi.org", "example.test", |' "$GW_CONF"
gw_ctl reload >/dev/null
sleep 2
expect_eq "two reloads of its own: no policy-drift audited" 0 "$(n_audit policy-drift)"
expect_eq "... verify JSON: no drift" False "$(vjson drift)"

# A rule deleted by hand: found from the notification, named, repaired.
h=$(rule_handle 'udp dport 53 goto refuse_dns')
expect_ok "nft delete rule by hand" in_ns "$NS_GW" nft delete rule inet moat guest_fwd handle "${h:-0}"
wait_for 2 test "$(n_audit policy-repaired)" -ge 1
expect_match "within 2 s: policy-drift audited, naming the rule's chain" \
	'"event":"policy-drift".*"object":"delete rule inet moat guest_fwd \(netlink portid [0-9]+\)","found":"notification","difference":"-rule inet moat guest_fwd #[0-9]+: meta l4proto udp udp dport 53 goto refuse_dns"' \
	"$(audit policy-drift)"
expect_match "... and policy-repaired" '"object":"delete rule inet moat guest_fwd' "$(audit policy-repaired)"
expect_ok "... the rule is back" has_dns_rule
expect_eq "... nft-rules verify agrees" 0 \
	"$(in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify >/dev/null 2>&1; echo $?)"
expect_match "... ctl status counts the repair" "repair on, 1 repaired" "$(status)"
grep -E 'gatewayd.*policy drift \(notification\)' "$GW_LOG" >/dev/null
expect_eq "... and it was logged" 0 $?

# The table flushed: the guest refused before is refused again.
expect_ok "nft flush table inet moat" in_ns "$NS_GW" nft flush table inet moat
wait_for 2 test "$(n_audit policy-repaired)" -ge 2
expect_eq "within 2 s: repaired a second time" 2 "$(n_audit policy-repaired)"
expect_match "... the flush named (a rule of some chain deleted)" \
	'"object":"delete rule inet moat [a-z_0-9]+ \(netlink' "$(audit policy-drift | tail -1)"
expect_eq "... locked is refused the web again" unreachable "$(locked_web)"
sleep 2
expect_eq "... moat_policy_drift back to 0" "moat_policy_drift 0" "$(metric moat_policy_drift)"

# The table deleted: made again, with its rules.
expect_ok "nft delete table inet moat" in_ns "$NS_GW" nft delete table inet moat
wait_for 2 test "$(n_audit policy-repaired)" -ge 3
expect_match "within 2 s: the deletion named, and repaired" \
	'"object":"delete [a-z]+ inet moat' "$(audit policy-repaired | tail -1)"
expect_ok "... the table is back, with the rule" has_dns_rule
expect_eq "... locked is refused the web again" unreachable "$(locked_web)"

# Notifications lost: while gatewayd is stopped, another program's
# transaction of 500,000 elements (into a set of its own, made before)
# overruns gatewayd's socket, and the notification of a rule deleted
# after that is dropped.  The kernel's ENOBUFS has gatewayd compare at
# once (the timer is still off): the object is the difference itself,
# since no notification named it.
python3 -c 'import sys
for b in range(0, 500000, 1000):
    print("add element ip junk s { " + ", ".join("10.%d.%d.%d" % (i >> 16, (i >> 8) & 255, i & 255) for i in range(b, b + 1000)) + " }")' >"$TOPO_TMP/junk.nft"
in_ns "$NS_GW" nft add table ip junk
in_ns "$NS_GW" nft add set ip junk s '{ type ipv4_addr; size 600000; }'
sleep 1
kill -STOP "$GW_PID"
in_ns "$NS_GW" nft -f "$TOPO_TMP/junk.nft"
h=$(rule_handle 'udp dport 53 goto refuse_dns')
in_ns "$NS_GW" nft delete rule inet moat guest_fwd handle "${h:-0}"
kill -CONT "$GW_PID"
wait_for 5 test "$(n_audit policy-repaired)" -ge 4
expect_match "notifications lost: compared at once, the rule found missing" \
	'"object":"-rule inet moat guest_fwd #[0-9]+: [^"]*","found":"notifications lost","difference":"-rule inet moat guest_fwd #[0-9]+: meta l4proto udp udp dport 53 goto refuse_dns"' \
	"$(audit policy-drift | tail -1)"
expect_ok "... and put back" has_dns_rule
in_ns "$NS_GW" nft delete table ip junk

# Timer off: nothing compares unless a notification asks.
last=$(vjson last)
sleep 3
expect_eq "verify.interval = 0: no timed comparison" "$last" "$(vjson last)"

# Repair off: the drift stays reported, and the hole is real.
sed -i 's/repair = true;/repair = false;/' "$GW_CONF"
gw_ctl reload >/dev/null
expect_ok "repair off; nft flush table inet moat" in_ns "$NS_GW" nft flush table inet moat
wait_for 2 test "$(n_audit policy-drift)" -ge 5
expect_eq "within 2 s: policy-drift audited" 5 "$(n_audit policy-drift)"
sleep 2
expect_eq "... nothing repaired" 4 "$(n_audit policy-repaired)"
expect_match "... ctl status shows the drift, naming the first difference" \
	'drift +-rule inet moat ' "$(status)"
expect_match "... and DRIFT, repair off" "^verify +DRIFT, .*repair off" "$(status)"
expect_eq "... verify JSON: drift" True "$(vjson drift)"
expect_eq "... moat_policy_drift 1" "moat_policy_drift 1" "$(metric moat_policy_drift)"
expect_match "... the object as a label" \
	'^moat_policy_drift_object\{kind="moat",object="-rule inet moat .*"\} 1$' \
	"$(metric moat_policy_drift_object)"
# No rule refuses it any more (nor masquerades it: its packets leave
# with the guest's own address, and no answer finds its way back).
expect_eq "... and the hole is real: locked is no longer refused" timeout "$(locked_web)"
# gatewayd's own reload puts the policy back: that is no drift, and
# what was reported is cleared.
gw_ctl reload >/dev/null
wait_for 2 test "$(n_audit policy-drift-cleared)" -ge 1
expect_eq "a reload puts it back: policy-drift-cleared" 1 "$(n_audit policy-drift-cleared)"
expect_eq "... no new policy-drift" 5 "$(n_audit policy-drift)"
expect_eq "... locked is refused again" unreachable "$(locked_web)"
sleep 2
expect_eq "... moat_policy_drift 0" "moat_policy_drift 0" "$(metric moat_policy_drift)"

# Another table: a forward chain after moat's is no concern; one before
# it is reported (not touched), and its removal clears the report.
in_ns "$NS_GW" nft add table inet later
in_ns "$NS_GW" nft add chain inet later fw '{ type filter hook forward priority 10; policy accept; }'
sleep 2
expect_eq "a foreign forward chain at priority 10 (after moat's): not reported" \
	None "$(vjson foreign)"
in_ns "$NS_GW" nft add table ip earlier
in_ns "$NS_GW" nft add chain ip earlier fw '{ type filter hook forward priority -10; policy accept; }'
foreign_seen() { [ "$(vjson foreign)" != None ]; }
wait_for 2 foreign_seen
expect_eq "a foreign ip forward chain at -10 (before moat's): reported within 2 s" \
	"chain ip earlier fw hooks forward at priority -10, before inet moat forward (0)" "$(vjson foreign)"
expect_match "... audited" '"event":"policy-drift","object":"chain ip earlier fw hooks forward at priority -10, before inet moat forward \(0\)","reason":"another table may accept guests' "$(audit policy-drift)"
expect_match "... in ctl status" "another table may accept guests' packets first" "$(status)"
expect_ok "... and left alone" in_ns "$NS_GW" nft list chain ip earlier fw
out=$(in_ns "$NS_GW" build/nft-rules -c "$GW_CONF" verify 2>&1); rc=$?
expect_eq "nft-rules verify: moat's tables match (exit 0)" 0 $rc
expect_match "... with the same note" \
	"note: chain ip earlier fw hooks forward at priority -10, before inet moat forward \(0\): another table" "$out"
sleep 2
expect_eq "... moat_policy_drift 1" "moat_policy_drift 1" "$(metric moat_policy_drift)"
in_ns "$NS_GW" nft delete table ip earlier
in_ns "$NS_GW" nft delete table inet later
foreign_gone() { [ "$(vjson foreign)" = None ]; }
wait_for 2 foreign_gone
expect_eq "the foreign table deleted: no longer reported" None "$(vjson foreign)"

# The timer: with verify.interval = 2, comparisons run with nothing
# changed (a reload turns it on).
sed -i 's/interval = 0; repair = false;/interval = 2; repair = true;/' "$GW_CONF"
gw_ctl reload >/dev/null
last=$(vjson last)
sleep 5
expect_fail "verify.interval = 2: compared again with nothing changed" \
	test "$last" = "$(vjson last)"
expect_eq "... and found nothing" False "$(vjson drift)"

# The gate of a pair (gateway.ha) is no one's table even where the
# kernel has the flag owner: a gate opened by hand while the box is
# still unknown to keepalived (shut) is shut again.
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
unset MOAT_TEST_NO_TABLE_OWNER
sed -i 's|^  verify: {|  ha: { enabled = true; };\n&|' "$GW_CONF"
gw_start; expect_eq "gatewayd starts with gateway.ha" 0 $?
gate_drops() { in_ns "$NS_GW" nft list chain inet moat_ha forward | grep -cw drop; }
expect_eq "role unknown: the gate's forward chain drops" 1 "$(gate_drops)"
r0=$(n_audit policy-repaired)
expect_ok "nft flush chain inet moat_ha forward (the gate opened)" \
	in_ns "$NS_GW" nft flush chain inet moat_ha forward
wait_for 2 test "$(n_audit policy-repaired)" -gt "$r0"
expect_match "within 2 s: audited, naming the gate" \
	'"event":"policy-drift","object":"delete rule inet moat_ha forward' "$(audit policy-drift | tail -1)"
expect_match "... and repaired" '"object":"table inet moat_ha"' "$(audit policy-repaired | tail -1)"
expect_eq "... the gate drops again" 1 "$(gate_drops)"
tap_done
