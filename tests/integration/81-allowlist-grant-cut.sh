#!/usr/bin/env bash
# A grant that narrows cuts what it opened: a direct TCP flow opened under
# `ctl allow --ports tcp/7000 --for` is cut when the grant expires, and one
# opened under a grant taken back by `ctl unallow` is cut at once, over
# IPv4 and IPv6 alike (the reload's own judgement, policy_cut_narrowed);
# a tunnel through the proxy (spliced) to the granted name is cut at the
# expiry too.
# Another sandbox's flow to the same server goes on, and so does the
# narrowed sandbox's DNS.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

NET6=fd77:0:0:1
SSH6=2001:db8:cafe::13		# ssh6.test (dns-upstream.py)
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
ip -n "$NS_INET" addr add $SSH6/128 dev lo nodad
for ns in "$NS_GW" "$TOPO-web" "$TOPO-dev"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done
topo_bg "$NS_INET" echo4 socat TCP4-LISTEN:7000,bind=$INET_HTTP,fork,reuseaddr PIPE
topo_bg "$NS_INET" echo6 socat TCP6-LISTEN:7000,bind=[$SSH6],fork,reuseaddr,ipv6only=1 PIPE
topo_wait_port "$NS_INET" $INET_HTTP 7000 || not_ok "IPv4 echo server starts"
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
chmod 711 "$TOPO_TMP"

cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
EOF
gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53

flow() {	# flow GUEST NAME ADDR -- a long-lived echo flow to ADDR:7000
	local g=$1 n=$2 a=$3
	ip netns exec $TOPO-$g python3 tests/harness/echo-flow.py $a 7000 "$TOPO_TMP/res-$n" \
	    "$TOPO_TMP/go-$n-0" "$TOPO_TMP/go-$n-1" &
	FLOWS+=($!)
	for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-$n" 2>/dev/null && break; sleep 0.1; done
	expect_match "flow $n from $g to $a:7000 established" "before:one" "$(cat "$TOPO_TMP/res-$n" 2>/dev/null)"
}
tunnel() {	# tunnel GUEST NAME HOST:PORT -- a CONNECT tunnel through the proxy (spliced)
	local g=$1 n=$2
	ip netns exec $TOPO-$g python3 tests/harness/echo-flow.py $GW_ADDR 3128 "$TOPO_TMP/res-$n" \
	    --connect "$3" "$TOPO_TMP/go-$n-0" "$TOPO_TMP/go-$n-1" &
	FLOWS+=($!)
	for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-$n" 2>/dev/null && break; sleep 0.1; done
	expect_eq "tunnel $n from $g to $3 through the proxy" "before:200 one" "$(cat "$TOPO_TMP/res-$n" 2>/dev/null)"
}
step() {	# step NAME K -- let flow NAME send once more, wait for its answer
	touch "$TOPO_TMP/go-$1-$2"
	for k in $(seq 100); do grep -q "after$2:" "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.1; done
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}
dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 +short @$GW_ADDR "$2" "${3:-A}"; }
expired() { grep -q "\"event\":\"grant-expired\",\"sandbox\":\"web\",\"name\":\"$1" "$GW_AUDIT"; }
ms() { date +%s%3N; }
# ct SRC DST -- web's established conntrack entries to DST:7000
ct() { in_ns "$NS_GW" conntrack -L -f "$3" -p tcp -s "$1" -d "$2" --dport 7000 2>/dev/null | grep -c ESTABLISHED; }
ct_gone() { [ "$(ct "$@")" = 0 ]; }
# cut_within SRC DST FAMILY -- ms until the flow's entry is gone (3 s at most)
cut_within() {
	local t0=$(ms)
	for k in $(seq 60); do ct_gone "$@" && break; sleep 0.05; done
	echo $(($(ms) - t0))
}
FLOWS=()

# --- IPv4: expiry, then unallow -------------------------------------------------
expect_match "allow web open.test --ports tcp/7000 --for 10s" '^web may reach open\.test on tcp/7000 only for 10s' \
	"$(gw_ctl allow web open.test --ports tcp/7000 --for 10s 2>&1)"
