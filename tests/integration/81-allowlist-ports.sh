#!/usr/bin/env bash
# Grants with ports of their own: `gatewayd ctl allow SANDBOX NAME --ports
# tcp/22` opens the name's answered addresses for exactly those ports (set
# allowp_SANDBOX, address . protocol . port), not for the sandbox's
# allow_ports; the kernel enforces it, and the explicit proxy says the same.
# Other sandboxes are unaffected; --for expires the elements with the
# grant; a bad --ports is refused and changes nothing; a grant for good is
# written as "NAME:tcp/22" and comes back the same after a reload and a
# restart; a member may narrow a name to ports among allow_ports, never
# widen it; unallow takes the name with all its ports.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mpa$$
team_cleanup() { userdel "$UA" 2>/dev/null; }
topo_up || { not_ok "topology"; team_cleanup; exit 1; }
trap 'rc=$?; team_cleanup; topo_down; exit $rc' EXIT
trap 'team_cleanup; topo_down; exit 130' INT
trap 'team_cleanup; topo_down; exit 143' TERM
bash gatewayd/install-users.sh
useradd -M -N -G moat -s /usr/sbin/nologin "$UA" || { not_ok "useradd $UA"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }

topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest lab 10.77.0.13 52:54:00:00:00:0d mt-lab
topo_services
# open.test and pypi.org both answer $INET_HTTP: one address, two names.
topo_banner "$NS_INET" $INET_HTTP 22 "SSH-2.0-moat-git" || { not_ok "banner 22"; exit 1; }
topo_banner "$NS_INET" $INET_HTTP 443 "tls-stand-in" || { not_ok "banner 443"; exit 1; }
topo_banner "$NS_INET" $INET_HTTP 2222 "SSH-2.0-moat-alt" || { not_ok "banner 2222"; exit 1; }
topo_bg "$NS_INET" udp-echo socat UDP4-RECVFROM:9999,bind=$INET_HTTP,fork SYSTEM:"echo pong"
udp_echo_up() { in_ns "$NS_INET" ss -Hlun "src $INET_HTTP:9999" | grep -q .; }
wait_for 30 udp_echo_up || not_ok "UDP echo server starts"
cp tests/harness/probe.py "$TOPO_TMP/probe.py"
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
sed -e 's|^  exceptions = ( );|  exceptions = ( );\n  member_allow = [ "short.test" ];|' \
	examples/demo.conf >"$GW_CONF"
# Interception off: the probes to 443 test the kernel's sets, which
# interception would hand to the proxy.  The explicit proxy stays.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"
LAB=$TOPO_TMP/sandboxes.d/lab.conf
printf '%s\n' '# lab: written by hand; this comment stays' \
	'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "allowlist";' \
	'allow = [ "github.test" ];' \
	"owner = \"$UA\";" >"$LAB"
chmod 0640 "$LAB"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 +short @$GW_ADDR "$2" A; }
status_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 @$GW_ADDR "$2" A | grep -o 'status: [A-Z]*'; }
set_of() { in_ns "$NS_GW" nft list set inet moat "allow_$1"; }
pset_of() { in_ns "$NS_GW" nft list set inet moat "allowp_$1"; }
probe() { tcp_probe "$TOPO-$1" $INET_HTTP "$2"; }
# udp_probe GUEST PORT -- "reply", or the errno (EHOSTUNREACH: refused)
udp_probe() { in_ns "$TOPO-$1" python3 "$TOPO_TMP/probe.py" udp $INET_HTTP "$2"; }
banner() { in_ns "$TOPO-$1" timeout 3 bash -c "exec 3<>/dev/tcp/$INET_HTTP/$2 && head -c 40 <&3" 2>/dev/null; }
# CONNECT through the explicit proxy: its status line.
proxy_connect() {
	printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$2" "$2" |
	    in_ns "$TOPO-$1" timeout 5 nc $GW_ADDR 3128 2>/dev/null | tr -d '\r' |
	    if [ -n "${3:-}" ]; then cat; else head -1; fi
}

# --- a bad --ports is refused and changes nothing ------------------------------
mkdir -p "$TOPO_TMP/allow.d"; cp data/allow.d/pypi.list "$TOPO_TMP/allow.d/"
for bad in tcp/0 tcp/65536 sctp/22 'tcp/22,' tcp/022 'tcp/22 udp/53' udp/ tcp/22:tcp/23; do
	out=$(gw_ctl allow web open.test --ports "$bad" --for 1m 2>&1); rc=$?
	expect_eq "--ports \"$bad\" is refused (exit 1)" 1 $rc
	expect_match "...saying what is expected, nothing changed" '^--ports: expected ports such as "tcp/22".*; nothing changed$' "$out"
