#!/usr/bin/env bash
# run: alone (it counts refusals that arrive as silence: other tests beside it
# would load the CPU and turn slow answers into silence)
# containment-check with moat's full policy (nft-rules apply in the
# gateway namespace, moat-proxy behind interception, the shipped default):
# 0 breaches and every control passes.  Then one
# policy element at a time is broken (mutation tests) and the scan must
# name that specific breach and exit 1.  A dead uplink fails the control.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

for b in "$CC_BIN" build/nft-rules build/moat-proxy; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
cc_topo || { not_ok "topology comes up"; exit 1; }
CONF=$TOPO_TMP/cc-policy.conf
mkdir -p "$TOPO_TMP/state"
# proxy.intercept is left out: the shipped default (on) applies, so the
# guests' tcp 80 and 443 to the internet go to moat-proxy.
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "open"; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF
# Something for a breach to reach: ssh-like services on the gateway host
# and on the other guest.
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-host"
topo_banner "$TOPO-g2" 10.77.0.11 22 "SSH-2.0-guest-g2"
# Refusals are ICMP errors, which the kernel rate-limits per destination
# by default; nft-rules apply lifts that limit in the gateway namespace
# (moat.conf refusals.fast), so the guest's 65535-port sweep of the
# gateway gets admin-prohibited, not silence.

policy() {	# a fresh copy of the full policy
	in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1
}
nftm() {	# nftm RULE... -- one mutation, with nft itself
	in_ns "$NS_GW" nft "$@"
}

policy || { not_ok "nft-rules applies the policy" "$(in_ns "$NS_GW" build/nft-rules -c "$CONF" apply 2>&1)"; tap_done; exit 1; }
ok "nft-rules applies the policy"
topo_bg "$NS_GW" moat-proxy build/moat-proxy -d -c "$CONF" --user nobody
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "moat-proxy starts"

# The worst case for IPv6: the gateway forwards it (a dual-stack host) and
# the guest gives itself a global address and a route through it (to
# 2000::/3); the public resolvers' stand-ins answer on
# their IPv6 addresses.
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add 2001:db8:77::1/64 dev moat0 nodad
ip -n "$NS_INET" -6 route add 2001:db8:77::/64 via $GW_UP6
ip -n "$TOPO-web" addr add 2001:db8:77::10/64 dev eth0 nodad
ip -n "$TOPO-web" -6 route add 2000::/3 via 2001:db8:77::1

