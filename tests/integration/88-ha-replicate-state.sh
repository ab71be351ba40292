#!/usr/bin/env bash
# Replication carries the state, not only additions (harepl.h):
# - a grant that ends on the master (A) empties the sandbox's sets on the
#   backup (B) too, within the replication lag, and after a failover to B
#   the guest reaches nothing the grant had opened;
# - B restarted late gets A's whole state when the link is made again: an
#   element A opened while B was down is on B, one A removed while B was
#   down is gone from B (its kernel kept it across the restart);
# - a grant for a while made on either box is on both, with its end,
#   a backup's made while the link was cut included;
# - a link left idle for 15 s still carries the next element at once
#   (a heartbeat keeps it up; before, the first element after a quiet
#   spell took about a second, the connection found dead).
# Topology and boxes: tests/harness/ha-repl.sh.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh
. tests/harness/ha-repl.sh

repl_up
box_start A "$NS_A"; expect_eq "box A's gatewayd starts" 0 $?
box_start B "$NS_B"; expect_eq "box B's gatewayd starts" 0 $?
ctl A ha master >/dev/null; ctl B ha backup >/dev/null
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
resolve() { in_ns "$G" dig @$GW_ADDR +time=2 +tries=2 +short "$1" A; }
lacks() { ! has_elem "$@"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# --- a grant's end on A ends it on B -----------------------------------------
# open.test is 203.0.113.10 upstream, where the banner listens on 2222 (one
# of web's allow_ports); web's own list does not name it.
# 10 s: room for a loaded machine to resolve, replicate and connect
# before it ends.
expect_match "A grants web open.test for 10s" '^web may reach open\.test' \
	"$(ctl A allow web open.test --for 10s 2>&1)"
expect_eq "the guest resolves open.test through A" 203.0.113.10 "$(resolve open.test)"
expect_ok "the element lands on B" wait_for 5 has_elem "$NS_B" 203.0.113.10
granted() { ctl "$1" grants web 2>/dev/null | grep -E "^web +$2 " | grep -Eq "$3"; }
expect_ok "B holds A's grant, from the other box" granted B open.test '@ha-peer +ha-peer'
expect_eq "the guest reaches it through A while granted" connected "$(tcp_probe "$G" $INET_HTTP 2222)"
expect_ok "the grant ends on A: its set loses the address" wait_for 16 lacks "$NS_A" 203.0.113.10
t0=$(date +%s%N)
expect_ok "B loses it within 2 s" wait_for 2 lacks "$NS_B" 203.0.113.10
echo "# removal lag after A's set was emptied: $(ms_since $t0) ms"
expect_ok "B's copy of the grant ended with it (the same moment, to a second)" \
	wait_for 3 bash -c "! build/gatewayd ctl -s '${SOCK[B]}' grants web | grep -q open.test"
ctl A ha backup >/dev/null; ctl B ha master >/dev/null
ip -n "$NS_A" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_B" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all
expect_match "after failover to B the guest reaches nothing of the grant" '^(unreachable|timeout)$' \
	"$(tcp_probe "$G" $INET_HTTP 2222)"
ctl B ha backup >/dev/null; ctl A ha master >/dev/null
ip -n "$NS_B" addr del $GW_ADDR/24 dev moat0
ip -n "$NS_A" addr add $GW_ADDR/24 dev moat0
ip -n "$G" neigh flush all

# --- a grant made on the backup is on the master too, and its unallow --------
expect_match "B (backup) grants web denied.test for 1h" '^web may reach denied\.test' \
	"$(ctl B allow web denied.test --for 1h 2>&1)"
expect_ok "A holds it" wait_for 3 granted A denied.test '@ha-peer'
expect_match "B takes it back" 'denied\.test' "$(ctl B unallow web denied.test 2>&1)"
expect_ok "A's copy ends too" wait_for 3 bash -c "! build/gatewayd ctl -s '${SOCK[A]}' grants web | grep -q denied.test"
expect_match "A audited both" '"event":"ha-ungrant".*"name":"denied.test"' "$(cat "$TOPO_TMP/A-audit.log")"
# The same made while the peer link is cut: the backup sends the grants
# made on it when the link is made again.
ip -n "$NS_B" link set peer0 down
sleep 5		# B's heartbeat has found the link gone
expect_match "with the peer link cut, B grants web rebind.test for 1h" '^web may reach rebind\.test' \
	"$(ctl B allow web rebind.test --for 1h 2>&1)"
sleep 1
expect_fail "A does not have it yet" granted A rebind.test .
ip -n "$NS_B" link set peer0 up
expect_ok "A has it once the link is back" wait_for 10 granted A rebind.test '@ha-peer'
expect_match "B takes it back" 'rebind\.test' "$(ctl B unallow web rebind.test 2>&1)"
expect_ok "A's copy ends too" wait_for 3 bash -c "! build/gatewayd ctl -s '${SOCK[A]}' grants web | grep -q rebind.test"

# --- B down, A changes, B back: A's whole state ------------------------------
expect_match "A grants web open.test for 1h" '^web may reach open\.test' \
	"$(ctl A allow web open.test --for 1h 2>&1)"
expect_eq "the guest resolves open.test again" 203.0.113.10 "$(resolve open.test)"
expect_ok "B has it" wait_for 5 has_elem "$NS_B" 203.0.113.10
kill -TERM "${PID[B]}"; wait "${PID[B]}" 2>/dev/null
expect_ok "B's gatewayd stopped; its kernel keeps the element" has_elem "$NS_B" 203.0.113.10
expect_match "A takes the grant back while B is down" 'open\.test' "$(ctl A unallow web open.test 2>&1)"
expect_ok "A's set lost it" wait_for 5 lacks "$NS_A" 203.0.113.10
expect_eq "the guest resolves long.github.test through A while B is down" 203.0.113.14 \
	"$(resolve long.github.test)"
expect_ok "A opened it" has_elem "$NS_A" 203.0.113.14
expect_match "A grants web denied.test for 1h while B is down" '^web may reach denied\.test' \
	"$(ctl A allow web denied.test --for 1h 2>&1)"
expect_fail "B (down) has not" has_elem "$NS_B" 203.0.113.14
box_start B "$NS_B"; expect_eq "B's gatewayd starts again" 0 $?
ctl B ha backup >/dev/null
expect_match "B's restarted gatewayd found the old elements in its kernel" \
	"allowlists: [1-9][0-9]* element\(s\) already in the sets" "$(cat "$TOPO_TMP/B-gatewayd.log")"
expect_ok "B gets what A opened while it was down" wait_for 10 has_elem "$NS_B" 203.0.113.14
expect_ok "and loses what A removed while it was down" wait_for 5 lacks "$NS_B" 203.0.113.10
expect_ok "and the grant A made while it was down, with its time left" granted B denied.test '@ha-peer'
expect_fail "but not the one A took back" granted B open.test .
expect_match "with the time it has left: a timeout" "203\.0\.113\.14 timeout" \
	"$(in_ns "$NS_B" nft list set inet moat allow_web)"
expect_match "A logged the whole state sent" "ha replication: the whole state to the other box" \
	"$(cat "$TOPO_TMP/A-gatewayd.log")"

# --- an idle link delivers the next element at once --------------------------
downs() { grep -c '"event":"ha-peer-down"' "$TOPO_TMP/A-audit.log"; }
d0=$(downs)
sleep 15
t0=$(date +%s%N)
expect_eq "after 15 s of quiet the guest resolves deep.x.github.test" 203.0.113.11 \
	"$(resolve deep.x.github.test)"
for i in $(seq 250); do has_elem "$NS_B" 203.0.113.11 && break; sleep 0.02; done
lag=$(ms_since $t0)
expect_ok "it lands on B" has_elem "$NS_B" 203.0.113.11
echo "# lag after 15 s idle: query sent -> element on B: $lag ms"
expect_ok "in under 0.5 s" test "$lag" -lt 500
expect_eq "the heartbeat kept the link up through the quiet: no ha-peer-down" "$d0" "$(downs)"
tap_done
