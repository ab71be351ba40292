#!/usr/bin/env bash
# gatewayd with its real children: dnsd and the proxy run as their own
# users without capabilities, dnsd's answers open web's allowlist through
# the parent, and each child comes back after kill -9 while the policy
# stays closed.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
cp examples/demo.conf "$GW_CONF"

gw_start; expect_eq "gatewayd starts with dnsd and the proxy" 0 $?
children_up() { [ -n "$(gw_child_pid dnsd)" ] && [ -n "$(gw_child_pid proxy)" ]; }
wait_for 30 children_up
# dropped PID USER -- PID finished dropping privileges
dropped() {
	grep -Eq 'CapEff:\s+0000000000000000' /proc/$1/status && grep -Eq 'Seccomp:\s+2' /proc/$1/status &&
		[ "$(ps -o user= -p $1)" = "$2" ]
}
for c in dnsd proxy; do
	pid=$(gw_child_pid $c)
	if [ -z "$pid" ]; then not_ok "$c is running" "$(gw_ctl status; tail -5 "$GW_LOG")"; continue; fi
	want=moat-dns; [ $c = proxy ] && want=moat-proxy
	wait_for 30 dropped "$pid" $want	# let it finish dropping privileges
	st=$(cat /proc/$pid/status)
	expect_match "$c holds no capabilities" 'CapEff:\s+0000000000000000' "$st"
	expect_match "$c has no_new_privs" 'NoNewPrivs:\s+1' "$st"
	expect_match "$c runs under seccomp" 'Seccomp:\s+2' "$st"
	expect_eq "$c runs as $want" $want "$(ps -o user= -p $pid)"
done

dig() { in_ns "$1" dig +time=2 +tries=1 @$GW_ADDR "${@:2}"; }
expect_match "web resolves an allowed name through dnsd" "^203\.0\.113\.10$" \
	"$(dig $TOPO-web +short a.github.test A)"
expect_match "the answer opened web's set through the parent" '203\.0\.113\.10 timeout' \
	"$(in_ns "$NS_GW" nft list set inet moat allow_web)"
expect_eq "web reaches the address it resolved" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"
expect_match "web is refused a name not on its list" "status: REFUSED" \
	"$(dig $TOPO-web denied.test A)"
expect_match "locked is refused every name" "status: REFUSED" "$(dig $TOPO-locked pypi.org A)"

for c in dnsd proxy; do
	pid=$(gw_child_pid $c)
	[ -n "$pid" ] || { not_ok "$c restart" "not running"; continue; }
	kill -9 "$pid"
	expect_eq "LAN refused while $c is down" unreachable "$(tcp_probe $TOPO-dev $LAN_HOST 22)"
	restarted() { new=$(gw_child_pid $c); [ -n "$new" ] && [ "$new" != "$pid" ]; }
	wait_for 30 restarted
	if [ -n "$new" ] && [ "$new" != "$pid" ]; then ok "$c restarted after kill -9"
	else not_ok "$c restarted after kill -9" "$(gw_ctl status)"; fi
done
answers() { dig $TOPO-web +short "$1" A | grep -q '^203\.0\.113\.10$'; }
wait_for 30 answers pypi.org
expect_match "dnsd answers again after its restart" "^203\.0\.113\.10$" \
	"$(dig $TOPO-web +short pypi.org A)"
expect_match "restarts are audited" '"event":"child-restart","child":"proxy"' "$(cat "$GW_AUDIT")"
expect_match "dnsd's refusals reach the audit log" '"source":"dnsd"' "$(cat "$GW_AUDIT")"
# Reload: children start again with the new config, quietly.
expect_match "web is refused open.test before the reload" "status: REFUSED" "$(dig $TOPO-web open.test A)"
old_dnsd=$(gw_child_pid dnsd); old_proxy=$(gw_child_pid proxy)
sed -i 's|allow = \[ "pypi.org", "\*.github.test" \]|allow = [ "pypi.org", "*.github.test", "open.test" ]|' "$GW_CONF"
expect_ok "reload accepted" gw_ctl reload
both_new() {
	d=$(gw_child_pid dnsd); p=$(gw_child_pid proxy)
	[ -n "$d" ] && [ "$d" != "$old_dnsd" ] && [ -n "$p" ] && [ "$p" != "$old_proxy" ]
}
wait_for 30 both_new
expect_ok "dnsd runs again with a new pid" test -n "$d" -a "$d" != "$old_dnsd"
expect_ok "a new proxy took the listening socket" test -n "$p" -a "$p" != "$old_proxy"
wait_for 30 answers open.test
expect_match "dnsd follows the new allow list" "^203\.0\.113\.10$" "$(dig $TOPO-web +short open.test A)"
expect_eq "reload restarts are not reported as crashes" 1 \
	"$(grep -c '"event":"child-restart","child":"dnsd"' "$GW_AUDIT")"
expect_eq "the proxy still listens on the gateway" "LISTEN" \
	"$(in_ns "$NS_GW" ss -Hltn "src $GW_ADDR:3128" | awk '{print $1}' | head -1)"
tap_done