expect_eq "web resolves open.test" "$INET_HTTP" "$(dig_in web open.test)"
flow web exp4 $INET_HTTP
tunnel web tun4 open.test:7000
flow dev other4 $INET_HTTP
expect_eq "the flow echoes while the grant lasts" step0 "$(step exp4 0)"
expect_eq "...and the tunnel" step0 "$(step tun4 0)"
expect_eq "its conntrack entry is there" 1 "$(ct 10.77.0.10 $INET_HTTP ipv4)"
wait_for 20 expired open.test
expect_ok "the grant expired (audited)" expired open.test
t=$(cut_within 10.77.0.10 $INET_HTTP ipv4)
expect_ok "the flow's conntrack entry is cut within a second of the expiry ($t ms)" test "$t" -lt 1000
expect_match "...and the flow gets no more echo" "^error" "$(step exp4 1)"
expect_match "the tunnel through the proxy is cut too" "^(closed|error)" "$(step tun4 1)"
expect_match "...audited as the proxy's cut" '"event":"cut","sandbox":"web".*"host":"open.test"' "$(cat "$GW_AUDIT")"
expect_match "...and gatewayd says how many flows it cut" 'grants narrowed web: [1-9][0-9]* flow\(s\) cut' "$(cat "$GW_LOG")"
expect_eq "dev's flow to the same server goes on" step0 "$(step other4 0)"
expect_eq "web still resolves pypi.org (its DNS is not cut for good)" "$INET_HTTP" "$(dig_in web pypi.org)"

expect_match "allow web open.test --ports tcp/7000 --for 1m" '^web may reach open\.test on tcp/7000 only for 1m' \
	"$(gw_ctl allow web open.test --ports tcp/7000 --for 1m 2>&1)"
expect_eq "web resolves open.test again" "$INET_HTTP" "$(dig_in web open.test)"
flow web un4 $INET_HTTP
expect_eq "the new flow echoes" step0 "$(step un4 0)"
expect_match "unallow web open.test" 'web no longer reaches open\.test' "$(gw_ctl unallow web open.test 2>&1)"
expect_ok "the unallow cut its conntrack entry before it answered" ct_gone 10.77.0.10 $INET_HTTP ipv4
expect_match "...and the flow gets no more echo" "^error" "$(step un4 1)"
expect_eq "dev's flow goes on" step1 "$(step other4 1)"

# --- IPv6: expiry, then unallow -------------------------------------------------
expect_match "allow web ssh6.test --ports tcp/7000 --for 10s" '^web may reach ssh6\.test on tcp/7000 only for 10s' \
	"$(gw_ctl allow web ssh6.test --ports tcp/7000 --for 10s 2>&1)"
expect_eq "web resolves ssh6.test's AAAA through gatewayd's dnsd" "$SSH6" \
	"$(in_ns "$TOPO-web" dig @$NET6::1 +short +time=5 +tries=1 AAAA ssh6.test)"
flow web exp6 $SSH6
tunnel web tun6 ssh6.test:7000
expect_eq "the IPv6 flow echoes while the grant lasts" step0 "$(step exp6 0)"
expect_eq "...and the tunnel to ssh6.test" step0 "$(step tun6 0)"
expect_eq "its conntrack entry is there" 1 "$(ct $NET6::a $SSH6 ipv6)"
wait_for 20 expired ssh6.test
expect_ok "the grant expired (audited)" expired ssh6.test
t=$(cut_within $NET6::a $SSH6 ipv6)
expect_ok "the IPv6 flow's entry is cut within a second of the expiry ($t ms)" test "$t" -lt 1000
expect_match "...and the flow gets no more echo" "^error" "$(step exp6 1)"
expect_match "the tunnel to ssh6.test is cut too" "^(closed|error)" "$(step tun6 1)"

expect_match "allow web ssh6.test --ports tcp/7000 --for 1m" '^web may reach ssh6\.test' \
	"$(gw_ctl allow web ssh6.test --ports tcp/7000 --for 1m 2>&1)"
expect_eq "web resolves ssh6.test again" "$SSH6" \
	"$(in_ns "$TOPO-web" dig @$NET6::1 +short +time=5 +tries=1 AAAA ssh6.test)"
flow web un6 $SSH6
expect_eq "the new IPv6 flow echoes" step0 "$(step un6 0)"
expect_match "unallow web ssh6.test" 'web no longer reaches ssh6\.test' "$(gw_ctl unallow web ssh6.test 2>&1)"
expect_ok "the unallow cut the IPv6 entry before it answered" ct_gone $NET6::a $SSH6 ipv6
expect_match "...and the flow gets no more echo" "^error" "$(step un6 1)"

expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
wait "${FLOWS[@]}" 2>/dev/null
tap_done
