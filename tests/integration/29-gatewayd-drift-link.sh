#!/usr/bin/env bash
# gatewayd watches the kernel state beside its tables.  A guest's bridge
# port flipped out of isolation is reported within 2 s from the link
# notification (the timer is off then), named, audited, in ctl status and
# the metrics, and left alone: verify.repair_network is off by default.
# With it on, the isolation is put back and guests are kept apart again.
# Forwarding turned off and the ICMP rate limit put back are found by the
# timed comparison within one interval, and repaired when asked.  A
# foreign inet table whose forward hook runs before moat's and accepts
# is reported.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
cp examples/demo.conf "$GW_CONF"
PROM=$TOPO_TMP/moat.prom
sed -i -e "s|^  treat_as_public|  verify: { interval = 0; repair = true; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n&|" "$GW_CONF"
gw_start; expect_eq "gatewayd starts" 0 $?

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
n_audit() { audit "$1" | wc -l; }
status() { gw_ctl status; }
njson() { gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['kernel_watch']['$1'])"; }
metric() { grep -E "^$1( |\{)" "$PROM"; }
isolated() { ip -d -n "$NS_GW" link show mt-web | grep -q "isolated on"; }
expect_ok "mt-web starts isolated" isolated
expect_eq "nothing drifts at start" "[]" "$(njson drift)"
expect_eq "... verify.repair_network is off by default" False "$(njson repair)"

# A port flipped out of isolation: reported from the notification.
expect_ok "ip link set mt-web type bridge_slave isolated off" \
	ip -n "$NS_GW" link set mt-web type bridge_slave isolated off
wait_for 2 test "$(n_audit policy-drift)" -ge 1
expect_match "within 2 s: policy-drift audited, naming the port" \
	'"event":"policy-drift","object":"bridge port mt-web of moat0: isolation off","found":"notification"' \
	"$(audit policy-drift)"
expect_match "... ctl status: DRIFT, naming the port" \
	'drift +bridge port mt-web of moat0: isolation off' "$(status)"
wait_for 3 grep -q '^moat_policy_drift 1' "$PROM"
expect_eq "... moat_policy_drift 1" "moat_policy_drift 1" "$(metric moat_policy_drift)"
expect_match "... the port as a label" \
	'^moat_policy_drift_object\{kind="link",object="bridge port mt-web of moat0: isolation off"\} 1$' \
	"$(metric moat_policy_drift_object)"
sleep 1
expect_fail "... repair_network off: left as the admin set it" isolated
expect_eq "... nothing repaired" 0 "$(n_audit policy-repaired)"
grep -E 'gatewayd.*policy drift \(notification\): bridge port mt-web' "$GW_LOG" >/dev/null
expect_eq "... and logged" 0 $?

# Put back by hand: cleared.
ip -n "$NS_GW" link set mt-web type bridge_slave isolated on
wait_for 2 test "$(n_audit policy-drift-cleared)" -ge 1
expect_match "isolation back on by hand: policy-drift-cleared" \
	'"object":"bridge port mt-web of moat0: isolation off"' "$(audit policy-drift-cleared)"
wait_for 3 grep -q '^moat_policy_drift 0' "$PROM"
expect_eq "... moat_policy_drift 0" "moat_policy_drift 0" "$(metric moat_policy_drift)"

# repair_network on: put back at once.
sed -i 's/repair = true; }/repair = true; repair_network = true; }/' "$GW_CONF"
gw_ctl reload >/dev/null
expect_eq "verify.repair_network = true after a reload" True "$(njson repair)"
r0=$(n_audit policy-repaired)
ip -n "$NS_GW" link set mt-web type bridge_slave isolated off
wait_for 2 test "$(n_audit policy-repaired)" -gt "$r0"
expect_match "within 2 s: the flip caught (policy-drift)" \
	'"event":"policy-drift","object":"bridge port mt-web of moat0: isolation off","found":"notification"' \
	"$(audit policy-drift | tail -1)"
expect_match "... and the port's isolation repaired, audited" \
	'"event":"policy-repaired","object":"bridge port","port":"mt-web"' "$(audit policy-repaired | tail -1)"
expect_ok "... mt-web is isolated again" isolated

# Sysctls: the timer finds them (the kernel tells no one).
sed -i 's/interval = 0; repair = true; repair_network = true;/interval = 2; repair = true; repair_network = false;/' "$GW_CONF"
gw_ctl reload >/dev/null
fwd0=$(ip netns exec "$NS_GW" sysctl -n net.ipv4.conf.moat0.forwarding)
expect_eq "forwarding on the bridge is on" 1 "$fwd0"
d0=$(n_audit policy-drift)
expect_ok "sysctl net.ipv4.conf.all.forwarding=0" \
	ip netns exec "$NS_GW" sysctl -qw net.ipv4.conf.all.forwarding=0
