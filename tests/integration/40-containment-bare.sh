#!/usr/bin/env bash
# containment-check against the bare topology: no moat policy at all, so a
# guest reaches the LAN, the gateway and the internet's resolver through
# the gateway's forwarding (IPv6 as well: the guest takes a global address
# and the gateway forwards it).  The scan must say so, naming each breach, and
# exit 1; the positive controls must pass; a dead uplink must fail them.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

[ -x "$CC_BIN" ] || { not_ok "containment-check is built" "run make"; tap_done; exit 1; }
cc_topo || { not_ok "topology comes up"; exit 1; }
# Without a policy nothing masquerades; give the internet a way back.
ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1
# IPv6 too, as a dual-stack host that forwards it would: the guest gives
# itself a global address and a route through the gateway, and the public
# resolvers' stand-ins answer on their IPv6 addresses.
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add 2001:db8:77::1/64 dev moat0 nodad
ip -n "$NS_INET" -6 route add 2001:db8:77::/64 via $GW_UP6
ip -n "$TOPO-web" addr add 2001:db8:77::10/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add default via 2001:db8:77::1

cc_scan web
expect_eq "uncontained guest: exit 1" 1 "$CC_RC"
expect_eq "JSON report parses and says not contained" False "$(cc_q 'r["contained"]')"
expect_eq "breach named: LAN host 192.168.77.2:22 reachable" True \
	"$(cc_q "any(x['class']=='private' and x['target']=='192.168.77.2:22' and x['verdict']=='reachable' and x['outcome']=='BREACH' for x in rs)")"
expect_eq "breach named: gateway TCP ports answer (host protection)" True \
	"$(cc_breach gateway '^10\.77\.0\.1:22$')"
expect_eq "gateway DNS port is not a breach" False "$(cc_breach gateway '^10\.77\.0\.1:53$')"
expect_eq "breach named: DNS over UDP to another resolver" True \
	"$(cc_q "any(x['class']=='dns-bypass' and x['target']=='9.9.9.9:53' and x['proto']=='udp' and x['outcome']=='BREACH' for x in rs)")"
expect_eq "breach named: DNS over UDP to a public resolver's IPv6 address" True \
	"$(cc_q "any(x['class']=='dns-bypass' and x['target']=='[2620:fe::fe]:53' and x['proto']=='udp' and x['outcome']=='BREACH' for x in rs)")"
expect_eq "breach named: IPv6 link-local reaches the gateway" True \
	"$(cc_breach ipv6 'fe80::|ff02::1')"
expect_eq "breach named: a forged source gets its answer (no anti-spoofing)" True \
	"$(cc_q "any(x['class']=='spoofing' and x['target']=='10.77.0.1:53' and 'to forged 10.77.0.254' in x['evidence'] and x['outcome']=='BREACH' for x in rs)")"
expect_eq "other guest stays away at layer 2 (bridge isolation)" False \
	"$(cc_breach guests '^10\.77\.0\.11:')"
expect_eq "control: the gateway's resolver answers" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='10.77.0.1:53' and x['outcome']=='pass' for x in rs)")"
expect_eq "control: the internet is reachable" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and x['outcome']=='pass' for x in rs)")"
expect_eq "no failed control" 0 "$(cc_q 'r["failed_controls"]')"
expect_eq "DNS policy: refused name is not a breach" False \
	"$(cc_q "any(x['what']=='denied.test' and x['outcome']!='ok' for x in rs)")"
expect_eq "DNS policy: allowed name resolves" True \
	"$(cc_q "any(x['what']=='allowed.test' and x['outcome']=='pass' for x in rs)")"
probes=$(cc_q 'r["probes"]'); ms=$(cc_q 'r["elapsed_ms"]')
echo "# bare scan: $probes probes in $ms ms"
expect_eq "the scan is bounded (< 70000 probes)" True \
	"$(cc_q 'r["probes"] < 70000')"

# A name the gateway's resolver answers with a LAN address: rebinding.
cc_scan web --rebind-name rebind.test
expect_eq "breach named: rebind.test resolves to a private address" True \
	"$(cc_q "any(x['class']=='dns-policy' and x['what']=='rebind.test' and 'private answer 192.168.77.2' in x['evidence'] and x['outcome']=='BREACH' for x in rs)")"

# --expect none: reaching the internet is itself a breach.
cc_scan web --expect none
expect_eq "--expect none: reachable internet is a breach" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and x['outcome']=='BREACH' for x in rs)")"

# The human report names the breach too.
out=$(ip netns exec "$TOPO-web" "$CC_BIN" "${CC_ARGS[@]}" 2>&1)
expect_match "human report names the LAN breach" \
	'BREACH +tcp +192\.168\.77\.2:22 +reachable' "$out"
expect_match "human report ends with the verdict" 'verdict: NOT CONTAINED$' "$out"

# Usage errors exit 2 and send nothing.
ip netns exec "$TOPO-web" "$CC_BIN" --expect sometimes >/dev/null 2>&1
expect_eq "bad --expect: exit 2" 2 $?
ip netns exec "$TOPO-web" "$CC_BIN" --target 10.0.0.1:99999 >/dev/null 2>&1
expect_eq "bad --target port: exit 2" 2 $?
expect_match "--help fits a screen and lists the exit codes" \
	'exit: 0 contained, 1 breach' "$(ip netns exec "$TOPO-web" "$CC_BIN" --help)"
[ "$(ip netns exec "$TOPO-web" "$CC_BIN" --help | wc -l)" -le 40 ] &&
	ok "--help is at most 40 lines" || not_ok "--help is at most 40 lines"

# A fresh, empty namespace that is not under /run/netns.  Where PID 1's
# namespace cannot be read (confined containers) the scanner cannot tell
# it from the host's and must refuse; where it can, it runs, finds no
# gateway and must not call an empty network contained.
out=$(unshare -n "$CC_BIN" 2>&1); rc=$?
if stat -L /proc/1/ns/net >/dev/null 2>&1; then
	expect_eq "empty namespace: no gateway fails the controls (exit 1)" 1 "$rc"
else
	expect_eq "unknown namespace: refuses with exit 2" 2 "$rc"
	expect_match "refusal says why" 'refusing to run' "$out"
fi

# Dead uplink: the internet control must fail, so a dead network cannot
# pass as contained.
ip -n "$NS_GW" link set up0 down
cc_scan web
expect_eq "dead uplink: exit 1" 1 "$CC_RC"
expect_eq "dead uplink: the internet control fails" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and x['outcome']=='FAILED' for x in rs)")"
ip -n "$NS_GW" link set up0 up
tap_done
