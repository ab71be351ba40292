# doc-run.sh -- run a walkthrough in docs/ as written (sourced after
# tap.sh, topology.sh and guest-lib.sh; see 64-docs-homelab.sh).
#
# doc_machine_up builds the machine the pages assume: a gateway namespace
# whose uplink is eth0 (a default route through it, the shipped
# dns.upstream 9.9.9.9 answering behind it, a LAN on lan0), and a mount
# namespace in which /etc, /usr, /var, /srv, /home and /root are overlays of
# $TOPO_TMP (nothing lands on the host) and /run a tmpfs, with none of
# moat's files: make install, /etc/moat, /var/lib/moat, /run/moat are
# the page's own paths.  doc_walk DOC runs every command of DOC in order
# (doc-blocks.py): root's as root, "$ " ones as $DOC_MEMBER, each as its
# test's HOW table says ("run": as written; else a stand-in function,
# given the command, that says what it does instead and why), and checks
# the output the page shows.  A command the table lacks fails the test.

doc_machine_up() {
	topo_ns "$NS_GW" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" || return 1
	in_ns "$NS_GW" sysctl -qw net.ipv4.conf.all.forwarding=0 net.ipv4.conf.default.forwarding=0
	topo_link "$NS_GW" eth0 "$NS_INET" eth0 || return 1
	ip -n "$NS_GW" addr add 203.0.113.1/24 dev eth0
	ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
	ip -n "$NS_INET" addr add 9.9.9.9/32 dev eth0
	ip -n "$NS_GW" route add default via $INET_ADDR
	topo_link "$NS_GW" lan0 "$NS_LAN" eth0 || return 1
	ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
	ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
	ip -n "$NS_LAN" route add default via 192.168.77.1
	topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-moat-lan-host" || return 1
	topo_bg "$NS_INET" dns-9999 python3 tests/harness/cc-dns.py 9.9.9.9
	topo_wait_port "$NS_INET" 9.9.9.9 53 || return 1
	in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
		net.ipv4.icmp_msgs_burst=100000 2>/dev/null
	doc_disk_up
}

DOC_OV=$TOPO_TMP/overlay
DOC_HOLD=
doc_hold_apart() { # the holder has its own mount namespace by now
	[ "$(readlink /proc/$DOC_HOLD/ns/mnt)" != "$(readlink /proc/$$/ns/mnt)" ]
}
inside() { nsenter -t "$DOC_HOLD" -m -- "$@"; }
# (DOC_HOLD and DOC_NS name the machine: a test with several sets them.)
doc_disk_up() {
	mkdir -p "$DOC_OV"
	unshare -m --propagation private sleep 86400 &
	DOC_HOLD=$!
	TOPO_PIDS+=("$DOC_HOLD")
	wait_for 10 doc_hold_apart || return 1
	inside sh -ec "
	for d in etc usr var srv home root; do
		mkdir -p '$DOC_OV'/\$d.u '$DOC_OV'/\$d.w
		mount -t overlay overlay -o lowerdir=/\$d,upperdir='$DOC_OV'/\$d.u,workdir='$DOC_OV'/\$d.w /\$d
	done
	# A fresh machine: none of moat's files (whiteouts in the overlays only).
	rm -rf /etc/moat /var/lib/moat /var/log/moat /usr/local/sbin/gatewayd /usr/local/bin/provision
	# ...and root has no ssh key yet, as on a fresh box.
	rm -f /root/.ssh/id_ed25519 /root/.ssh/id_ed25519.pub
	mkdir -p '$DOC_OV'/run.host
	mount --rbind /run '$DOC_OV'/run.host
	mount -t tmpfs -o mode=0755 tmpfs /run
	mkdir /run/netns
	mount --rbind '$DOC_OV'/run.host/netns /run/netns
	"
}

# doc_run CMD [USER] -- the command as written, on the gateway, as root
# or USER, in the page's current directory (a cd carries over).
DOC_CWD=$PWD
doc_run() {
	local home=/root as=() cwd=$TOPO_TMP/cwd
	if [ -n "${2:-}" ]; then home=/home/$2; as=(runuser -u "$2" --); cwd=/dev/null; fi
	inside ip netns exec "${DOC_NS:-$NS_GW}" "${as[@]}" env -i HOME="$home" TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${DOC_ENV:-} bash -c 'cd "$1" 2>/dev/null || cd; eval "$2"; rc=$?; pwd >"$3"; exit $rc' \
		_ "$DOC_CWD" "$1" "$cwd"
}

