#!/usr/bin/env bash
# gatewayd reload cuts every established flow the new policy refuses: a
# removed exception, a shrunk treat_as_public, a narrowed sandbox, with no
# cap on how many sandboxes one reload narrows.  Flows the new policy
# still admits stay up.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
ip -n "$NS_INET" addr add 203.0.113.200/24 dev eth0
topo_bg "$NS_LAN" echo-lan socat TCP-LISTEN:7001,bind=$LAN_HOST,fork,reuseaddr PIPE
topo_bg "$NS_INET" echo-inet socat TCP-LISTEN:7000,fork,reuseaddr PIPE
topo_wait_port "$NS_LAN" $LAN_HOST 7001 && topo_wait_port "$NS_INET" 0.0.0.0 7000 ||
	not_ok "echo servers start"
chmod 711 "$TOPO_TMP"

# conf EXCEPTIONS TREAT DUMMY_EGRESS DEV_EGRESS -- 300 sandboxes without a
# guest come before dev, so that narrowing them all narrows more than the
# 256 sources the old code stopped at.
conf() {
	{
	cat <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/23";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ $2 ];
  exceptions = ( $1 );
};
sandboxes = (
EOF
	for i in $(seq 1 300); do
		printf '  { name = "d%d"; mac = "52:54:00:01:%02x:%02x"; address = "10.77.%d.%d"; tap = "md%d"; egress = "%s"; },\n' \
		    $i $((i / 256)) $((i % 256)) $((i <= 200 ? 1 : 0)) $((i <= 200 ? i : i - 100)) $i "$3"
	done
	cat <<EOF
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "$4"; }
);
EOF
	} >"$GW_CONF"
	gw_own_state	# the harness's state folder, this run's, at every rewrite
}
EXC='{ to = "192.168.77.2/32"; proto = "tcp"; ports = [ 7001 ]; }'
conf "$EXC" '"203.0.113.0/24"' open open
gw_start; expect_eq "gatewayd starts with 301 sandboxes" 0 $?

flow() {	# flow NAME ADDR PORT STEPS -- a long-lived echo flow from dev
	local n=$1 a=$2 p=$3 k gos=(); shift 3
	for k in $(seq 0 $(($1 - 1))); do gos+=("$TOPO_TMP/go-$n-$k"); done
	ip netns exec $TOPO-dev python3 tests/harness/echo-flow.py $a $p "$TOPO_TMP/res-$n" "${gos[@]}" &
	FLOWS+=($!)
	for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-$n" 2>/dev/null && break; sleep 0.1; done
	expect_match "flow $n to $a:$p established" "before:one" "$(cat "$TOPO_TMP/res-$n")"
}
step() {	# step NAME K -- let flow NAME send once more, wait for its answer
	touch "$TOPO_TMP/go-$1-$2"
	for k in $(seq 100); do grep -q "after$2:" "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.1; done
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}

FLOWS=()
flow exc $LAN_HOST 7001 1
flow shrunk 203.0.113.200 7000 1
flow kept 203.0.113.10 7000 1

conf "" '"203.0.113.0/24"' open open
expect_ok "reload without the exception" gw_ctl reload
expect_match "a removed exception cuts its established flow" "^error" "$(step exc 0)"
expect_eq "dev no longer reaches the former exception" unreachable "$(tcp_probe $TOPO-dev $LAN_HOST 7001)"

conf "" '"203.0.113.0/25"' open open
expect_ok "reload with a smaller treat_as_public" gw_ctl reload
expect_match "a shrunk treat_as_public cuts a flow into what it gave up" "^error" "$(step shrunk 0)"
expect_eq "a flow the new policy still admits stays up" "step0" "$(step kept 0)"

flow many 203.0.113.10 7000 1
conf "" '"203.0.113.0/25"' none none
expect_ok "reload narrowing 301 sandboxes" gw_ctl reload
expect_match "the 301st narrowed sandbox's flow is cut too (no cap)" "^error" "$(step many 0)"
expect_match "reload audited with the flows it cut" '"event":"reload","result":"ok","flows_cut":[1-9]' \
	"$(cat "$GW_AUDIT")"
wait "${FLOWS[@]}"
tap_done
