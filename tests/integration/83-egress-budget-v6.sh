#!/usr/bin/env bash
# Egress budgets with IPv6 (gateway.ipv6): a sandbox with a budget has
# IPv6, and what its guest sends over IPv6 counts towards the same budget
# as its IPv4 (acct6_out); once spent, its new IPv6 flows are refused at
# once as its IPv4 ones are (budget_spent6), so IPv6 is no way around the
# budget; a sandbox without a budget is unaffected on both families.
# A flow opened before the budget ran out goes on, even after the
# neighbour entries of the gateway and the guest expire: neighbour
# discovery is accepted before the budget rule.
# Windows are MOAT_TEST_EGRESS_WINDOW seconds long here (a test-only knob:
# a real window is a UTC day).  The v6 "internet" is documentation space
# made public with treat_as_public; the gateway's IPv6 on the bridge is
# set by hand.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

W=100
export MOAT_TEST_EGRESS_WINDOW=$W
BUDGET=409600		# "400K"
NET6=fd77:0:0:1
SINK6=2001:db8:cafe::9
topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
for g in "web $NET6::a" "dev $NET6::b"; do
	set -- $g
	ip -n "$TOPO-$1" addr add "$2"/64 dev eth0 nodad
	ip -n "$TOPO-$1" -6 route add default via $NET6::1
done
ip -n "$NS_INET" addr add $SINK6/128 dev lo nodad
for ns in "$NS_GW" "$TOPO-web" "$TOPO-dev"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done
topo_bg "$NS_INET" sink socat -u TCP-LISTEN:9000,bind=$INET_HTTP,fork,reuseaddr OPEN:/dev/null
topo_bg "$NS_INET" sink6 socat -u TCP6-LISTEN:9000,bind="[$SINK6]",fork,reuseaddr OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 9000
topo_bg "$NS_INET" echo6 socat TCP6-LISTEN:7000,bind="[$SINK6]",fork,reuseaddr PIPE
topo_wait_port "$NS_INET" $SINK6 9000
topo_wait_port "$NS_INET" $SINK6 7000
# web: open, no budget; dev: open, 400K a window; both with IPv6.
sed -e 's/egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \];/egress = "open";/' \
    -e 's/egress = "open"; owner = "bob";/egress = "open"; owner = "bob"; egress_bytes_per_day = "400K";/' \
    -e 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ]; ipv6 = { network = "'$NET6'::/64"; uplink_mode = "nat66"; };|' \
    -e '/name = "locked"/,+1d' examples/demo.conf |
	sed -e 's/owner = "bob"; egress_bytes_per_day = "400K"; },/owner = "bob"; egress_bytes_per_day = "400K"; }/' >"$GW_CONF"
grep -q 'egress_bytes_per_day = "400K"' "$GW_CONF" && grep -q 'uplink_mode = "nat66"' "$GW_CONF" ||
	{ not_ok "test config"; exit 1; }

# Start early in a window, so that what follows fits in it.
left() { echo $((W - $(date +%s) % W)); }
[ "$(left)" -ge 70 ] || sleep "$(left)"
gw_start; expect_eq "gatewayd starts" 0 $?

field() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s.get('$2', '-'))"; }
upload6() { head -c "$2" /dev/zero | in_ns "$TOPO-$1" timeout 20 socat -u - TCP6:"[$SINK6]":9000; }
probe6() {	# probe6 GUEST -- a new IPv6 connection to the sink: "connected",
	# "prohibited" (ICMPv6 administratively prohibited: EACCES), "timeout"
	local out
	out=$(ip netns exec "$TOPO-$1" timeout 3 bash -c "exec 3<>/dev/tcp/$SINK6/9000 && echo connected" 2>&1)
	case "$out" in
	*connected*) echo connected ;;
	*"Permission denied"*) echo prohibited ;;
	*) echo "timeout" ;;
	esac
}

expect_eq "dev's budget is shown" $BUDGET "$(field dev egress_budget)"
# An ssh-like flow opened under the budget, idle while it is spent.
ip netns exec $TOPO-dev python3 tests/harness/echo-flow.py $SINK6 7000 "$TOPO_TMP/res-idle" "$TOPO_TMP/go-idle" &
for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-idle" 2>/dev/null && break; sleep 0.1; done
expect_match "an idle IPv6 echo flow is open before the budget is spent" "before:one" \
	"$(cat "$TOPO_TMP/res-idle" 2>/dev/null)"
expect_eq "dev, with a budget, has IPv6: it connects over IPv6" connected "$(probe6 dev)"
expect_eq "web connects over IPv6" connected "$(probe6 web)"

# --- IPv6 counts ----------------------------------------------------------------
spent_ge() { [ "$(field dev egress_spent)" -ge "$1" ]; }
upload6 dev 300000
expect_ok "300,000 bytes sent over IPv6 count towards the budget" wait_for 5 spent_ge 300000
expect_eq "under the budget, dev is not refused" False "$(field dev egress_refused)"
expect_eq "...and connects over IPv6" connected "$(probe6 dev)"

# --- past it over IPv6: both families refused ------------------------------------
upload6 dev 200000
refused() { [ "$(field dev egress_refused)" = True ]; }
expect_ok "within a couple of seconds, IPv6 alone has spent dev's budget" wait_for 5 refused
t0=$EPOCHREALTIME
r=$(probe6 dev)
expect_eq "a new IPv6 connection is refused (admin-prohibited)" prohibited "$r"
expect_ok "at once (${t0} -> ${EPOCHREALTIME})" python3 -c "import sys; sys.exit(not ($EPOCHREALTIME - $t0 < 1.5))"
expect_eq "a new IPv4 connection too" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 9000)"
expect_match "budget_spent6 holds dev's IPv6 address" "$NET6::b" \
	"$(in_ns "$NS_GW" nft list set inet moat budget_spent6 2>&1)"
shows() { gw_ctl refused dev | grep -qE "$1"; }
expect_ok "ctl refused dev names the reason for the IPv6 flow" wait_for 3 shows "$SINK6.*egress budget spent"
expect_eq "web is unaffected over IPv6" connected "$(probe6 web)"
expect_eq "...and over IPv4" connected "$(tcp_probe $TOPO-web $INET_HTTP 9000)"
# --- the open flow goes on, neighbour entries expired on both sides -------
# Flushed, the gateway must solicit dev's address again before it can
# answer, and dev the gateway's: the neighbour advertisements and
# solicitations of a spent guest are no new flow.
ip -n "$NS_GW" neigh flush dev moat0
ip -n "$TOPO-dev" neigh flush dev eth0
touch "$TOPO_TMP/go-idle"
for k in $(seq 100); do grep -q "after0:" "$TOPO_TMP/res-idle" 2>/dev/null && break; sleep 0.1; done
expect_eq "the flow opened before the budget was spent still echoes after both neighbour entries expired" \
	step0 "$(sed -n 's/^after0://p' "$TOPO_TMP/res-idle")"
nud() { ip -n "$NS_GW" -6 neigh show dev moat0 to "$NET6::b" | awk '{print $NF}'; }
expect_match "the gateway's entry for dev is reachable again" "REACHABLE|STALE|DELAY" "$(nud)"
expect_fail "no neighbour discovery was refused under the budget" \
	grep -qE '"reason":"budget".*"proto":"icmpv6"' "$GW_AUDIT"
[ "$r" = prohibited ] || { in_ns "$NS_GW" nft list ruleset | grep -E "acct6|budget" ; tail -20 "$GW_LOG"; } >&2
tap_done
