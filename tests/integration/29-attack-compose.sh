#!/usr/bin/env bash
# Features that compose, attacked as a guest and as a member: a quarantine
# (quarantine_on_breach, a guest's NOT CONTAINED) while grants for the
# sandbox are live and an exception names it.
#  - A live grant or its exception opens nothing while the sandbox is
#    quarantined, directly or through dnsd and the proxy, nor does
#    a grant made after the quarantine (the admin's or the owner's), nor a
#    grant's expiry, nor a reload.
#  - The owner (a member) cannot clear their own sandbox's quarantine.
#  - A member's grant of a name with a quote and an ANSI escape is
#    refused, and neither the answer nor `ctl grants` carries the raw
#    escape.
#  - An admin's clear-quarantine brings back the sandbox's own egress,
#    allow list and exception, nothing more: its grants ended with the
#    quarantine.  A quarantined open sandbox is refused by the proxy too.
#  - dnsd and the proxy take every configuration on the way.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mqa$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" || { not_ok "member $UA"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
# web: allowlist, owned by the member, quarantined on a breach.
sed -e "s/owner = \"alice\"/owner = \"$UA\"; quarantine_on_breach = true/" \
    -e "s/owner = \"bob\"/owner = \"$UA\"; quarantine_on_breach = true/" \
    -e 's|^  exceptions = ( );|  exceptions = ( { to = "192.168.77.2/32"; proto = "tcp"; ports = [ 22 ]; sandboxes = [ "web" ]; } );\n  member_allow = [ "short.test", "*.member.test" ];|' \
    -e 's/intercept = true;/intercept = false;/' \
	examples/demo.conf >"$GW_CONF"
grep -q quarantine_on_breach "$GW_CONF" || { not_ok "test config"; tap_done; exit 1; }
gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53

dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 +short @$GW_ADDR "$2" A; }
sbjson() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }
# rec NAME VERDICT -- the console reader's record (1 contained, 2 NOT
# CONTAINED), as 29-gatewayd-guest-verdict writes it.
rec() {
	mkdir -p "$TOPO_TMP/state/guests/$1"
	python3 - "$TOPO_TMP/state/guests/$1/verdict.rec" "$2" <<'PY'
import struct, sys, time, os
p, v = sys.argv[1], int(sys.argv[2])
b = struct.pack("=IIqIIII", 0x3152564d, v, int(time.time()), 1, 0, 0, 0)
open(p + ".tmp", "wb").write(b); os.rename(p + ".tmp", p)
PY
}
reach() { tcp_probe $TOPO-web $INET_HTTP 80; }
# through the gateway's proxy (its explicit port): the HTTP status
via_proxy() { via_proxy_in web "$1"; }
via_proxy_in() { in_ns "$TOPO-$1" curl -s --max-time 4 -o /dev/null -w '%{http_code}' \
	-x "http://$GW_ADDR:3128" "http://$2/"; }
shut() {	# shut WHAT -- web resolves no name, connects nowhere, not even by the proxy
	expect_eq "$1: web cannot connect to the granted address" unreachable "$(reach)"
	expect_eq "$1: web resolves neither open.test nor short.test nor its listed pypi.org" "" \
		"$(dig_in web open.test)$(dig_in web short.test)$(dig_in web pypi.org)"
	expect_eq "$1: the proxy fetches neither the granted nor the listed name for web" "403 403" \
		"$(via_proxy open.test) $(via_proxy pypi.org)"
	expect_eq "$1: web's exception (the LAN host's ssh) is shut" unreachable \
		"$(tcp_probe $TOPO-web $LAN_HOST 22)"
	expect_eq "$1: web is still quarantined, egress none" "True none" \
		"$(sbjson web quarantined) $(sbjson web egress)"
}
# --- a live grant, then the quarantine ---------------------------------------
out=$(gw_ctl allow web open.test --for 300s 2>&1)
expect_match "admin grants web open.test for 300 s" "^web may reach open\.test for 300s" "$out"
granted() { [ "$(dig_in web open.test)" = "$INET_HTTP" ] && [ "$(reach)" = connected ]; }
wait_for 5 granted
expect_ok "the grant opens open.test to web" granted
expect_eq "before the quarantine the proxy fetches open.test and pypi.org for web" "200 200" \
	"$(via_proxy open.test) $(via_proxy pypi.org)"
expect_eq "before the quarantine web's exception opens the LAN host's ssh" connected \
	"$(tcp_probe $TOPO-web $LAN_HOST 22)"

rec web 2
q() { [ "$(sbjson web quarantined)" = True ]; }
wait_for 30 q; expect_ok "web is quarantined after reporting NOT CONTAINED" q
cut() { [ "$(reach)" != connected ]; }
wait_for 5 cut
shut "quarantined with a live grant"
expect_eq "dev (open) still reaches the internet" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"

