#!/usr/bin/env bash
# The docs are tests: docs/install.md, run as written, on the machine of
# 64-docs-homelab.sh (tests/harness/doc-run.sh): the gateway namespace,
# inside a mount namespace whose /etc, /usr, /var, /srv and /home are
# overlays of this test's (the host's stay untouched) and whose /run is a
# fresh tmpfs with no systemd to reach.  The page installs the .deb, runs
# gatewayd the way a supervisor would (its run script, written from the
# page's snippet), stops it and purges the package; then:
#   - the purge gave the machine back as it was before the install: the
#     gateway namespace's links, addresses, forwarding and icmp_ratelimit,
#     no nftables table, none of moat's users, group or folders;
#   - the run script does what the installed unit does (its ExecStartPre
#     and ExecStart, and the folders with the unit's modes);
#   - on a host whose NIC is enp3s0, the first install says so and gatewayd
#     -n proposes `uplink = "enp3s0";`, which pasted in works;
#   - MOAT_KEEP_POLICY=1 keeps the nftables policy, and says so.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh
. tests/harness/doc-run.sh

for b in build/gatewayd; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale

if [ "$(dpkg-query -W -f='${Status}' moat 2>/dev/null)" = "install ok installed" ]; then
	not_ok "this machine has no package moat installed" \
		"the test installs it into its own overlays, starting from a machine without it"
	tap_done; exit 1
fi
t0=$EPOCHSECONDS how="given as \$MOAT_DEB"
if [ -z "${MOAT_DEB:-}" ]; then
	DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" make --no-print-directory deb \
		BUILD="$TOPO_TMP/build" >"$TOPO_TMP/deb.log" 2>&1 ||
		{ not_ok "make deb" "$(tail -20 "$TOPO_TMP/deb.log")"; tap_done; exit 1; }
	MOAT_DEB=$(ls "$TOPO_TMP"/build/deb/moat_*_amd64.deb)
	how="built by make deb in $((EPOCHSECONDS - t0)) s"
fi
[ -f "$MOAT_DEB" ] || { not_ok "the package $MOAT_DEB exists"; tap_done; exit 1; }
ok "the package: ${MOAT_DEB##*/} ($how)"
DOC_CWD=$TOPO_PUB/download
install -d -m 0755 "$DOC_CWD" && install -m 0644 "$MOAT_DEB" "$DOC_CWD/"

doc_machine_up || { not_ok "the machine (namespaces, overlays, resolver)"; tap_done; exit 1; }
ok "the machine's disk is overlays of this test's (the host's /etc, /usr, /var untouched)"
inside sh -c 'for f; do rm -f "/usr/local/${f#./usr/}"; done' _ \
	$(dpkg-deb -c "$MOAT_DEB" | awk '$6 ~ "^[.]/usr/s?bin/." { print $6 }')
# None of moat's users or group.  The host's keep their ids under other
# names: the ids postinst picks must be ids no process on the host runs
# as (other tests' dnsd as the host's moat-dns), or purge's userdel
# rightly refuses ("currently used by process").  So the host's are made
# first, as other tests make them: on a fresh machine they could appear
# while this test runs, after the overlay took its copy of /etc.
bash gatewayd/install-users.sh >/dev/null
inside sed -E -i -e 's/^moat(-[a-z]+)?:/hold-&/' -e 's/([:,])moat-qemu(,|$)/\1/' -e 's/,$//' \
	/etc/passwd /etc/group /etc/shadow /etc/gshadow
# The kernel's default, so that gatewayd's change to it (fast refusals)
# is one the purge must undo.
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=1000

# What the machine is, for the before/after comparison: the gateway's
# links, addresses, the sysctls gatewayd changes, nftables, moat's users,
# group and folders, dpkg's record.
machine_state() {
	local ifn
	echo "links: $(ip -n "$NS_GW" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' ')"
	ip -n "$NS_GW" -br addr | awk '{ $2 = ""; print "addr:", $0 }' | sort
	for ifn in all default eth0 lan0; do
		echo "forwarding $ifn: $(in_ns "$NS_GW" sysctl -n net.ipv4.conf.$ifn.forwarding)"
	done
	echo "icmp: $(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit net.ipv4.icmp_msgs_per_sec net.ipv4.icmp_msgs_burst | tr "\n" " ")"
	echo "nft: $(in_ns "$NS_GW" nft list tables | tr '\n' ' ')"
	echo "users: $(inside sh -c 'getent passwd | cut -d: -f1 | grep "^moat"' | tr '\n' ' ')"
	echo "groups: $(inside sh -c 'getent group | cut -d: -f1 | grep "^moat"' | tr '\n' ' ')"
	inside sh -c 'for p in /etc/moat /var/lib/moat /var/log/moat /run/moat /usr/sbin/gatewayd \
		/usr/lib/moat /etc/logrotate.d/moat; do [ -e "$p" ] && echo "present: $p"; done; true'
	echo "dpkg: $(inside dpkg-query -W -f='${Status}' moat 2>/dev/null)"
}
machine_state >"$TOPO_TMP/before"

