#!/usr/bin/env bash
# gatewayd reload cuts guests' IPv6 flows the new policy refuses, as it
# does their IPv4 ones (gateway.ipv6): a shrunk treat_as_public cuts an
# open guest's flow into what it gave up and keeps one it still admits;
# an allowlist guest's flow to the address an AAAA answer opened (through
# gatewayd's own dnsd and set-add, allow6_web) goes on over a reload that
# keeps the name, and is cut, its set emptied, when the allow list loses
# the name.  The v6 "internet" is documentation space made public with
# treat_as_public; the gateway's IPv6 on the bridge is set by hand.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

NET6=fd77:0:0:1
AAAA6=2001:db8:cafe::10		# v6only.github.test (dns-upstream.py)
KEPT6=2001:db8:cafe::9
SHRUNK6=2001:db8:beef::9
topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
for g in "web $NET6::a" "dev $NET6::b"; do
	set -- $g
	ip -n "$TOPO-$1" addr add "$2"/64 dev eth0 nodad
	ip -n "$TOPO-$1" -6 route add default via $NET6::1
done
for a in $AAAA6 $KEPT6 $SHRUNK6; do ip -n "$NS_INET" addr add $a/128 dev lo nodad; done
for ns in "$NS_GW" "$TOPO-web" "$TOPO-dev"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done
topo_bg "$NS_INET" echo6 socat TCP6-LISTEN:7000,fork,reuseaddr PIPE
topo_wait_port "$NS_INET" "::" 7000 || not_ok "echo server starts"
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
chmod 711 "$TOPO_TMP"

conf() {	# conf TREAT_AS_PUBLIC WEB_ALLOW
	cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24", $1 ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ $2 ]; allow_ports = [ "tcp/7000" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
EOF
	gw_own_state	# the harness's state folder, this run's, at every rewrite
}
conf '"2001:db8::/32"' '"pypi.org", "*.github.test"'
gw_start; expect_eq "gatewayd starts with gateway.ipv6" 0 $?

flow() {	# flow GUEST NAME ADDR -- a long-lived echo flow over IPv6
	local g=$1 n=$2 a=$3
	ip netns exec $TOPO-$g python3 tests/harness/echo-flow.py $a 7000 "$TOPO_TMP/res-$n" "$TOPO_TMP/go-$n" &
	FLOWS+=($!)
	for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-$n" 2>/dev/null && break; sleep 0.1; done
	expect_match "flow $n from $g to [$a]:7000 established" "before:one" "$(cat "$TOPO_TMP/res-$n" 2>/dev/null)"
}
step() {	# step NAME -- let flow NAME send once more, wait for its answer
	touch "$TOPO_TMP/go-$1"
	for k in $(seq 100); do grep -q "after0:" "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.1; done
	sed -n "s/^after0://p" "$TOPO_TMP/res-$1"
}
elem6() { in_ns "$NS_GW" nft list set inet moat allow6_web 2>&1 | grep -F "$1"; }

FLOWS=()
expect_eq "web's AAAA answer, through gatewayd's dnsd on its IPv6 address" "$AAAA6" \
	"$(in_ns "$TOPO-web" dig @$NET6::1 +short +time=5 +tries=1 AAAA v6only.github.test)"
expect_match "...opened the address in allow6_web" "$AAAA6" "$(elem6 $AAAA6)"
flow web aaaa $AAAA6
flow dev shrunk $SHRUNK6
flow dev kept $KEPT6

conf '"2001:db8:cafe::/48"' '"pypi.org", "*.github.test"'
expect_ok "reload with a smaller treat_as_public (IPv6)" gw_ctl reload
expect_match "a shrunk treat_as_public cuts a guest's IPv6 flow into what it gave up" "^error" "$(step shrunk)"
expect_eq "an IPv6 flow the new policy still admits stays up" "step0" "$(step kept)"

conf '"2001:db8:cafe::/48"' '"pypi.org"'
expect_ok "reload: web's allow list loses *.github.test" gw_ctl reload
expect_match "the allowlist guest's IPv6 flow to the name taken away is cut" "^error" "$(step aaaa)"
expect_eq "...and allow6_web no longer holds the address" "" "$(elem6 $AAAA6)"
expect_match "reload audited with the flows it cut" '"event":"reload","result":"ok","flows_cut":[1-9]' \
	"$(cat "$GW_AUDIT")"
wait "${FLOWS[@]}"
tap_done