cc_scan web
expect_eq "full policy: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# not ok: $(cc_q "[(x['class'], x['target'], x['evidence'], x['what']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')]")"
expect_eq "full policy: 0 breaches" 0 "$(cc_q 'r["breaches"]')"
expect_eq "full policy: 0 failed controls" 0 "$(cc_q 'r["failed_controls"]')"
expect_eq "full policy: both controls pass" 2 \
	"$(cc_q "sum(1 for x in rs if x['class']=='controls' and x['outcome']=='pass')")"
expect_eq "full policy: the internet control passed on the far end's answer, through the proxy" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and 'HTTP 200, not written by' in x['evidence'] for x in rs)")"
expect_eq "full policy: LAN host blocked by admin-prohibited from the gateway" True \
	"$(cc_q "r['ok_counts']['private'].get('blocked', 0) >= 6")"
expect_eq "full policy: gateway sweep refused with admin-prohibited" True \
	"$(cc_q "r['ok_counts']['gateway'].get('blocked', 0) > 60000")"
# (Probes that pass are counted, not listed: the DoH ones on 443 are listed
# as information for an open sandbox, which shows the route was there.)
expect_eq "full policy: the public resolvers' IPv6 addresses were probed over the guest's route, none reached" True \
	"$(cc_q "any(x['target'].startswith('[2620:fe::fe]') for x in rs) and all('unreach' not in x['evidence'] for x in rs if x['target'].startswith('[2620:fe::fe]')) and not any(x['class']=='dns-bypass' and x['target'].startswith('[') and x['outcome']=='BREACH' for x in rs)")"
expect_eq "full policy: all 6 forged-source probes (one IPv6) ran and got nothing back" 6 \
	"$(cc_q "r['ok_counts']['spoofing'].get('filtered', 0)")"
probes=$(cc_q 'r["probes"]'); ms=$(cc_q 'r["elapsed_ms"]')
echo "# full-policy scan: $probes probes in $ms ms"
# A refusal the kernel's ICMP rate limit turned into silence would show
# as a "filtered" gateway port (and a scan slowed to its timeouts): none
# may.  The wall time itself is measured by bench/containment-scan.sh.
expect_eq "full policy: no gateway port's refusal arrived as silence" 0 \
	"$(cc_q "r['ok_counts']['gateway'].get('filtered', 0)")"

# mutation NAME CLASS TARGET-REGEX SETUP... -- fresh policy, break one
# element with SETUP, scan: exit 1 and a breach of CLASS at TARGET.
mutation() {
	local name=$1 class=$2 target=$3; shift 3
	policy && "$@" || { not_ok "mutation '$name' applies"; return; }
	cc_scan web
	expect_eq "mutation '$name': exit 1" 1 "$CC_RC"
	expect_eq "mutation '$name': breach named ($class $target)" True \
		"$(cc_breach "$class" "$target")"
}
lan_open()  { nftm insert rule inet moat guest_fwd ip daddr 192.168.77.0/24 accept; }
host_open() { nftm insert rule inet moat input iifname moat0 accept; }
dns_open()  { nftm insert rule inet moat guest_fwd meta l4proto '{ tcp, udp }' th dport 53 accept; }
# Guest isolation and the IPv6 drop each have independent layers (bridge
# port isolation, the bridge table's forward drop and, where br_netfilter
# hands bridged IPv4 to the inet table, guest_fwd's refusal towards moat0;
# the bridge table's ip6 drop and the inet table's): a mutation removes
# them all, as any one alone still contains.
iso_off()   { ip -n "$NS_GW" link set mt-web type bridge_slave isolated off &&
	      ip -n "$NS_GW" link set mt-g2 type bridge_slave isolated off &&
	      nftm flush chain bridge moat forward &&
	      nftm insert rule inet moat guest_fwd oifname moat0 accept; }
iso_on()    { ip -n "$NS_GW" link set mt-web type bridge_slave isolated on;
	      ip -n "$NS_GW" link set mt-g2 type bridge_slave isolated on; }
# Anti-spoofing: the bridge table's per-port check of MAC, IPv4 address
# and ARP sender is gone (its IPv6 and DHCP-server drops stay).  The inet
# table alone does not stop a forged address of the sandbox network from
# reaching the gateway's resolver, nor a forged MAC with the guest's own
# address from reaching anything.
spoof_off() { nftm flush chain bridge moat from_guest &&
	      nftm add rule bridge moat from_guest ether type ip6 goto drop_ipv6 &&
	      nftm add rule bridge moat from_guest udp sport 67 goto drop_dhcp; }
v6_open()   { nftm insert rule bridge moat from_guest ether type ip6 accept &&
	      nftm insert rule inet moat raw_pre meta nfproto ipv6 accept &&
	      nftm insert rule inet moat input meta nfproto ipv6 accept &&
	      nftm insert rule inet moat forward meta nfproto ipv6 accept; }

mutation "LAN deny removed" private '^192\.168\.77\.2:22$' lan_open
mutation "host protection removed" gateway '^10\.77\.0\.1:22$' host_open
mutation "DNS lock off" dns-bypass '^9\.9\.9\.9:53$' dns_open
mutation "guest isolation off" guests '^10\.77\.0\.11:22$' iso_off
iso_on
mutation "IPv6 let through" ipv6 'fe80::|ff02::1' v6_open
mutation "anti-spoofing off" spoofing '^10\.77\.0\.1:53$' spoof_off
expect_eq "mutation 'anti-spoofing off': forged IPv4, forged MAC and forged ARP each named" True \
	"$(cc_q "{x['what'] for x in rs if x['class']=='spoofing' and x['outcome']=='BREACH'} == {'forged source IPv4 (own MAC)', 'forged source MAC (own IPv4)', 'forged ARP sender address (own MAC)'}")"
expect_eq "mutation 'anti-spoofing off': the evidence names the forged address" True \
	"$(cc_q "any(x['class']=='spoofing' and x['outcome']=='BREACH' and 'to forged 10.77.0.254' in x['evidence'] for x in rs)")"

# The resolver lets a private answer through (rebinding): the gateway's
# resolver here is the test stub, which answers rebind.test with the LAN
# host, as a resolver without rebinding protection would.
policy
cc_scan web --rebind-name rebind.test
expect_eq "mutation 'private answer let through': exit 1" 1 "$CC_RC"
expect_eq "mutation 'private answer let through': breach named" True \
	"$(cc_q "any(x['outcome']=='BREACH' and x['class']=='dns-policy' and x['what']=='rebind.test' and '192.168.77.2' in x['evidence'] for x in rs)")"

# Dead uplink under the full policy: contained-looking, but the control
# fails, so the scan does not pass, although the proxy still accepts the
# control's connection (and refuses it for want of an upstream).
ip -n "$NS_GW" link set up0 down
cc_scan web
expect_eq "dead uplink: exit 1" 1 "$CC_RC"
expect_eq "dead uplink: 0 breaches but the internet control fails" "0 1" \
	"$(cc_q 'r["breaches"]') $(cc_q "sum(1 for x in rs if x['class']=='controls' and x['outcome']=='FAILED')")"
ip -n "$NS_GW" link set up0 up
tap_done
