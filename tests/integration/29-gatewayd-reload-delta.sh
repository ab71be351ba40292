#!/usr/bin/env bash
# gatewayd reloads by sending the kernel only what changed: adding,
# changing or removing one sandbox leaves every other sandbox's allowlist
# set untouched (same set, same elements), an unchanged reload commits
# nothing at all, and a change the delta cannot express still lands, as a
# whole replacement.
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
# Interception off: the tcp 80 probes here test the forward chain (the
# sandboxes' sets), which interception would hand to the proxy instead.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
# web's set gets an element the way it does in use: a DNS answer.
expect_match "web resolves an allowed name" "^203\.0\.113\.10$" \
	"$(in_ns "$TOPO-web" dig +time=2 +tries=3 @$GW_ADDR +short a.github.test A)"
set_web() { in_ns "$NS_GW" nft -a list set inet moat allow_web; }
handle() { set_web | grep -o 'allow_web { # handle [0-9]*' | grep -o '[0-9]*$'; }
# The element's timeout as dnsd set it: a replacement of the set would
# carry the element over with its remaining time as the new timeout.
elem() { set_web | grep -o '203\.0\.113\.10 timeout [0-9a-z]*'; }
H=$(handle); E=$(elem)
expect_match "web's set holds the answer" '^203\.0\.113\.10 timeout [0-9]' "$E"
expect_match "web's set has a handle" '^[0-9]+$' "$H"

# still_there WHAT -- web's set is the same object and its element was
# never touched (same timeout, not a carried-over remainder).
still_there() {
	expect_eq "$1: web's set is the same set (handle)" "$H" "$(handle)"
	expect_eq "$1: web's element is untouched" "$E" "$(elem)"
}

# --- an unchanged reload commits nothing ------------------------------------
# nft monitor prints every commit of the namespace in order; commits of a
# table of our own before and after the reload bracket what it did.
MON=$TOPO_TMP/monitor
in_ns "$NS_GW" bash -c "exec timeout 300 nft monitor >'$MON' 2>&1" &
TOPO_PIDS+=($!)
mark() {	# mark N -- commit a marker and wait until the monitor shows it
	in_ns "$NS_GW" nft add table ip "mark$1"
	wait_for 30 grep -q "add table ip mark$1" "$MON"
}
# The monitor is listening once one of these shows up in its output.
k=0
listening() { k=$((k + 1)); in_ns "$NS_GW" nft add table ip "ready$k"; grep -q 'add table ip ready' "$MON"; }
wait_for 30 listening
# The nflog reader names refusals from its copy of the sandboxes' names,
# addresses and MACs: a reload that leaves those alone leaves it running.
nflog0=$(gw_child_pid nflog)
mark 0
expect_ok "reload of an unchanged config" gw_ctl reload
mark 1
between=$(sed -n '/add table ip mark0/,/add table ip mark1/p' "$MON" | grep -v 'mark[01]')
expect_eq "an unchanged reload sends nothing to the kernel (nft monitor)" "" \
	"$(printf '%s\n' "$between" | grep -v '^# new generation .* (nft)$' | grep -v '^$')"
expect_match "gatewayd logs the reload as unchanged" 'policy: unchanged, 0 message' \
	"$(cat "$GW_LOG")"
still_there "unchanged reload"

expect_eq "an unchanged reload leaves the nflog reader running" "$nflog0" "$(gw_child_pid nflog)"

# --- one sandbox added ---------------------------------------------------
cat >"$TOPO_TMP/sandboxes.d/extra.conf" <<'EOF'
mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-extra";
egress = "allowlist"; allow = [ "pypi.org" ];
EOF
expect_ok "reload with a sandbox added" gw_ctl reload
mark 2
added=$(sed -n '/add table ip mark1/,/add table ip mark2/p' "$MON")
expect_match "adding a sandbox commits its objects" '(add|create) set inet moat allow_extra' "$added"
expect_eq "adding a sandbox deletes no table and touches no other set" "" \
	"$(printf '%s\n' "$added" | grep -E 'delete table|allow_web|allow_dev')"
expect_match "the new sandbox has its set" 'set allow_extra' \
	"$(in_ns "$NS_GW" nft list set inet moat allow_extra 2>&1)"
expect_match "the new sandbox is in the verdict map" '10\.77\.0\.13 : goto sb_extra' \
	"$(in_ns "$NS_GW" nft list map inet moat sandboxes)"
expect_match "the reload was a delta, not a replacement" 'policy: updated, [0-9]+ message' \
	"$(cat "$GW_LOG")"