DOC=docs/install.md
SV_PID=$TOPO_TMP/sv.pid
# The page's run script goes where its second line says.
doc_snippet() {
	local path
	path=$(sed -n '2s|^# \(/[^ ]*\) .*|\1|p' <<<"$2")
	if [ -z "$path" ]; then
		not_ok "$DOC:$1: the snippet names its file on its second line"; return
	fi
	inside sh -c "mkdir -p '${path%/*}' && cat >'$path'" <<<"$2" &&
		ok "$DOC:$1: wrote $path" || not_ok "$DOC:$1: wrote $path"
	SV_RUN=$path
}
# No runit here: the supervisor is the test, which runs the script in
# the background as runit would, and sends SIGTERM as sv down does.
standin_sv_up() {
	echo "# stand-in: no runit here; the run script runs in the background, as runsv would"
	doc_run "$SV_RUN </dev/null >>$TOPO_TMP/sv.log 2>&1 & echo \$! >$SV_PID" || return 1
	wait_for 60 doc_run "gatewayd ctl status" >/dev/null ||
		{ echo "#   gatewayd did not answer:"; tail -5 "$TOPO_TMP/sv.log" | sed 's/^/#   /'; return 1; }
	echo "#   gatewayd answers (pid $(cat $SV_PID), the run script's own: it exec'd gatewayd)"
}
standin_sv_down() {
	echo "# stand-in: no runit here; SIGTERM to the run script's process, as sv down"
	local pid
	pid=$(cat "$SV_PID" 2>/dev/null) || return 1
	kill -TERM "$pid" || return 1
	wait_for 30 sh -c "! kill -0 $pid 2>/dev/null"
}
standin_yes() {
	echo "# stand-in: the admin answers apt's question with Y"
	doc_run "yes | $1" >"$TOPO_TMP/purge.out" 2>&1; local rc=$?
	cat "$TOPO_TMP/purge.out"; return $rc
}
declare -A HOW=(
	["apt install ./moat_*.deb"]=run
	["gatewayd -n -c /etc/moat/moat.conf"]=run
	["chmod 0755 /etc/sv/moat-gatewayd/run"]=run
	["sv up moat-gatewayd"]=standin_sv_up
	["gatewayd ctl status"]=run
	["sv down moat-gatewayd"]=standin_sv_down
	["apt purge moat"]=standin_yes
)
doc_walk "$DOC"
expect_eq "every command of the page ran or was stood in for" "${#HOW[@]}" "$DOC_NCMDS"

# The run script's gatewayd lines are the unit's ExecStartPre and
# ExecStart (the unit came with the package: the purge removed it, so the
# one in the .deb), and its folders have the unit's modes.
dpkg-deb --fsys-tarfile "$MOAT_DEB" | tar -xO ./lib/systemd/system/moat-gatewayd.service \
	>"$TOPO_TMP/unit" 2>/dev/null
