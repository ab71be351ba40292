#!/usr/bin/env bash
# One gatewayd per network namespace: a second one started by hand beside
# the running one refuses before it changes anything (no journal
# recovered, no table applied, no HA gate shut), names the pid that owns
# the tables, and the first goes on.  The claim ends with its process: once
# the first has stopped, the next one starts.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services || { not_ok "services"; exit 1; }
sed 's/intercept = true;/intercept = false;/' examples/demo.conf >"$GW_CONF"
gw_start; expect_eq "the first gatewayd starts" 0 $?
# The ruleset without what traffic changes on its own (counters, the
# time left of set elements).
ruleset() {
	in_ns "$NS_GW" nft list ruleset 2>&1 | grep -v '^\s*# handle' |
		sed -E 's/packets [0-9]+ bytes [0-9]+//; s/ expires [0-9hms.]+//'
}
before=$(ruleset)

# The second: another policy (dev closed), a pair's gate, its own files.
C2=$TOPO_TMP/second.conf
sed -e 's|^gateway: {|gateway: {\n  ha: { enabled = true; };|' \
    -e "s|^gateway: {|gateway: { state_dir = \"$TOPO_TMP/state2\";|" \
    -e 's/egress = "open"; owner = "bob";/egress = "none"; owner = "bob";/' \
    -e 's/intercept = true;/intercept = false;/' examples/demo.conf >"$C2"
grep -q 'egress = "none"; owner = "bob"' "$C2" || not_ok "second config differs from the first"
host_guard_cmd build/gatewayd -d -c "$C2" -s "$TOPO_TMP/gw2.sock" -a "$TOPO_TMP/audit2.log" || exit 1
t0=$EPOCHREALTIME
out=$(timeout 30 ip netns exec "$NS_GW" build/gatewayd -d -c "$C2" -s "$TOPO_TMP/gw2.sock" \
	-a "$TOPO_TMP/audit2.log" 2>&1); rc=$?
ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
expect_eq "a second gatewayd in the same namespace exits 1 (in ${ms} ms)" 1 $rc
expect_match "... naming the pid that owns the tables" \
	"another gatewayd \(pid $GW_PID\) owns this network namespace's moat tables; stop it first .*; not starting" "$out"
expect_eq "... and it changed nothing in the kernel (no policy, no HA gate)" "$before" "$(ruleset)"
expect_eq "... nor made its state folder" "" "$(ls -d "$TOPO_TMP/state2" 2>/dev/null)"
expect_ok "the first still answers its control socket" gw_ctl status
expect_eq "and dev still reaches the internet through it" connected \
	"$(tcp_probe $TOPO-dev $INET_HTTP 80)"

# A gatewayd -n (check only) is not a second daemon: it still runs.
expect_ok "gatewayd -n still checks a config beside the running one" \
	ip netns exec "$NS_GW" build/gatewayd -n -c "$C2"

kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
GW_SOCK=$TOPO_TMP/gw2.sock GW_AUDIT=$TOPO_TMP/audit3.log
sed -i '/ha: { enabled = true; };/d' "$C2"
GW_CONF=$C2 gw_start; expect_eq "once the first has stopped, the next one starts (no stale claim)" 0 $?
tap_done