# --- grants made during the quarantine -------------------------------------
out=$(gw_ctl allow web short.test --for 3s 2>&1)
expect_match "an admin's grant in quarantine is refused: egress none" 'sandbox web has egress "none": it reaches nothing' "$out"
out=$(as "$UA" allow web short.test --for 300s 2>&1)
expect_match "the owner's grant in quarantine is refused: egress none" 'sandbox web has egress "none": it reaches nothing' "$out"
sleep 1
shut "after an admin's and the owner's grant made in quarantine"
sleep 3
shut "after a grant expired in quarantine"
expect_ok "reload" gw_ctl reload
sleep 1
shut "after a reload"

# --- the owner cannot lift it ------------------------------------------------
out=$(as "$UA" clear-quarantine web 2>&1); rc=$?
expect_eq "the owner's clear-quarantine fails" 1 "$([ $rc -ne 0 ] && echo 1 || echo 0)"
expect_match "... and says it is for admins" "clear-quarantine is for root and the admin group only" "$out"
shut "after the owner tried clear-quarantine"
expect_eq "no quarantine-cleared in the audit log" 0 \
	"$(grep -c '"event":"quarantine-cleared"' "$GW_AUDIT")"

# --- a restart keeps it, and the children start -------------------------------
kill "$GW_PID"; wait_for 20 sh -c "! kill -0 $GW_PID 2>/dev/null"
gw_start; expect_eq "gatewayd starts again with web quarantined" 0 $?
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
expect_eq "after the restart dev (open) resolves through dnsd" "$INET_HTTP" "$(dig_in dev open.test)"
shut "after a restart"

# --- hostile names in a member's grant ---------------------------------------
ESC=$(printf '\033')
out=$(as "$UA" allow web "a\"b${ESC}[31m.member.test" --for 60s 2>&1); rc=$?
expect_eq "a grant of a name with a quote and an escape is refused" 1 "$([ $rc -ne 0 ] && echo 1 || echo 0)"
expect_eq "... the answer carries no raw escape" 0 "$(printf '%s' "$out" | grep -c "$ESC")"
expect_eq "ctl grants carries no raw escape nor the name" 0 \
	"$(gw_ctl grants 2>&1 | grep -c -e "$ESC" -e 'a"b')"
expect_eq "ctl grants --json parses" ok \
	"$(gw_ctl grants --json 2>&1 | python3 -c 'import json,sys; json.load(sys.stdin); print("ok")' 2>&1)"
expect_eq "the audit log carries no raw escape" 0 "$(grep -c "$ESC" "$GW_AUDIT")"

# --- an admin lifts it --------------------------------------------------------
out=$(gw_ctl clear-quarantine web 2>&1)
expect_match "ctl clear-quarantine web" "quarantine of web cleared" "$out"
expect_eq "web's own egress is back (allowlist)" "False allowlist" \
	"$(sbjson web quarantined) $(sbjson web egress)"
listed() { [ "$(dig_in web pypi.org)" = "$INET_HTTP" ] && [ "$(via_proxy pypi.org)" = 200 ]; }
wait_for 10 listed
expect_ok "its own list works again: pypi.org resolves and the proxy fetches it" listed
expect_eq "... and its exception again" connected "$(tcp_probe $TOPO-web $LAN_HOST 22)"
# The quarantine ended every grant of web; none made during it stayed.
expect_eq "the grants ended with the quarantine: open.test and short.test stay refused" "  403 403" \
	"$(dig_in web open.test) $(dig_in web short.test) $(via_proxy open.test) $(via_proxy short.test)"
expect_eq "ctl grants lists none for web" 0 "$(gw_ctl grants 2>&1 | grep -c '^web ')"

# --- the owner's grants while an admin reloads ---------------------------------
# The control requests and the reload take turns on gatewayd's one loop:
# each grant is in force after the reload that raced it, in the kernel,
# dnsd and the proxy alike.
for k in 1 2 3 4 5; do
	gw_ctl reload >/dev/null 2>&1 & rl=$!
	out=$(as "$UA" allow web "k$k.member.test" --for 300s 2>&1)
	wait $rl
	case $out in *"web may reach k$k.member.test for 300s"*) ;; *) echo "# grant $k: $out" ;; esac
done
expect_eq "five grants made during reloads are all listed" 5 \
	"$(gw_ctl grants 2>&1 | grep -c 'k[1-5]\.member\.test')"
expect_eq "... and each is in the proxy's list for web (a 502 or 200, not the 403 refusal)" "0" \
	"$(for k in 1 2 3 4 5; do via_proxy k$k.member.test; echo; done | grep -c 403)"
expect_eq "a name not granted is still refused by the proxy" 403 "$(via_proxy k9.member.test)"

# --- an open sandbox quarantined: the proxy is shut to it too ------------------
expect_eq "dev (open) fetches open.test through the proxy" 200 "$(via_proxy_in dev open.test)"
rec dev 2
qd() { [ "$(sbjson dev quarantined)" = True ]; }
wait_for 30 qd; expect_ok "dev is quarantined after reporting NOT CONTAINED" qd
expect_eq "quarantined dev: no direct connection, the proxy refuses open.test" "unreachable 403" \
	"$(tcp_probe $TOPO-dev $INET_HTTP 80) $(via_proxy_in dev open.test)"
expect_eq "dnsd and the proxy never failed to take a configuration" "" \
	"$(grep -E 'not usable|could not take|exited with status' "$GW_LOG")"
tap_done
