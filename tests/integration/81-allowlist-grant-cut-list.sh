#!/usr/bin/env bash
# The flows a grant's end cuts come from gatewayd's own list of the
# namespace's conntrack entries, kept from the kernel's events, not from a
# walk of the kernel's whole table; and when the kernel stops sending
# those events (net.netfilter.nf_conntrack_events = 0, set at run time in
# the gateway's namespace), a flow opened meanwhile is still cut, by the
# walk, and gatewayd says why it walks.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_bg "$NS_INET" echo4 socat TCP4-LISTEN:7000,bind=$INET_HTTP,fork,reuseaddr PIPE
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
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org" ]; }
);
EOF
gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53

FLOWS=()
flow() {	# flow NAME -- a long-lived echo flow from web to the server's 7000
	ip netns exec $TOPO-web python3 tests/harness/echo-flow.py $INET_HTTP 7000 \
	    "$TOPO_TMP/res-$1" "$TOPO_TMP/go-$1-0" "$TOPO_TMP/go-$1-1" &
	FLOWS+=($!)
	for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.1; done
	expect_match "flow $1 from web to $INET_HTTP:7000 established" "before:one" \
	    "$(cat "$TOPO_TMP/res-$1" 2>/dev/null)"
}
step() {	# step NAME K -- let flow NAME send once more, wait for its answer
	touch "$TOPO_TMP/go-$1-$2"
	for k in $(seq 100); do grep -q "after$2:" "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.1; done
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}
ct() { in_ns "$NS_GW" conntrack -L -f ipv4 -p tcp -s 10.77.0.10 -d $INET_HTTP --dport 7000 2>/dev/null | grep -c ESTABLISHED; }
ct_gone() { [ "$(ct)" = 0 ]; }
walks() { grep -c 'conntrack: the whole table walked' "$GW_LOG"; }
grant() {
	expect_match "allow web open.test --ports tcp/7000 --for 1m" '^web may reach open\.test on tcp/7000' \
		"$(gw_ctl allow web open.test --ports tcp/7000 --for 1m 2>&1)"
	expect_eq "web resolves open.test" "$INET_HTTP" \
		"$(in_ns "$TOPO-web" dig +time=2 +tries=1 +short @$GW_ADDR open.test A)"
}

# --- events on: the list ----------------------------------------------------
sleep 1		# the loop's first turns: listening, the list filled once
grant
flow a
expect_eq "its conntrack entry is there" 1 "$(ct)"
expect_match "unallow web open.test" 'web no longer reaches open\.test' "$(gw_ctl unallow web open.test 2>&1)"
expect_ok "the unallow cut its conntrack entry before it answered" ct_gone
expect_match "...and the flow gets no more echo" "^error" "$(step a 0)"
expect_match "gatewayd cut it from its list of flows" 'grants narrowed web: 1 flow\(s\) cut' "$(cat "$GW_LOG")"
expect_eq "...without walking the kernel's whole table" 0 "$(walks)"

# --- events off: the walk ---------------------------------------------------
in_ns "$NS_GW" sysctl -qw net.netfilter.nf_conntrack_events=0
expect_eq "conntrack events off in the gateway's namespace" 0 \
	"$(in_ns "$NS_GW" cat /proc/sys/net/netfilter/nf_conntrack_events)"
grant
flow b
expect_eq "the new flow's conntrack entry is there" 1 "$(ct)"
expect_match "unallow web open.test" 'web no longer reaches open\.test' "$(gw_ctl unallow web open.test 2>&1)"
expect_ok "the unallow cut the flow opened while no event came" ct_gone
expect_match "...and the flow gets no more echo" "^error" "$(step b 0)"
expect_match "gatewayd says the events are off" 'conntrack events are off' "$(cat "$GW_LOG")"
expect_ok "...and walked the whole table for that cut" test "$(walks)" -ge 1

expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
kill "${FLOWS[@]}" 2>/dev/null	# one that was not cut would wait for ever
wait "${FLOWS[@]}" 2>/dev/null
tap_done