done
many=$(seq -s, -f 'tcp/%g' 1 17)
expect_match "more than 16 ports for one name are refused" 'at most 16 ports' \
	"$(gw_ctl allow web open.test --ports "$many" --for 1m 2>&1)"
expect_match "--ports with a list is refused" '--ports applies to names, not to a list' \
	"$(gw_ctl allow web @pypi --ports tcp/22 --for 1m 2>&1)"
before=$(md5sum <"$LAB")
out=$(gw_ctl allow lab open.test --ports tcp/22,tcp/0 2>&1); rc=$?
expect_eq "a bad --ports for good is refused too (exit 1)" 1 $rc
expect_eq "...and lab's file is as it was" "$before" "$(md5sum <"$LAB")"
expect_eq "...none of them was audited" "" "$(grep '"event":"allow"' "$GW_AUDIT")"
expect_eq "...and web still refuses open.test" "status: REFUSED" "$(status_in web open.test)"
expect_fail "...and web, no name of which has ports of its own, has no port set at all" pset_of web

# --- a grant with --ports, for a while (the kernel) -----------------------------
expect_eq "before: web cannot reach open.test's address on 22" unreachable "$(probe web 22)"
out=$(gw_ctl allow web open.test --ports udp/9999,tcp/22 --for 15s 2>&1)
expect_match "ctl allow --ports answers" '^web may reach open\.test on tcp/22,udp/9999 only for 15s \(until ' "$out"
expect_eq "web resolves open.test" "$INET_HTTP" "$(dig_in web open.test)"
expect_match "the explicit proxy lets web CONNECT open.test:22" '^HTTP/1\.1 200' "$(proxy_connect web open.test:22)"
expect_match "...and refuses open.test:443" '^HTTP/1\.1 403' "$(proxy_connect web open.test:443)"
expect_match "...telling the agent how to ask for that port" \
	'moat: sandbox web may not reach open\.test on port 443 \(a port not among the name.s own ports.*\); ask the operator: gatewayd ctl allow web open\.test --ports tcp/443' \
	"$(proxy_connect web open.test:443 all)"
expect_match "...and ctl refused lists it as a port refusal" 'open\.test.*port not in allow_ports' "$(gw_ctl refused web)"
expect_match "the first such grant made web's port set, by an incremental update" \
	'policy: updated, [0-9]+ message' "$(tail -n 20 "$GW_LOG")"
expect_match "its address is in web's port set with tcp 22" "$INET_HTTP \. tcp \. 22 timeout" "$(pset_of web)"
expect_match "...and with udp 9999" "$INET_HTTP \. udp \. 9999 timeout" "$(pset_of web)"
expect_eq "...and not in web's address set (not for allow_ports)" "" "$(set_of web | grep -o "$INET_HTTP")"
expect_eq "web reaches it on 22 (the name's own port)" connected "$(probe web 22)"
expect_eq "...and talks to the service there" "SSH-2.0-moat-git" "$(banner web 22)"
expect_eq "web does not reach it on 443 (in allow_ports, not the name's)" unreachable "$(probe web 443)"
expect_eq "...nor on 80" unreachable "$(probe web 80)"
expect_eq "...nor on 2222" unreachable "$(probe web 2222)"
expect_eq "web gets an answer on udp 9999" reply "$(udp_probe web 9999)"
expect_eq "...but tcp 9999 is refused (the protocol is part of the key)" unreachable "$(probe web 9999)"
expect_eq "...and udp 9998 too" EHOSTUNREACH "$(udp_probe web 9998)"
expect_match "the grant is audited with its ports" \
	'"event":"allow","uid":0,"user":"root","sandbox":"web","names":"open.test","for":"15s","ports":"tcp/22,udp/9999"' \
	"$(cat "$GW_AUDIT")"
