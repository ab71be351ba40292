#!/usr/bin/env bash
# What a gatewayd reload does to DNS: dnsd takes the new configuration in
# place (same process), keeps its cache and what it knows web's set holds
# when the reload leaves web alone, adds again what a sandbox whose allow
# list changed is answered, a list that lost a name empties the set, and
# no restart of dnsd can cut short a set element that an earlier answer
# was promised for longer.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
UPLOG=$TOPO_TMP/upstream.queries
: >"$UPLOG"
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --log "$UPLOG"
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
cp examples/demo.conf "$GW_CONF"
# Interception off: the tcp 80 probes here test the forward chain (the
# sandboxes' sets), which interception would hand to the proxy instead.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_web() { in_ns "$TOPO-web" dig +time=2 +tries=3 @$GW_ADDR +short "$1" A; }
upstream_asked() { grep -c "^$1 1 " "$UPLOG"; }
set_web() { in_ns "$NS_GW" nft list set inet moat allow_web; }
# reconfigured N -- gatewayd has seen dnsd take more than N configurations.
taken() { grep -c 'dnsd took the new configuration in place' "$GW_LOG"; }
reconfigured() { [ "$(taken)" -gt "$1" ]; }
secs() { local s=$1 t=0
	[[ $s =~ ([0-9]+)h ]] && t=$((t + ${BASH_REMATCH[1]} * 3600))
	[[ $s =~ ([0-9]+)m([0-9]|$) ]] && t=$((t + ${BASH_REMATCH[1]} * 60))
	[[ $s =~ ([0-9]+)s ]] && t=$((t + ${BASH_REMATCH[1]}))
	echo $t; }
# expires ADDR -- seconds web's element for ADDR has left.
expires() { secs "$(set_web | grep -o "$1 timeout [0-9hms]* expires [0-9hms]*" | awk '{print $5}')"; }

# nft monitor prints every commit in order; commits of a table of our own
# before and after an action bracket what it did to the sets.
MON=$TOPO_TMP/monitor
in_ns "$NS_GW" bash -c "exec timeout 300 nft monitor >'$MON' 2>&1" &
TOPO_PIDS+=($!)
k=0
listening() { k=$((k + 1)); in_ns "$NS_GW" nft add table ip "ready$k"; grep -q 'add table ip ready' "$MON"; }
wait_for 30 listening
mark() {	# mark N -- commit a marker and wait until the monitor shows it
	in_ns "$NS_GW" nft add table ip "mark$1"
	wait_for 30 grep -q "add table ip mark$1" "$MON"
}
between() { sed -n "/add table ip mark$1\$/,/add table ip mark$2\$/p" "$MON"; }

expect_match "web resolves an allowed name" '^203\.0\.113\.10$' "$(dig_web a.github.test)"
expect_eq "the upstream was asked once" 1 "$(upstream_asked a.github.test)"
expect_match "web's set holds the answer" '203\.0\.113\.10 timeout' "$(set_web)"
PID0=$(gw_child_pid dnsd)

# --- (a) a reload that adds an unrelated sandbox ------------------------
cat >"$TOPO_TMP/sandboxes.d/extra.conf" <<'EOF'
mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-extra";
egress = "allowlist"; allow = [ "pypi.org" ];
EOF
n=$(taken)
expect_ok "reload with a sandbox added" gw_ctl reload
wait_for 30 reconfigured "$n"
expect_ok "dnsd took it in place (gatewayd's log)" reconfigured "$n"
expect_eq "dnsd was not restarted (same pid)" "$PID0" "$(gw_child_pid dnsd)"
mark 1
expect_match "web is answered again" '^203\.0\.113\.10$' "$(dig_web a.github.test)"
mark 2
expect_eq "...from dnsd's cache: the upstream was not asked again" 1 \
	"$(upstream_asked a.github.test)"
expect_eq "...and from what dnsd knows web's set holds: no addition" "" \
	"$(between 1 2 | grep 'allow_web')"

# --- (b) a reload that changes web's allow list ---------------------------
sed -i 's|allow = \[ "pypi.org", "\*.github.test" \]|allow = [ "pypi.org", "*.github.test", "open.test" ]|' "$GW_CONF"
n=$(taken)
expect_ok "reload with web's allow list changed" gw_ctl reload
wait_for 30 reconfigured "$n"
expect_eq "dnsd still runs in the same process" "$PID0" "$(gw_child_pid dnsd)"
mark 3
expect_match "web is answered" '^203\.0\.113\.10$' "$(dig_web a.github.test)"
mark 4
expect_eq "the cache was kept (same upstreams and private ranges)" 1 \
	"$(upstream_asked a.github.test)"
expect_match "the answer added the address to web's set again (nft monitor)" \
	'add element inet moat allow_web \{ 203\.0\.113\.10 ' "$(between 3 4)"
