#!/usr/bin/env bash
# Egress budgets (egress_bytes_per_day): a guest sends under its budget
# (through the proxy and directly: both count) and its connections work;
# past it, every new connection and DNS query is refused at once, with
# "egress budget spent" in ctl refused, one audit event, the state in ctl
# sandboxes; another sandbox is unaffected; a reload (a member may cause
# one) and a restart of gatewayd keep what was spent; a new window opens
# it again.  Windows are MOAT_TEST_EGRESS_WINDOW seconds long here (a
# test-only knob: a real window is a UTC day).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

W=100
export MOAT_TEST_EGRESS_WINDOW=$W
BUDGET=409600		# "400K"
topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" sink socat -u TCP-LISTEN:9000,bind=$INET_HTTP,fork,reuseaddr OPEN:/dev/null
topo_wait_port "$NS_INET" $INET_HTTP 9000
# web: open, no budget; dev: open, 400K a window; locked left out.
sed -e 's/egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \];/egress = "open";/' \
    -e 's/egress = "open"; owner = "bob";/egress = "open"; owner = "bob"; egress_bytes_per_day = "400K";/' \
    -e '/name = "locked"/,+1d' examples/demo.conf |
	sed -e 's/owner = "bob"; egress_bytes_per_day = "400K"; },/owner = "bob"; egress_bytes_per_day = "400K"; }/' >"$GW_CONF"
grep -q 'egress_bytes_per_day = "400K"' "$GW_CONF" || { not_ok "test config"; exit 1; }

# Start early in a window, so that what follows fits in it.
left() { echo $((W - $(date +%s) % W)); }
[ "$(left)" -ge 70 ] || sleep "$(left)"
gw_start; expect_eq "gatewayd starts" 0 $?

field() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s.get('$2', '-'))"; }
upload() { head -c "$2" /dev/zero | in_ns "$TOPO-$1" timeout 20 socat -u - TCP:$INET_HTTP:9000; }

expect_eq "dev's budget is shown" $BUDGET "$(field dev egress_budget)"
expect_eq "web has none" - "$(field web egress_budget)"

# --- under the budget: through the proxy and directly -----------------------
head -c 150000 /dev/zero >"$TOPO_TMP/body"
# Through the proxy (explicitly, to the sink, which reads it all).
in_ns "$TOPO-dev" curl -s --max-time 3 -o /dev/null -x http://10.77.0.1:3128 -H 'Expect:' \
	--data-binary @"$TOPO_TMP/body" "http://$INET_HTTP:9000/"
spent_ge() { [ "$(field dev egress_spent)" -ge "$1" ]; }
expect_ok "150,000 bytes posted through the proxy count (spent $(field dev egress_spent))" wait_for 5 spent_ge 150000
upload dev 100000
expect_ok "100,000 bytes sent directly count too" wait_for 5 spent_ge 250000
expect_eq "under the budget, dev connects" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_eq "and is not refused" False "$(field dev egress_refused)"

# --- past it ------------------------------------------------------------------
upload dev 300000
expect_eq "the connection open when the budget ran out went on to its end" 0 $?
refused() { [ "$(field dev egress_refused)" = True ]; }
expect_ok "within a couple of seconds dev's budget is spent" wait_for 5 refused
expect_eq "nothing left" 0 "$(field dev egress_left)"
t0=$EPOCHREALTIME
expect_eq "a new connection is refused" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_ok "at once (${t0} -> ${EPOCHREALTIME})" python3 -c "import sys; sys.exit(not ($EPOCHREALTIME - $t0 < 1.5))"
expect_eq "to the proxy's port too" unreachable "$(tcp_probe $TOPO-dev 10.77.0.1 3128)"
expect_eq "a direct connection too" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 9000)"
in_ns "$TOPO-dev" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"x", ("'$INET_HTTP'", 9001))'  # a new UDP flow
out=$(in_ns "$TOPO-dev" dig +tries=1 +time=2 @10.77.0.1 example.test 2>&1)
expect_fail "DNS queries are refused too (each leaves as a query)" grep -q 'status:' <<<"$out"
shows() { gw_ctl refused dev | grep -qE "$1"; }
expect_ok "ctl refused dev names the reason" wait_for 3 shows "$INET_HTTP:9000 .*kernel +egress budget spent"
expect_ok "a UDP flow too" wait_for 3 shows "$INET_HTTP:9001/udp .*kernel +egress budget spent"
# Port 80 is intercepted: the refusal names where it was redirected.
expect_ok "and for the intercepted connection" shows "10\.77\.0\.1:3128 .*egress budget spent"
expect_match "ctl sandboxes says so" '^dev .*budget 409600 B a day, spent [0-9]+ B, left 0 B \(spent: new flows refused\)' \
	"$(gw_ctl sandboxes)"
expect_eq "web is unaffected" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"
sleep 2
expect_eq "audited once for the window" 1 "$(grep -c '"event":"egress-budget-spent".*"sandbox":"dev"' "$GW_AUDIT")"

# --- a reload, and a restart, keep it ----------------------------------------
spent=$(field dev egress_spent)
expect_ok "reload" gw_ctl reload
expect_ok "reload again" gw_ctl reload
expect_eq "after two reloads dev is still refused" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_ok "and what it spent is kept ($spent -> $(field dev egress_spent))" test "$(field dev egress_spent)" -ge "$spent"
# The budget itself may change on a reload: what was spent is kept and
# compared with the new one.
sed -i 's/egress_bytes_per_day = "400K"/egress_bytes_per_day = "10M"/' "$GW_CONF"
expect_ok "reload with a larger budget" gw_ctl reload
expect_eq "a larger budget opens it" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
sed -i 's/egress_bytes_per_day = "10M"/egress_bytes_per_day = "400K"/' "$GW_CONF"
expect_ok "reload with the budget back" gw_ctl reload
expect_eq "the budget back closes it" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
expect_eq "the totals are written for root alone" 600 "$(stat -c %a "$TOPO_TMP/state/egress-budget")"
gw_start; expect_eq "gatewayd starts again" 0 $?
expect_eq "after a restart dev is still refused" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_ok "what it spent was carried over ($(field dev egress_spent))" test "$(field dev egress_spent)" -ge "$spent"
expect_eq "not audited again" 1 "$(grep -c '"event":"egress-budget-spent".*"sandbox":"dev"' "$GW_AUDIT")"

# --- a new window --------------------------------------------------------------
# The kernel's element expires at the window's end; gatewayd starts the
# new window's totals within its next second.
rolled() { [ "$(field dev egress_refused)" = False ]; }
expect_ok "the next window starts (in $(left) s)" wait_for $(($(left) + 10)) rolled
expect_eq "and opens it again" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_ok "with its total started again ($(field dev egress_spent))" test "$(field dev egress_spent)" -lt 100000
tap_done