# Other sandboxes are unaffected.
expect_eq "lab does not reach the address on 22" unreachable "$(probe lab 22)"
expect_eq "...nor on udp 9999" EHOSTUNREACH "$(udp_probe lab 9999)"
expect_eq "lab still refuses open.test" "status: REFUSED" "$(status_in lab open.test)"
expect_eq "lab's port set is empty" "" "$(pset_of lab | grep -o "$INET_HTTP")"
expect_eq "dev (open) reaches 443 as before" connected "$(probe dev 443)"
# The kernel sees addresses: once pypi.org (a plain entry of web) answers
# the same address, that address opens web's allow_ports as well.
expect_eq "web resolves pypi.org, a plain entry, to the same address" "$INET_HTTP" "$(dig_in web pypi.org)"
expect_eq "...and then reaches the address on 443 (for pypi.org)" connected "$(probe web 443)"
expect_eq "...but still not on 2222" unreachable "$(probe web 2222)"
gone() { ! pset_of web | grep -q "$INET_HTTP"; }
wait_for 25 gone
expect_ok "after 15 s the grant's elements are gone (nft list set allowp_web)" gone
expect_eq "...22 is unreachable again" unreachable "$(probe web 22)"
expect_eq "...and udp 9999" EHOSTUNREACH "$(udp_probe web 9999)"
expect_eq "...and open.test refused" "status: REFUSED" "$(status_in web open.test)"
expect_match "the expiry is audited" '"event":"grant-expired","sandbox":"web","name":"open.test:tcp/22,udp/9999"' "$(cat "$GW_AUDIT")"

# --- a grant for good, written to the file ----------------------------------------
expect_eq "before: lab cannot reach the address on 2222" unreachable "$(probe lab 2222)"
out=$(gw_ctl allow lab open.test --ports tcp/2222,tcp/22 2>&1)
expect_match "allow lab open.test --ports ... for good" '^lab may reach open\.test on tcp/22,tcp/2222 only \(written to its file\)' "$out"
expect_match "the file has the entry with its ports" 'allow = \[ "github.test", "open.test:tcp/22,tcp/2222" \];' "$(cat "$LAB")"
expect_match "its comment is kept" '^# lab: written by hand; this comment stays' "$(cat "$LAB")"
expect_ok "the configuration on disk loads" in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"
lab_ports() {
	[ "$(dig_in lab open.test)" = "$INET_HTTP" ] &&
	[ "$(probe lab 22)" = connected ] && [ "$(probe lab 2222)" = connected ] &&
	[ "$(probe lab 443)" = unreachable ] && [ "$(probe lab 80)" = unreachable ]
}
expect_ok "lab reaches 22 and 2222, not 443 nor 80" lab_ports
expect_eq "web is unaffected (22 unreachable)" unreachable "$(probe web 22)"
expect_ok "reload" gw_ctl reload
expect_ok "after a reload: the same" lab_ports
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
gw_start; expect_eq "gatewayd starts again" 0 $?
wait_for 30 dnsd_up
expect_ok "after a restart: the same" lab_ports
expect_match "...read back from the file" 'open\.test:tcp/22,tcp/2222' \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"

# --- members narrow, never widen ------------------------------------------------
out=$(as $UA allow lab short.test --ports tcp/22 --for 1m 2>&1); rc=$?
expect_eq "a member's --ports beyond allow_ports is refused (exit 1)" 1 $rc
expect_match "...saying who can" 'members may grant only ports among the sandbox.s allow_ports.* root .*can: gatewayd ctl allow lab short\.test --ports tcp/22' "$out"
expect_eq "...and lab still refuses short.test" "status: REFUSED" "$(status_in lab short.test)"
out=$(as $UA allow lab short.test --ports tcp/443 --for 1m 2>&1)
expect_match "a member may narrow a name to ports among allow_ports" 'lab may reach short\.test on tcp/443 only for 1m' "$out"
expect_match "...and the audit says who" "\"user\":\"$UA\",\"sandbox\":\"lab\",\"names\":\"short.test\",\"for\":\"1m\",\"ports\":\"tcp/443\"" "$(cat "$GW_AUDIT")"

# --- unallow takes the name with all its ports -------------------------------------
out=$(gw_ctl unallow lab open.test 2>&1)
expect_match "unallow lab open.test" 'lab no longer reaches open\.test' "$out"
expect_match "...out of the file" 'allow = \[ "github.test" \];' "$(cat "$LAB")"
expect_eq "...the port set emptied" "" "$(pset_of lab | grep -o "$INET_HTTP")"
expect_eq "...22 unreachable" unreachable "$(probe lab 22)"
expect_eq "...and open.test refused" "status: REFUSED" "$(status_in lab open.test)"
expect_match "the unallow is audited" '"event":"unallow","uid":0,"user":"root","sandbox":"lab","names":"open.test","for":"permanent","ports":"all"' "$(cat "$GW_AUDIT")"

expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
tap_done
