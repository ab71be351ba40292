#!/usr/bin/env bash
# A box of an active/standby pair (gateway.ha) knows its role, as
# keepalived gives it through `gatewayd ctl ha`, shows it in ctl status
# and the metrics, audits each change, and forwards nothing unless it is
# master or backup: from start until keepalived has spoken, in fault, and
# once gatewayd has stopped.  The gate is in the kernel (table
# inet moat_ha), so a reload does not open it.  A box without gateway.ha
# has no role and no gate.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UM=mha$$	# a member of group moat, not an admin
topo_up || { not_ok "topology"; exit 1; }
trap 'rc=$?; userdel "$UM" 2>/dev/null; topo_down; exit $rc' EXIT
trap 'userdel "$UM" 2>/dev/null; topo_down; exit 130' INT
trap 'userdel "$UM" 2>/dev/null; topo_down; exit 143' TERM
bash gatewayd/install-users.sh
useradd -M -N -G moat -s /usr/sbin/nologin "$UM" || { not_ok "useradd $UM"; exit 1; }
MEMBER_GATEWAYD=$(topo_pub build/gatewayd)	# a copy a member can run
chmod 711 "$TOPO_TMP"
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services || { not_ok "services"; exit 1; }
# A plain forwarded service (not 80/443, which go to the proxy).
topo_banner "$NS_INET" $INET_ADDR 2222 "far-end" || { not_ok "banner"; exit 1; }
PROM=$TOPO_TMP/textfile/moat.prom
mkdir -p "$TOPO_TMP/textfile"

