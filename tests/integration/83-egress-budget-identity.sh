#!/usr/bin/env bash
# An egress budget limits a guest, not a name: a sandbox renamed at its
# address, or removed and created again elsewhere by the same owner, in
# the same window, takes over the total that was spent and is refused as
# before; a sandbox of another owner at a new address starts from zero.
# Windows are MOAT_TEST_EGRESS_WINDOW seconds long here (a test-only knob:
# a real window is a UTC day).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

W=150
export MOAT_TEST_EGRESS_WINDOW=$W
topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest dev3 10.77.0.13 52:54:00:00:00:0d mt-dev3
topo_guest other 10.77.0.14 52:54:00:00:00:0e mt-other
topo_guest dev5 10.77.0.15 52:54:00:00:00:0f mt-dev5
topo_services
topo_bg "$NS_INET" sink socat -u TCP-LISTEN:9000,bind=$INET_HTTP,fork,reuseaddr OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 9000

conf() {	# conf SANDBOX-LINES -- the gateway and these sandboxes
	sed -n '1,/^sandboxes = (/p' examples/demo.conf |
		sed 's/intercept = true;/intercept = false;/' >"$GW_CONF"
	printf '%s\n);\n' "$1" >>"$GW_CONF"
	gw_own_state
}
sb() {	# sb NAME ADDR MAC TAP OWNER [,] -- one sandbox, 400K a window
	printf '  { name = "%s"; mac = "%s"; address = "%s"; tap = "%s"; egress = "open"; owner = "%s"; egress_bytes_per_day = "400K"; }%s\n' \
		"$1" "$3" "$2" "$4" "$5" "${6:-}"
}
field() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s.get('$2', '-'))"; }
upload() { head -c "$2" /dev/zero | in_ns "$TOPO-$1" timeout 20 socat -u - TCP:$INET_HTTP:9000; }

left() { echo $((W - $(date +%s) % W)); }
[ "$(left)" -ge 110 ] || sleep "$(left)"
conf "$(sb dev 10.77.0.11 52:54:00:00:00:0b mt-dev bob)"
gw_start; expect_eq "gatewayd starts" 0 $?

upload dev 500000
refused() { [ "$(field "$1" egress_refused)" = True ]; }
expect_ok "dev spends its budget" wait_for 5 refused dev
expect_eq "dev is refused" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
spent=$(field dev egress_spent)

# --- renamed, same address -------------------------------------------------
conf "$(sb dev2 10.77.0.11 52:54:00:00:00:0b mt-dev bob)"
expect_ok "reload with dev renamed dev2" gw_ctl reload
expect_ok "dev2 has dev's total ($spent -> $(field dev2 egress_spent))" test "$(field dev2 egress_spent)" -ge "$spent"
expect_eq "dev2, the same guest, is still refused" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_match "the takeover is logged" "sandbox dev2: takes over the egress total of dev" "$(cat "$GW_LOG")"

# --- destroyed, created again elsewhere by the same owner ------------------
conf ""
expect_ok "reload with dev2 removed" gw_ctl reload
conf "$(sb dev3 10.77.0.13 52:54:00:00:00:0d mt-dev3 bob ,)
$(sb other 10.77.0.14 52:54:00:00:00:0e mt-other carol)"
expect_ok "reload with bob's dev3 at another address, and carol's other" gw_ctl reload
expect_ok "bob's dev3 has the total bob's sandbox spent ($(field dev3 egress_spent))" test "$(field dev3 egress_spent)" -ge "$spent"
expect_eq "dev3 is refused" unreachable "$(tcp_probe $TOPO-dev3 $INET_HTTP 80)"
expect_eq "carol's new sandbox starts from zero" 0 "$(field other egress_spent)"
expect_eq "and connects" connected "$(tcp_probe $TOPO-other $INET_HTTP 80)"

# --- a restart keeps the owner with the total -------------------------------
conf "$(sb other 10.77.0.14 52:54:00:00:00:0e mt-other carol)"
expect_ok "reload with dev3 removed" gw_ctl reload
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
conf "$(sb other 10.77.0.14 52:54:00:00:00:0e mt-other carol ,)
$(sb dev5 10.77.0.15 52:54:00:00:00:0f mt-dev5 bob)"
gw_start; expect_eq "gatewayd starts again with bob's dev5 at yet another address" 0 $?
expect_ok "dev5 has bob's total, kept with its owner across the restart ($(field dev5 egress_spent))" test "$(field dev5 egress_spent)" -ge "$spent"
expect_eq "dev5 is refused" unreachable "$(tcp_probe $TOPO-dev5 $INET_HTTP 80)"
tap_done