wait_for 5 test "$(n_audit policy-drift)" -gt "$d0"
expect_match "within one interval (2 s): forwarding on the bridge named" \
	'"event":"policy-drift","object":"sysctl net.ipv4.conf.moat0.forwarding = 0, was 1","found":"timer"' \
	"$(audit policy-drift)"
expect_match "... and on the uplink" \
	'"object":"sysctl net.ipv4.conf.up0.forwarding = 0, was 1"' "$(audit policy-drift)"
expect_match "... ctl status names it" 'drift +sysctl net.ipv4.conf.moat0.forwarding = 0, was 1' "$(status)"
wait_for 3 grep -q 'kind="sysctl"' "$PROM"
expect_match "... a sysctl series in the metrics" \
	'moat_policy_drift_object\{kind="sysctl",object="sysctl net.ipv4.conf.moat0.forwarding = 0, was 1"\} 1' \
	"$(metric moat_policy_drift_object)"
sleep 3
expect_eq "... repair_network off: still 0" 0 "$(ip netns exec "$NS_GW" sysctl -n net.ipv4.conf.moat0.forwarding)"

r0=$(n_audit policy-repaired)
d0=$(n_audit policy-drift)
ip netns exec "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=1000
wait_for 5 test "$(n_audit policy-drift)" -gt "$d0"
expect_match "the ICMP rate limit put back by hand: reported within one interval" \
	'"object":"icmp sysctls: [^"]*ratelimit' "$(audit policy-drift | tail -1)"
sed -i 's/repair_network = false;/repair_network = true;/' "$GW_CONF"
gw_ctl reload >/dev/null
wait_for 5 test "$(n_audit policy-repaired)" -ge $((r0 + 3))
expect_eq "repair_network on: forwarding on the bridge set back" 1 \
	"$(ip netns exec "$NS_GW" sysctl -n net.ipv4.conf.moat0.forwarding)"
expect_eq "... on the uplink" 1 "$(ip netns exec "$NS_GW" sysctl -n net.ipv4.conf.up0.forwarding)"
expect_eq "... the ICMP limit lifted again" 0 "$(ip netns exec "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"
expect_match "... audited (all.forwarding set back sets every interface)" \
	'"event":"policy-repaired","object":"net.ipv4.conf.all.forwarding"' "$(audit policy-repaired)"
no_drift() { [ "$(njson drift)" = "[]" ]; }
wait_for 5 no_drift
expect_eq "... nothing drifts any more" "[]" "$(njson drift)"

# A port added without isolation: not from its notification (a tap is
# isolated a moment after it joins), but by the next timed comparison.
ip -n "$NS_GW" link add mt-new type veth peer name mt-new-p
ip -n "$NS_GW" link set mt-new master moat0
ip -n "$NS_GW" link set mt-new up
new_caught() { audit policy-drift | grep -q 'bridge port mt-new of moat0'; }
wait_for 6 new_caught
expect_match "a new port without isolation: caught by the timer" \
	'"event":"policy-drift","object":"bridge port mt-new of moat0: isolation off","found":"timer"' \
	"$(audit policy-drift)"
expect_match "... and isolated (repair_network on)" "isolated on" "$(ip -d -n "$NS_GW" link show mt-new)"
ip -n "$NS_GW" link del mt-new

# A foreign inet table whose forward chain runs first and accepts.
in_ns "$NS_GW" nft add table inet early
in_ns "$NS_GW" nft add chain inet early fw '{ type filter hook forward priority -100; policy accept; }'
in_ns "$NS_GW" nft add rule inet early fw accept
vjson() { gw_ctl status --json | python3 -c "import json,sys
v=json.load(sys.stdin)['verify']; print(v['$1'])"; }
foreign_seen() { [ "$(vjson foreign)" != None ]; }
wait_for 2 foreign_seen
expect_match "a foreign inet chain at -100 that accepts: reported within 2 s" \
	"chain inet early fw hooks forward at priority -100, before inet moat forward" "$(vjson foreign)"
expect_match "... audited" '"event":"policy-drift","object":"chain inet early fw hooks forward' "$(audit policy-drift)"
expect_ok "... and left alone" in_ns "$NS_GW" nft list chain inet early fw
in_ns "$NS_GW" nft delete table inet early
tap_done