still_there "sandbox added"
nflog_new() { nflog1=$(gw_child_pid nflog); [ -n "$nflog1" ] && [ "$nflog1" != "$nflog0" ]; }
expect_ok "a sandbox added starts the nflog reader again (it must know it)" wait_for 10 nflog_new
nflog1=$(gw_child_pid nflog)

# --- one sandbox changed -------------------------------------------------
sed -i 's|egress = "open"; owner = "bob"; }|egress = "allowlist"; allow = [ "pypi.org" ]; owner = "bob"; }|' "$GW_CONF"
expect_ok "reload with dev changed to allowlist" gw_ctl reload
expect_match "dev now goes through its own chain" '10\.77\.0\.11 : goto sb_dev' \
	"$(in_ns "$NS_GW" nft list map inet moat sandboxes)"
expect_eq "dev's web access now needs an allowlist answer" unreachable \
	"$(tcp_probe $TOPO-dev $INET_HTTP 80)"
still_there "sandbox changed"
expect_eq "a sandbox's egress changed leaves the nflog reader running" "$nflog1" "$(gw_child_pid nflog)"

# --- one sandbox removed -------------------------------------------------
rm "$TOPO_TMP/sandboxes.d/extra.conf"
expect_ok "reload with a sandbox removed" gw_ctl reload
expect_match "the removed sandbox's set is gone" 'No such file or directory' \
	"$(in_ns "$NS_GW" nft list set inet moat allow_extra 2>&1)"
expect_eq "the removed sandbox is out of the verdict map" "" \
	"$(in_ns "$NS_GW" nft list map inet moat sandboxes | grep 10.77.0.13)"
still_there "sandbox removed"

# --- a change the delta does not express: the whole policy, still ---------
sed -i 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "192.0.2.0/24" ];|' "$GW_CONF"
expect_ok "reload with a private range made public" gw_ctl reload
expect_match "that reload replaced the policy, and says why" \
	'policy: replaced, [0-9]+ message.*a constant set changed' "$(cat "$GW_LOG")"
expect_eq "192.0.2.0/24 is no longer private" "" \
	"$(in_ns "$NS_GW" nft list set inet moat private4 | grep '192\.0\.2\.0')"
expect_match "web's element was carried into the new set" '203\.0\.113\.10 timeout' "$(set_web)"

# --- a reload that empties web's set: the next answer fills it again ------
# web goes open (its set is deleted), then back to allowlist (a new, empty
# set).  What dnsd remembers having put in the old set must not count:
# the next answer puts the element back before the guest has it, for at
# least the TTL the guest is told.
sed -i 's|egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \]; owner = "alice"|egress = "open"; owner = "alice"|' "$GW_CONF"
expect_ok "reload with web made open" gw_ctl reload
expect_match "web's set is gone" 'No such file or directory' \
	"$(in_ns "$NS_GW" nft list set inet moat allow_web 2>&1)"
sed -i 's|egress = "open"; owner = "alice"|egress = "allowlist"; allow = [ "pypi.org", "*.github.test" ]; owner = "alice"|' "$GW_CONF"
expect_ok "reload with web back in allowlist mode" gw_ctl reload
expect_eq "web's new set is empty" "" "$(elem)"
wait_for 30 dnsd_up
# The answer, then at once the set (dnsd answers only once the element is
# in).
out=$(in_ns "$TOPO-web" dig +time=2 +tries=5 @$GW_ADDR +noall +answer a.github.test A 2>&1
	in_ns "$NS_GW" nft list set inet moat allow_web 2>&1)
ttl=$(awk '$1 == "a.github.test." && $4 == "A" {print $2}' <<<"$out")
tmo=$(grep -o '203\.0\.113\.10 timeout [0-9hms]*' <<<"$out" | awk '{print $3}')
secs() { local s=$1 t=0
	[[ $s =~ ([0-9]+)h ]] && t=$((t + ${BASH_REMATCH[1]} * 3600))
	[[ $s =~ ([0-9]+)m([0-9]|$) ]] && t=$((t + ${BASH_REMATCH[1]} * 60))
	[[ $s =~ ([0-9]+)s ]] && t=$((t + ${BASH_REMATCH[1]}))
	echo $t; }
if [ -n "$ttl" ] && [ -n "$tmo" ] && [ "$(secs "$tmo")" -ge "$ttl" ]; then
	ok "after the set was emptied, the next answer is in it first ($tmo >= TTL $ttl s)"
else not_ok "after the set was emptied, the next answer is in it first" "TTL [$ttl], element [$tmo]: $out"; fi

tap_done
