#!/usr/bin/env bash
# The canary with gateway.ipv6: its namespace gets the IPv6 address every
# guest of its IPv4 address gets (the network's /64, host part from the
# IPv4 one) and the gateway's ::1 as its IPv6 route, so its scan runs
# over both families; on a healthy dual-stack gateway it reports
# contained (the gateway's own IPv6 on the sandbox network, where DNS
# and the proxy answer, is no breach).  An accept rule in inet moat's
# input chain for the canary's IPv6 to the gateway host's ssh makes the
# next scan report the breach on one of the host's IPv6 addresses.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
topo_up || { not_ok "topology comes up"; tap_done; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_services
ip -n "$NS_GW" addr add fd99::1/64 dev lan0 nodad
topo_banner "$NS_GW" fd99::1 22 "SSH-2.0-gateway-host-v6"
topo_bg "$NS_INET" cc-dns-inet python3 tests/harness/cc-dns.py \
	203.0.113.53 allowed.test=$INET_HTTP
topo_wait_port "$NS_INET" 203.0.113.53 53
PROM=$TOPO_TMP/moat.prom
sed -e 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ]; ipv6 = { network = "'$NET6'::/64"; uplink_mode = "nat66"; };|' \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  verify: { interval = 0; repair = false; };\n  metrics: { textfile = \"$PROM\"; interval = 1; };\n  canary: { address = \"10.77.0.250\"; allow = [ \"allowed.test\" ]; interval = 20; };|" \
    examples/demo.conf >"$GW_CONF"
grep -q 'canary:' "$GW_CONF" || { not_ok "test config"; tap_done; exit 1; }
export MOAT_TEST_NO_TABLE_OWNER=1
gw_start; expect_eq "gatewayd starts with gateway.ipv6 and gateway.canary" 0 $?

audit() { grep -h "\"event\":\"$1\"" "$GW_AUDIT"; }
n_canary() { audit canary | wc -l; }
metric() { grep -E "^$1( |\{)" "$PROM"; }

v6up() { in_ns "$NS_GW" ping -6 -c1 -W1 $NET6::fa >/dev/null 2>&1; }
wait_for 10 v6up
expect_ok "the canary answers on $NET6::fa (its address from 10.77.0.250)" v6up
wait_for 120 test "$(n_canary)" -ge 1
expect_match "dual stack, healthy: contained" '"event":"canary","verdict":"contained"' "$(audit canary)"
kwdrift=$(gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['kernel_watch']['drift'])")
expect_eq "gatewayd's own plumbing of the canary (port, address, routes) is no drift" "[]" "$kwdrift"
expect_eq "... none audited" "" "$(audit policy-drift)"

expect_ok "nft insert rule inet moat input ip6 saddr $NET6::fa tcp dport 22 accept" \
	in_ns "$NS_GW" nft insert rule inet moat input ip6 saddr $NET6::fa tcp dport 22 accept
bad() { grep -q '^moat_canary_verdict 0' "$PROM"; }
wait_for 90 bad
expect_eq "the canary's next scan: NOT contained" "moat_canary_verdict 0" "$(metric moat_canary_verdict)"
expect_match "... the probe is the host's ssh over IPv6" '"verdict":"not-contained".*"probe":"BREACH tcp \[[0-9a-f:]+(%[0-9]+)?\]:22 ' \
	"$(audit canary | tail -1)"
tap_done
