#!/usr/bin/env bash
# The docs are tests: docs/provision.homelab.md, run as written.
#
# Every command of the page's code blocks runs, in the page's order, as
# root on the gateway: the topology's gateway namespace, inside a mount
# namespace of this test where /etc, /usr, /var and /srv are overlays
# (writes land in $TOPO_TMP, never on the host) and /run is a fresh
# tmpfs.  So `make install` really installs to /usr/local and /etc/moat
# (the shipped moat.conf, not a test config), gatewayd uses /var/lib/moat
# and /run/moat, and the page's paths and outputs hold unchanged.  The
# gateway's uplink is named eth0 and an upstream resolver answers on
# 9.9.9.9, as the shipped moat.conf says, so the file is used as
# installed: the page asks to edit nothing that differs here.
#
# Output the page shows (lines "#   " after a command) must appear in the
# command's output (whitespace aside; "... X": a line containing X); a
# command that fails fails the test.  What cannot run here is stood in
# for, each stand-in named in the TAP output with its reason: systemd
# (the installed unit's own commands run instead), the image download and
# the cloud image (the test's kernel-mode guest, same provision flags but
# the image's), `provision console` (interactive), and ssh into the guest
# (the guest runs containment-check with the page's arguments at boot).
# A command the page gains that this table does not know fails the test.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

DOC=docs/provision.homelab.md
for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale

# --- the machine: a gateway with eth0 towards the internet ---------------
topo_ns "$NS_GW" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" ||
	{ not_ok "namespaces"; tap_done; exit 1; }
in_ns "$NS_GW" sysctl -qw net.ipv4.conf.all.forwarding=0 net.ipv4.conf.default.forwarding=0
topo_link "$NS_GW" eth0 "$NS_INET" eth0
ip -n "$NS_GW" addr add 203.0.113.1/24 dev eth0
ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
ip -n "$NS_INET" addr add 9.9.9.9/32 dev eth0
ip -n "$NS_GW" route add default via $INET_ADDR
topo_link "$NS_GW" lan0 "$NS_LAN" eth0
ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
ip -n "$NS_LAN" route add default via 192.168.77.1
topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-moat-lan-host" || not_ok "LAN service starts"
# The shipped dns.upstream.
topo_bg "$NS_INET" dns-9999 python3 tests/harness/cc-dns.py 9.9.9.9
topo_wait_port "$NS_INET" 9.9.9.9 53 || not_ok "the upstream resolver 9.9.9.9 starts"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
	net.ipv4.icmp_msgs_burst=100000 2>/dev/null
guest_assets || { not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; }

# --- a mount namespace standing in for the machine's own disk ------------
OV=$TOPO_TMP/overlay
mkdir -p "$OV"
unshare -m --propagation private sleep 86400 &
HOLD=$!
TOPO_PIDS+=("$HOLD")
wait_for 10 test "$(readlink /proc/$HOLD/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"
inside() { nsenter -t "$HOLD" -m -- "$@"; }
inside sh -ec "
for d in etc usr var srv; do
	mkdir -p '$OV'/\$d.u '$OV'/\$d.w
	mount -t overlay overlay -o lowerdir=/\$d,upperdir='$OV'/\$d.u,workdir='$OV'/\$d.w /\$d
done
# A fresh machine: none of moat's files (whiteouts in the overlays only).
rm -rf /etc/moat /var/lib/moat /var/log/moat /usr/local/sbin/gatewayd /usr/local/bin/provision
mkdir -p '$OV'/run.host
mount --rbind /run '$OV'/run.host
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir /run/netns
mount --rbind '$OV'/run.host/netns /run/netns
" || { not_ok "the mount namespace (overlays on /etc /usr /var /srv, /run a tmpfs)"; tap_done; exit 1; }
ok "the machine's disk is overlays of this test's (the host's /etc, /usr, /var untouched)"

# doc_run CMD -- the command as written, as root on the gateway, in the
# page's current directory (a cd carries over to the next command).
CWD=$PWD
doc_run() {
	inside ip netns exec "$NS_GW" env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		bash -c 'cd "$1" || exit 1; eval "$2"; rc=$?; pwd >"$3"; exit $rc' \
		_ "$CWD" "$1" "$TOPO_TMP/cwd"
}