# systemd is not here: the installed unit's own commands stand in.
DOC_UNIT=/lib/systemd/system/moat-gatewayd.service
DOC_GWPID=$TOPO_TMP/gatewayd.pid
unit_exec() { inside sed -n "s/^$1=//p" "$DOC_UNIT"; }
standin_systemctl_start() {
	echo "# stand-in: no systemd here; the installed unit's own commands run"
	doc_run "install -d -m 0755 /run/moat && install -d -m 0711 /var/lib/moat &&
		install -d -m 0750 /var/log/moat" || return 1
	doc_run "$(unit_exec ExecStartPre)" || return 1
	doc_run "$(unit_exec ExecStart) </dev/null >>/var/log/moat/unit.log 2>&1 & echo \$! >$DOC_GWPID" || return 1
	doc_run "$(unit_exec ExecStartPost)" || return 1
	# What a guest's verdict rests on: dnsd and the intercepting proxy
	# run (a proxy that is not there would refuse, and look contained).
	wait_for 30 doc_run "gatewayd ctl status --json | python3 -c '
import json, sys
c = json.load(sys.stdin)[\"children\"]
sys.exit(0 if all(any(x[\"name\"] == n and x[\"pid\"] > 0 for x in c) for n in (\"dnsd\", \"proxy\")) else 1)'" &&
		wait_for 30 in_ns "$NS_GW" sh -c 'ss -Hltn "sport = :3128" | grep -q .' ||
		{ echo "# dnsd or the proxy is not running"; return 1; }
	echo "#   dnsd and the proxy run; the proxy listens on :3128"
}
standin_systemctl_stop() {
	echo "# stand-in: no systemd here; SIGTERM to the unit's main process, as systemd"
	local pid
	pid=$(cat "$DOC_GWPID" 2>/dev/null) || return 1
	kill -TERM "$pid" || return 1
	wait_for 30 sh -c "! kill -0 $pid 2>/dev/null"
}

# What varies from run to run in a shown output line (a regex for it):
# pids, and a guest's uid (the first of gateway.guest_uids that no
# process on this machine uses: other tests' guests may hold some); a
# test adds its own with doc_varies (sed expressions, one per line).
doc_varies() { :; }
varies() {
	local e=(-e 's/pid 4242/pid [0-9]+/' -e 's/uid 21000000[0-9][0-9]/uid 21000[0-9]{5}/') x
	while IFS= read -r x; do [ -n "$x" ] && e+=(-e "$x"); done < <(doc_varies)
	sed -E "${e[@]}"
}
squeeze() { sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//'; }
# shown_in OUT LINE -- the page's output line is in the output.
shown_in() {
	local want re
	want=$(squeeze <<<"$2")
	case $want in
	"... "*) grep -qF -- "${want#... }" <<<"$1"; return ;;
	esac
	re=$(sed -E 's/[][\.*^$(){}|+?]/\\&/g' <<<"$want" | varies)
	squeeze <<<"$1" | grep -qE -- "^$re\$"
}

doc_records() {
	python3 tests/harness/doc-blocks.py "$1" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if "section" in r:
        sys.stdout.write("S\x1e%s\0" % r["section"])
    elif "snippet" in r:
        sys.stdout.write("F\x1e%d\x1e%s\0" % (r["line"], r["snippet"]))
    else:
        sys.stdout.write("C\x1e%d\x1e%s\x1e%s\x1e%s\0" % (r["line"],
                         r["cmd"] if r["cmd"] is not None else "",
                         r.get("as", "root"), "\x1f".join(r["expect"])))'
}

# doc_snippet LINE TEXT -- a file's text the page shows (a test that
# meets one defines what to do with it).
doc_snippet() { not_ok "$DOC:$1: a file's text this test knows what to do with" "$2"; }

DOC_NCMDS=0
doc_walk() {
	local rec kind a b c d line cmd who how out rc w want
	DOC=$1
	while IFS= read -r -d '' rec; do
		IFS=$'\x1e' read -r -d '' kind a b c d <<<"$rec"
		case $kind in
		S) echo "# --- $a"; continue ;;
		F) doc_snippet "$a" "$b"; continue ;;
		esac
		line=$a cmd=$b who=$c
		IFS=$'\x1f' read -r -a want <<<"$d"
		if [ -z "$cmd" ]; then
			echo "# $DOC:$line: example output, not produced here"
			continue
		fi
		DOC_NCMDS=$((DOC_NCMDS + 1))
		how=${HOW[$cmd]:-}
		if [ -z "$how" ]; then
			not_ok "$DOC:$line: a command this test knows how to run" "$cmd"
			continue
		fi
		[ "$who" = member ] && echo "# $DOC_MEMBER\$ $cmd" || echo "# \$ $cmd"
		HOW_NOW=$how
		if [ "$how" = run ] && [ "$who" = member ]; then
			out=$(doc_run "$cmd" "$DOC_MEMBER" 2>&1); rc=$?
		elif [ "$how" = run ]; then out=$(doc_run "$cmd" 2>&1); rc=$?
		else out=$($how "$cmd" "$who" 2>&1); rc=$?
		fi
		[ -f "$TOPO_TMP/cwd" ] && DOC_CWD=$(cat "$TOPO_TMP/cwd") && rm -f "$TOPO_TMP/cwd"
		printf '%s\n' "$out" | grep '^# stand-in\|^#   \|^# not run' | cut -c1-200 || true
		expect_eq "$DOC:$line: $cmd: exit 0" 0 "$rc"
		[ "$rc" = 0 ] || printf '%s\n' "$out" | tail -20 | sed 's/^/#   | /'
		for w in "${want[@]}"; do
			[ -n "$w" ] || continue
			if shown_in "$out" "$w"; then ok "$DOC:$line: shows \"$w\""
			else not_ok "$DOC:$line: shows \"$w\"" "$(printf '%s\n' "$out" | tail -25)"
			fi
		done
	done < <(doc_records "$DOC")
}