run_text=$(python3 tests/harness/doc-blocks.py "$DOC" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if "snippet" in r and "/etc/sv/" in r["snippet"]:
        print(r["snippet"])')
for k in ExecStartPre ExecStart; do
	u=$(sed -n "s/^$k=//p" "$TOPO_TMP/unit")
	expect_match "the run script runs the unit's $k ($u)" "^(exec )?$(sed 's/[.]/\\./g' <<<"$u")( |$)" \
		"$(grep -F -- "$u" <<<"$run_text")"
done
for d in RuntimeDirectory:/run StateDirectory:/var/lib LogsDirectory:/var/log; do
	k=${d%%:*} m=$(sed -n "s/^${d%%:*}Mode=//p" "$TOPO_TMP/unit")
	expect_match "the run script makes $k ${d#*:}/moat with the unit's mode $m" \
		"install -d -m $m ${d#*:}/moat" "$run_text"
done

# The purge gave the machine back.
machine_state >"$TOPO_TMP/after"
if diff "$TOPO_TMP/before" "$TOPO_TMP/after" >"$TOPO_TMP/diff"; then
	ok "after install, start, stop and purge the machine is as before (links, addresses, sysctls, nft, users, folders)"
else
	not_ok "after install, start, stop and purge the machine is as before (links, addresses, sysctls, nft, users, folders)" \
		"$(cat "$TOPO_TMP/diff")"
fi
# (that is the purge's doing: gatewayd had changed them)
purged=$(cat "$TOPO_TMP/purge.out" 2>/dev/null)
expect_match "... the purge deleted the bridge gatewayd made" "teardown: deleted bridge moat0" "$purged"
expect_match "... set icmp_ratelimit back" "teardown: net.ipv4.icmp_ratelimit set back to 1000" "$purged"
expect_match "... and forwarding on the uplink" "teardown: forwarding on eth0 set back to 0" "$purged"

# --- a host whose NIC is enp3s0 ---------------------------------------------
# The uplink renamed, as on most hardware; the default route through it.
ip -n "$NS_GW" link set eth0 down && ip -n "$NS_GW" link set eth0 name enp3s0 &&
	ip -n "$NS_GW" link set enp3s0 up && ip -n "$NS_GW" route add default via $INET_ADDR ||
	not_ok "rename the uplink to enp3s0"
out=$(doc_run "apt install ./moat_*.deb" 2>&1); rc=$?
expect_eq "enp3s0 host: the package installs" 0 $rc
[ $rc = 0 ] || tail -12 <<<"$out" | sed 's/^/#   | /'
expect_match "... its first install names the interface of the default route" \
	'moat: The default route leaves through enp3s0: set' "$out"
expect_match "... as a line to write" '^moat:   uplink = "enp3s0";' "$out"
out=$(doc_run "gatewayd -n -c /etc/moat/moat.conf" 2>&1); rc=$?
expect_eq "... gatewayd -n fails on the shipped uplink" 1 $rc
expect_match "... with the fix-it line" \
	'^/etc/moat/moat.conf:[0-9]+: gateway: uplink: no interface "eth0" on this host \(it has: .*enp3s0.*\); the default route leaves through enp3s0: set uplink = "enp3s0";$' "$out"
fix=$(sed -n 's/.*: set \(uplink = "[^"]*";\)$/\1/p' <<<"$out")
doc_run "sed -i 's|^\\( *\\)uplink *= *\"eth0\";|\\1$fix|' /etc/moat/moat.conf"
expect_ok "... pasted in, gatewayd -n passes" doc_run "gatewayd -n -c /etc/moat/moat.conf"
standin_sv_up >/dev/null; rc=$?
expect_eq "... and gatewayd runs with it" 0 $rc
expect_ok "... with its policy in the kernel" in_ns "$NS_GW" nft list table inet moat
standin_sv_down >/dev/null
out=$(doc_run "yes | MOAT_KEEP_POLICY=1 apt purge moat" 2>&1); rc=$?
expect_eq "MOAT_KEEP_POLICY=1 apt purge moat: exit 0" 0 $rc
expect_match "... says the policy stays, as asked" 'stays, as asked' "$out"
expect_ok "... and it stays in the kernel" in_ns "$NS_GW" nft list table inet moat
expect_fail "... while the network is given back (no moat0)" ip -n "$NS_GW" link show moat0
expect_eq "... forwarding on enp3s0 set back" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.conf.enp3s0.forwarding)"
left=$(inside sh -c 'getent passwd | cut -d: -f1 | grep "^moat"')
expect_eq "... no users of moat left" "" "$left"
[ -z "$left" ] || grep '^moat:' <<<"$out" | sed 's/^/#   /'
expect_match "... and it says it removed them" "moat: removed group moat" "$out"
# Nothing reached the host.  (Not "no file of /var/lib/moat is newer" or
# "the host's moat users are as they were": on a shared machine other
# tests' gatewayd and install-users.sh may change those meanwhile.)
expect_ok "the host has no run script of this test's (/etc/sv/moat-gatewayd)" \
	test ! -e /etc/sv/moat-gatewayd
expect_ok "the host's dpkg does not know moat" \
	sh -c '[ "$(dpkg-query -W -f="\${Status}" moat 2>/dev/null)" != "install ok installed" ]'
tap_done