fwd() { tcp_probe $TOPO-dev $INET_ADDR 2222; }
web() { in_ns $TOPO-dev curl -s --max-time 6 http://$INET_HTTP/ 2>/dev/null; }
gate() { in_ns "$NS_GW" nft list table inet moat_ha 2>&1; }
gw_stop() { kill "$GW_PID"; wait "$GW_PID" 2>/dev/null; }

# --- a single box: unchanged -------------------------------------------
sed "s|^gateway: {|gateway: {\n  metrics: { textfile = \"$PROM\"; interval = 1; };|" \
	examples/demo.conf >"$GW_CONF"
gw_start; expect_eq "a single box starts" 0 $?
st=$(gw_ctl status)
expect_eq "a single box shows no role" "" "$(grep '^ha ' <<<"$st")"
expect_eq "nor in --json" "" "$(gw_ctl status --json | grep -o '"ha":')"
out=$(gw_ctl ha master 2>&1); rc=$?
expect_eq "ctl ha on a single box is refused (exit 1)" 1 $rc
expect_match "saying why" "not in a pair: set gateway.ha.enabled" "$out"
expect_match "a single box has no gate" "No such file|does not exist|Error" "$(gate)"
expect_eq "a single box forwards" connected "$(fwd)"
has_up() { grep -q '^moat_up 1$' "$PROM" 2>/dev/null; }
wait_for 10 has_up
expect_eq "and has no role metric" "" "$(grep moat_ha "$PROM")"
gw_stop

# --- the key ------------------------------------------------------------
sed "s|^gateway: {|gateway: {\n  ha: { enabled = true; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };|" \
	examples/demo.conf >"$GW_CONF"
expect_match "-nv prints gateway.ha" "ha: \{ enabled = true; \};" \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
sed "s|^gateway: {|gateway: {\n  ha: { enabled = 3; };|" examples/demo.conf >"$TOPO_TMP/bad.conf"
expect_match "a bad gateway.ha is an error with file:line" "bad.conf:[0-9]+: .*enabled" \
	"$(in_ns "$NS_GW" build/gatewayd -n -c "$TOPO_TMP/bad.conf" 2>&1)"

# --- started: no role yet, nothing forwarded ---------------------------
rm -f "$PROM"
gw_start; expect_eq "a box of a pair starts" 0 $?
expect_match "its role is unknown until keepalived speaks" \
	"^ha +unknown since [0-9T:-]+Z \([0-9]+s\), forwarding nothing$" "$(gw_ctl status | grep '^ha ')"
expect_match "the gate is shut in the kernel" "drop" "$(gate)"
expect_eq "a guest's forwarded connection goes nowhere" timeout "$(fwd)"
expect_eq "nor does the proxy fetch for it" "" "$(web)"

# --- master ------------------------------------------------------------
gw_ctl ha master; expect_eq "ctl ha master (exit 0)" 0 $?
expect_match "status: master" "^ha +master since [0-9T:-]+Z \([0-9]+s\), forwarding$" \
	"$(gw_ctl status | grep '^ha ')"
expect_match "--json: role and since" '"ha":\{"role":"master","since":[0-9]+\}' "$(gw_ctl status --json)"
expect_eq "the master forwards" connected "$(fwd)"
expect_eq "and proxies" "hello from the internet" "$(web)"
is_master() { grep -q '^moat_ha_role{role="master"} 1$' "$PROM" 2>/dev/null; }
expect_ok "the metrics say master" wait_for 10 is_master
expect_match "and when it changed" '^moat_ha_role_change_timestamp_seconds [1-9][0-9]+$' "$(cat "$PROM")"
expect_match "the other roles are 0" '^moat_ha_role\{role="fault"\} 0$' "$(cat "$PROM")"

# --- usage, who may ----------------------------------------------------
gw_ctl ha primary >/dev/null 2>&1; expect_eq "an unknown role is refused" 1 $?
gw_ctl ha >/dev/null 2>&1; expect_eq "so is none" 1 $?
expect_match "and the role stands" "^ha +master" "$(gw_ctl status | grep '^ha ')"
out=$(runuser -u "$UM" -- "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" ha fault 2>&1); rc=$?
expect_eq "a member (group moat, not admin) may not set the role (exit 1)" 1 $rc
expect_match "... and is told who may" "for root and the admin group only" "$out"
expect_match "... and the role stands" "^ha +master" "$(gw_ctl status | grep '^ha ')"

# --- fault -------------------------------------------------------------
gw_ctl ha fault; expect_eq "ctl ha fault (exit 0)" 0 $?
expect_match "status: fault, forwarding nothing" "^ha +fault since .*forwarding nothing$" \
	"$(gw_ctl status | grep '^ha ')"
expect_eq "in fault a guest's forwarded connection goes nowhere" timeout "$(fwd)"
expect_eq "nor does the proxy fetch for it" "" "$(web)"
gw_ctl reload >/dev/null
expect_eq "a reload leaves the gate shut" timeout "$(fwd)"

# --- backup ------------------------------------------------------------
gw_ctl ha backup; expect_eq "ctl ha backup (exit 0)" 0 $?
expect_eq "the backup forwards (its policy is fully applied)" connected "$(fwd)"
expect_match "each change is audited" \
	'"event":"ha-role".*"role":"master".*"was":"unknown"' "$(grep ha-role "$GW_AUDIT" | head -1)"
expect_eq "three changes, three lines" 3 "$(grep -c '"event":"ha-role"' "$GW_AUDIT")"

# --- stopped: what is down forwards nothing ----------------------------
gw_ctl ha master >/dev/null
gw_stop
expect_match "gatewayd stopped: the gate is shut" "drop" "$(gate)"
expect_eq "and nothing is forwarded" timeout "$(fwd)"
in_ns "$NS_GW" build/nft-rules flush >/dev/null 2>&1
expect_match "nft-rules flush removes the gate with the policy" "No such file|does not exist|Error" "$(gate)"

# --- out of the pair: the gate goes ------------------------------------
sed "s|^gateway: {|gateway: {\n  metrics: { textfile = \"$PROM\"; interval = 1; };|" \
	examples/demo.conf >"$GW_CONF"
gw_start; expect_eq "the box starts without gateway.ha" 0 $?
expect_match "the gate is gone" "No such file|does not exist|Error" "$(gate)"
expect_eq "and it forwards again" connected "$(fwd)"
tap_done