expect_match "web's set holds it" '203\.0\.113\.10 timeout' "$(set_web)"

# --- (d) a reload that takes a name away from web -------------------------
# Its flows are cut, and its set is emptied: no address of a name taken
# away may stay open until its timeout.  The next answer of a name still
# allowed puts its address back.
expect_eq "before: web reaches the answered address" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"
sed -i 's|allow = \[ "pypi.org", "\*.github.test", "open.test" \]|allow = [ "pypi.org", "*.github.test" ]|' "$GW_CONF"
n=$(taken)
expect_ok "reload with open.test taken from web" gw_ctl reload
wait_for 30 reconfigured "$n"
expect_eq "web's set was emptied" "" "$(set_web | grep -o '203\.0\.113\.10 timeout')"
expect_match "gatewayd says so" 'allowlist web: narrowed; its set emptied' "$(cat "$GW_LOG")"
expect_eq "web no longer reaches the address" unreachable "$(tcp_probe $TOPO-web $INET_HTTP 80)"
expect_match "web resolves a name still allowed" '^203\.0\.113\.10$' "$(dig_web a.github.test)"
expect_match "...and its address is back in the set" '203\.0\.113\.10 timeout' "$(set_web)"
expect_eq "web reaches it again" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"

# --- (c) a promise outlives a dnsd restart ---------------------------------
# long.github.test and again.github.test are the same address with TTLs of
# a day (dnsd caps it at an hour) and of 2 seconds.
expect_match "web resolves the long-TTL name" '^203\.0\.113\.14$' \
	"$(dig_web long.github.test)"
e=$(expires 203.0.113.14)
if [ "${e:-0}" -ge 3000 ]; then ok "its element was added for about an hour ($e s)"
else not_ok "its element was added for about an hour" "$(set_web)"; fi
kill -KILL "$PID0"
restarted() { local p; p=$(gw_child_pid dnsd); [ -n "$p" ] && [ "$p" != "$PID0" ]; }
wait_for 30 restarted
expect_ok "gatewayd restarted dnsd" restarted
answers_again() { [ -n "$(dig_web again.github.test)" ]; }
wait_for 30 answers_again
expect_match "the restarted dnsd answers the short-TTL name" '^203\.0\.113\.14$' \
	"$(dig_web again.github.test)"
e=$(expires 203.0.113.14)
if [ "${e:-0}" -ge 3000 ]; then
	ok "the short answer did not cut the element short ($e s left)"
else not_ok "the short answer did not cut the element short" "$(set_web)"; fi

# And a reload that deletes web's set voids the promise: back in allowlist
# mode, the element is added for the short answer's own time.
n=$(taken)
sed -i 's|egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \]; owner = "alice"|egress = "open"; owner = "alice"|' "$GW_CONF"
expect_ok "reload with web made open" gw_ctl reload
sed -i 's|egress = "open"; owner = "alice"|egress = "allowlist"; allow = [ "pypi.org", "*.github.test" ]; owner = "alice"|' "$GW_CONF"
expect_ok "reload with web back in allowlist mode" gw_ctl reload
wait_for 30 reconfigured $((n + 1))
expect_match "the new set's element comes with the short answer" '^203\.0\.113\.14$' \
	"$(dig_web again.github.test)"
e=$(expires 203.0.113.14)
if [ -n "$e" ] && [ "$e" -ge 2 ] && [ "$e" -le 120 ]; then
	ok "a deleted set's promises are void ($e s, not an hour)"
else not_ok "a deleted set's promises are void" "$(set_web)"; fi

# --- (e) nor does a restart of gatewayd itself ------------------------------
# The policy outlives gatewayd; the next one takes over what the sets hold
# as promised.
expect_match "web resolves the long-TTL name again" '^203\.0\.113\.14$' \
	"$(dig_web long.github.test)"
e=$(expires 203.0.113.14)
if [ "${e:-0}" -ge 3000 ]; then ok "its element is back for about an hour ($e s)"
else not_ok "its element is back for about an hour" "$(set_web)"; fi
old_dnsd=$(gw_child_pid dnsd)
kill -9 "$GW_PID"
gone() { ! [ -e "/proc/$GW_PID" ] && ! [ -e "/proc/$old_dnsd" ]; }
wait_for 30 gone
gw_start; expect_eq "a new gatewayd starts over the policy left in the kernel" 0 $?
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
wait_for 30 answers_again
expect_match "the new dnsd answers the short-TTL name" '^203\.0\.113\.14$' \
	"$(dig_web again.github.test)"
e=$(expires 203.0.113.14)
if [ "${e:-0}" -ge 3000 ]; then
	ok "after a restart of gatewayd, the short answer did not cut it short ($e s left)"
else not_ok "after a restart of gatewayd, the short answer did not cut it short" "$(set_web)"; fi
expect_eq "dnsd never crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp' "$GW_LOG")"
tap_done
