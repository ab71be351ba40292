#!/usr/bin/env bash
# `ctl allow` and `unallow` for good write the sandbox's file through the
# journaled writer and keep it only if the whole configuration loads AND
# the running gateway applies it.  Here moat.conf carries an admin's edit
# not yet reloaded that loads (gatewayd -n passes) but cannot be applied:
# a metrics listener on an address the box does not have.  An allow for
# good, and an unallow for good, are then refused with the reason; web's
# file is byte for byte as it was (same inode, mode and owner), no
# journal or hidden copy is left, the guest's DNS answers as before and
# nothing is audited as granted; web's owner, a member, is told the
# reason lies in a file that is not theirs, without its details.  Once the
# edit is fixed, the same allow is written in place: the admin's comments
# stay, the name resolves.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mfg$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" || { not_ok "member $UA"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
PROM=$TOPO_TMP/textfile/moat.prom
SBD=$TOPO_TMP/sandboxes.d
mkdir -p "$TOPO_TMP/textfile" "$SBD"
cat >"$GW_CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  member_allow = [ "open.test" ];
  metrics: { textfile = "$PROM"; interval = 1; };
};
EOF
WEB=$SBD/web.conf
cat >"$WEB" <<'EOF'
# web: written by hand; every comment here stays
mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
egress = "allowlist";
owner = "OWNER";
allow = [
  "github.test",   # the team's mirror
  /* asked for in ticket 12 */ "denied.test"
];
EOF
sed -i "s/OWNER/$UA/" "$WEB"
chmod 0640 "$WEB"
chmod 711 "$TOPO_TMP"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
status_in() { in_ns "$TOPO-web" dig +time=2 +tries=1 @$GW_ADDR "$1" A | grep -o 'status: [A-Z]*'; }
expect_eq "before: web resolves github.test (its file)" "status: NOERROR" "$(status_in github.test)"
expect_eq "before: web is refused open.test" "status: REFUSED" "$(status_in open.test)"

# The admin's pending edit: it loads, but the gateway cannot apply it.
sed -i "s|^  metrics: .*|  metrics: { textfile = \"$PROM\"; interval = 1; listen = \"192.168.77.50:9477\"; };|" "$GW_CONF"
line=$(grep -n '^  metrics:' "$GW_CONF" | cut -d: -f1)
expect_ok "the edited configuration loads (gatewayd -n)" in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"
cp -p "$WEB" "$TOPO_TMP/web.before"
ident() { stat -c '%i %a %U:%G %s' "$WEB"; }
before=$(ident)
hidden() { ls -A "$SBD" "$TOPO_TMP" "$TOPO_TMP/state" 2>/dev/null | grep -E '^\.(moat|web)' ; }
allowed() { grep -c '"event":"allow"' "$GW_AUDIT"; }
audit0=$(allowed)

out=$(gw_ctl allow web open.test 2>&1); rc=$?
expect_eq "allow for good that does not apply fails (exit 1)" 1 "$rc"
expect_match "... saying the file was not changed because it would not apply" \
	"$WEB not changed: the gateway could not apply the configuration with it" "$out"
expect_match "... and why, file:line" \
	"moat.conf:$line: gateway.metrics: listen: cannot listen on 192.168.77.50:9477" "$out"
expect_ok "web's file is byte for byte as before" cmp "$TOPO_TMP/web.before" "$WEB"
expect_eq "... the same inode, mode, owner and size" "$before" "$(ident)"
expect_eq "no journal or hidden copy is left" "" "$(hidden)"
expect_eq "web is still refused open.test" "status: REFUSED" "$(status_in open.test)"
expect_eq "nothing was audited as an allow" "$audit0" "$(allowed)"
expect_eq "ctl grants does not list it" "" "$(gw_ctl grants web 2>&1 | grep -F open.test)"

out=$(as "$UA" allow web open.test 2>&1); rc=$?
expect_eq "the same allow by web's owner, a member, fails too" 1 "$rc"
expect_match "... with the reason" \
	"$WEB not changed: the gateway could not apply the configuration with it" "$out"
expect_match "... which lies in a file that is not theirs" \
	"not valid in 1 place\(s\) that are not yours" "$out"
expect_eq "... whose details they are not shown" "" "$(grep -F 'moat.conf' <<<"$out")"
expect_ok "web's file is byte for byte as before" cmp "$TOPO_TMP/web.before" "$WEB"

out=$(gw_ctl unallow web github.test 2>&1); rc=$?
expect_eq "unallow for good that does not apply fails (exit 1)" 1 "$rc"
expect_match "... saying so" \
	"$WEB not changed: the gateway could not apply the configuration with it" "$out"
expect_ok "web's file is byte for byte as before" cmp "$TOPO_TMP/web.before" "$WEB"
expect_eq "... the same inode, mode, owner and size" "$before" "$(ident)"
expect_eq "no journal or hidden copy is left" "" "$(hidden)"
expect_eq "web still resolves github.test" "status: NOERROR" "$(status_in github.test)"

# A file that would not load is refused as before, and says so.
printf 'mac = ;\n' >"$SBD/broken.conf"
out=$(gw_ctl allow web open.test 2>&1); rc=$?
expect_eq "allow for good with a broken drop-in beside it fails" 1 "$rc"
expect_match "... the configuration would not load with it" \
	"$WEB not changed: the configuration would not load with it" "$out"
expect_ok "web's file is byte for byte as before" cmp "$TOPO_TMP/web.before" "$WEB"
rm -f "$SBD/broken.conf"

# The admin fixes the edit: the same allow is written and applied.
sed -i "s|^  metrics: .*|  metrics: { textfile = \"$PROM\"; interval = 1; listen = \"192.168.77.1:9477\"; };|" "$GW_CONF"
expect_match "allow for good now succeeds" 'web may reach open\.test \(written to its file\)' \
	"$(gw_ctl allow web open.test 2>&1)"
expect_eq "only the list changed: open.test after the last entry, comments kept" \
	'7c7
<   /* asked for in ticket 12 */ "denied.test"
---
>   /* asked for in ticket 12 */ "denied.test", "open.test"' \
	"$(diff "$TOPO_TMP/web.before" "$WEB")"
expect_eq "... the file keeps its mode and owner" "640 root:root" "$(stat -c '%a %U:%G' "$WEB")"
expect_eq "web resolves open.test" "status: NOERROR" "$(status_in open.test)"
expect_eq "the allow is audited once" "$((audit0 + 1))" "$(allowed)"
expect_match "unallow for good takes it out" 'web no longer reaches open\.test' \
	"$(gw_ctl unallow web open.test 2>&1)"
expect_ok "web's file is back byte for byte" cmp "$TOPO_TMP/web.before" "$WEB"
expect_eq "web is refused open.test again" "status: REFUSED" "$(status_in open.test)"
expect_eq "no journal or hidden copy is left" "" "$(hidden)"
expect_ok "gatewayd still runs" kill -0 "$GW_PID"

topo_down
tap_done