# --- stand-ins, each with its reason --------------------------------------
UNIT=/lib/systemd/system/moat-gatewayd.service
GWPID_FILE=$TOPO_TMP/gatewayd.pid
unit_exec() { inside sed -n "s/^$1=//p" "$UNIT"; }
standin_systemctl_start() {
	echo "# stand-in: no systemd here; the installed unit's own commands run"
	doc_run "install -d -m 0755 /run/moat && install -d -m 0711 /var/lib/moat &&
		install -d -m 0750 /var/log/moat" || return 1
	doc_run "$(unit_exec ExecStartPre)" || return 1
	doc_run "$(unit_exec ExecStart) </dev/null >>/var/log/moat/unit.log 2>&1 & echo \$! >$GWPID_FILE" || return 1
	doc_run "$(unit_exec ExecStartPost)" || return 1
	# What the guest's verdict rests on: dnsd and the intercepting proxy
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
	pid=$(cat "$GWPID_FILE" 2>/dev/null) || return 1
	kill -TERM "$pid" || return 1
	wait_for 30 sh -c "! kill -0 $pid 2>/dev/null"
}
IMAGE_NAME=debian-12-genericcloud-amd64.qcow2
standin_wget() {
	echo "# stand-in: no internet here, and no cloud-init guest: the test's kernel and"
	echo "#   initramfs (with containment-check) go where the image would, and a blank"
	echo "#   $IMAGE_NAME so the page's next command runs as written"
	doc_run "install -m 0644 '$GUEST_KERNEL' vmlinuz && install -m 0644 '$GUEST_INITRD' initrd.gz &&
		qemu-img create -q -f qcow2 $IMAGE_NAME 64M && chmod 0600 $IMAGE_NAME"
}
# The arguments the page gives containment-check in the guest (step 7).
CC_ARGS=$(python3 tests/harness/doc-blocks.py "$DOC" | python3 -c '
import json, sys
for l in sys.stdin:
    c = json.loads(l).get("cmd") or ""
    if c.startswith("ssh ") and "./containment-check" in c:
        print(c.split("./containment-check", 1)[1].strip())')
standin_create() {
	echo "# stand-in: kernel mode instead of the cloud image (no cloud-init, no ssh):"
	echo "#   --image/--ssh-key replaced, every other flag as written; the guest runs"
	echo "#   containment-check $CC_ARGS at boot"
	local cmd
	cmd=$(sed -E -e 's| --image [^ ]+| --kernel /srv/moat-images/vmlinuz --initrd /srv/moat-images/initrd.gz|' \
		-e 's| --ssh-key [^ ]+||' <<<"$1")
	doc_run "$cmd --append 'quiet moat.cc=$(tr ' ' ',' <<<"$CC_ARGS")'"
}
standin_scp() {
	echo "# stand-in: the guest's initramfs carries build/containment-check; it must be"
	echo "#   the one make install put in /usr/local/bin"
	inside cmp /usr/local/bin/containment-check "$PWD/build/containment-check"
}
standin_ssh() {
	echo "# stand-in: no ssh into the kernel-mode guest: its console log shows the run"
	wait_for 300 inside grep -q MOAT-VERDICT /var/lib/moat/guests/dev/console.log
	inside cat /var/lib/moat/guests/dev/console.log
	inside grep -E 'running containment-check|BREACH|FAILED|DNS over HTTPS|probes in|verdict' \
		/var/lib/moat/guests/dev/console.log | sed 's/^/#   guest: /'
	inside grep -q '^MOAT-VERDICT: contained' /var/lib/moat/guests/dev/console.log
}
skip_console() {
	echo "# not run: interactive (63-provision-console.sh drives provision console)"
}

# How each command of the page runs here: "run" (as written) or a stand-in.
declare -A HOW=(
	["make install"]=run
	["gatewayd -n -c /etc/moat/moat.conf"]=run
	["systemctl enable --now moat-gatewayd"]=standin_systemctl_start
	["gatewayd ctl status"]=run
	["install -d -m 0755 /srv/moat-images"]=run
	["cd /srv/moat-images"]=run
	["wget https://cloud.debian.org/images/cloud/bookworm/latest/$IMAGE_NAME"]=standin_wget
	["chmod 0644 $IMAGE_NAME"]=run
	["provision create dev --image /srv/moat-images/$IMAGE_NAME --ssh-key ~/.ssh/id_ed25519.pub --egress allowlist --allow github.com --allow '*.githubusercontent.com' --allow pypi.org --cpus 2 --memory 4G --disk 20G"]=standin_create
	["provision start dev"]=run
	["provision console dev            # watch cloud-init finish; Ctrl-] leaves"]=skip_console
	["provision list"]=run
	["scp /usr/local/bin/containment-check agent@10.77.0.2:"]=standin_scp
	["ssh agent@10.77.0.2 ./containment-check --expect allowlist --in-guest"]=standin_ssh
	["provision destroy dev            # stops it; nothing of the guest is left"]=run
	["systemctl stop moat-gatewayd"]=standin_systemctl_stop
	["gatewayd --teardown -c /etc/moat/moat.conf"]=run
)

# What varies from run to run in a shown output line (a regex for it):
# pids, and the guest's uid (the first of gateway.guest_uids that no
# process on this machine uses: other tests' guests may hold some).
# HOW_NOW: the stand-in's own difference (a kernel-mode guest).
varies() {
	sed -E -e 's/pid 4242/pid [0-9]+/' \
		-e 's/uid 2100000000/uid 21000[0-9]{5}/' \
		-e "$([ "$HOW_NOW" = standin_create ] && echo 's/^created dev: image mode,/created dev: kernel mode,/')" \
		-e 's/^started dev: (pid [^,]+), kvm,/started dev: \1, (kvm|tcg),/' \
		-e 's/^accelerator kvm: KVM works$/accelerator (kvm: KVM works|tcg: KVM not usable by uid [0-9]+ \\(guest dev\\): .*)/'
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

export_records() {
	python3 tests/harness/doc-blocks.py "$DOC" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if "section" in r:
        sys.stdout.write("S\x1e%s\0" % r["section"])
    else:
        sys.stdout.write("C\x1e%d\x1e%s\x1e%s\0" % (r["line"], r["cmd"] if r["cmd"] is not None else "",
                         "\x1f".join(r["expect"])))'
}

ncmds=0
while IFS= read -r -d '' rec; do
	IFS=$'\x1e' read -r kind a b c <<<"$rec"
	if [ "$kind" = S ]; then echo "# --- $a"; continue; fi
	line=$a cmd=$b
	IFS=$'\x1f' read -r -a want <<<"$c"
	if [ -z "$cmd" ]; then
		echo "# $DOC:$line: example output, not produced here"
		continue
	fi
	ncmds=$((ncmds + 1))
	how=${HOW[$cmd]:-}
	if [ -z "$how" ]; then
		not_ok "$DOC:$line: a command this test knows how to run" "$cmd"
		continue
	fi
	echo "# \$ $cmd"
	HOW_NOW=$how
	if [ "$how" = run ]; then out=$(doc_run "$cmd" 2>&1); rc=$?
	else out=$($how "$cmd" 2>&1); rc=$?
	fi
	[ -f "$TOPO_TMP/cwd" ] && CWD=$(cat "$TOPO_TMP/cwd") && rm -f "$TOPO_TMP/cwd"
	printf '%s\n' "$out" | grep '^# stand-in\|^#   \|^# not run' | cut -c1-200 || true
	expect_eq "$DOC:$line: $cmd: exit 0" 0 "$rc"
	[ "$rc" = 0 ] || printf '%s\n' "$out" | tail -20 | sed 's/^/#   | /'
	for w in "${want[@]}"; do
		[ -n "$w" ] || continue
		if shown_in "$out" "$w"; then ok "$DOC:$line: shows \"$w\""
		else not_ok "$DOC:$line: shows \"$w\"" "$(printf '%s\n' "$out" | tail -25)"
		fi
	done
done < <(export_records)
expect_eq "every command of the page ran or was stood in for" "${#HOW[@]}" "$ncmds"

# --- what the page promises beyond the shown output -----------------------
expect_eq "the config was used as installed: the shipped examples/moat.conf" "" \
	"$(inside diff "$PWD/examples/moat.conf" /etc/moat/moat.conf)"
expect_ok "... whose proxy intercepts (intercept = true, the default)" \
	inside grep -q 'intercept = true' /etc/moat/moat.conf
expect_eq "provision destroy left nothing of the guest" "" \
	"$(inside find /var/lib/moat/guests/ /etc/moat/sandboxes.d/ -mindepth 1 2>/dev/null)"
expect_fail "the bridge is gone after --teardown" ip -n "$NS_GW" link show moat0
expect_ok "the host's own /etc/moat was not touched by this test" \
	sh -c "! find /etc/moat /var/lib/moat /var/log/moat -newer '$OV' 2>/dev/null | grep -q ."
tap_done
