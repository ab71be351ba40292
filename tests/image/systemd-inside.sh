#!/bin/bash
# systemd-inside.sh PHASE -- runs INSIDE the Debian test VM (30-systemd-vm.sh)
# as root; prints TAP-like lines prefixed "VMTAP: " on the serial console.
#   phase1 (first boot, from cloud-init): install the .deb, build the
#          namespaces, systemctl enable --now, check, restart, stop, reboot
#   phase2 (second boot, a unit ordered after moat-gatewayd and the
#          guest): the policy came back by itself, before the autostarted
#          guest; then purge_check (dpkg --purge gives the host back);
#          then power off.
# The guest (vg1) is a member's kernel-mode provision guest under nested
# TCG: Debian's cloud kernel and a busybox initramfs that ticks on its
# serial console (tests/harness/tick-initramfs.sh).
# Everything it sends stays inside this VM (it has no network card).
D=$(cd "$(dirname "$0")" && pwd)
say() { printf 'VMTAP: %s\r\n' "$*"; }
chk() {	# chk DESCRIPTION CMD... -- ok if CMD succeeds
	local d=$1; shift
	if "$@" >/tmp/chk.out 2>&1; then say "ok - $d"
	else say "not ok - $d"; sed 's/^/VMTAP: #   /' /tmp/chk.out | head -8; fi
}
nchk() { local d=$1; shift; if "$@" >/dev/null 2>&1; then say "not ok - $d"; else say "ok - $d"; fi; }
wait_for() { local i; for i in $(seq "$1"); do "${@:2}" >/dev/null 2>&1 && return 0; sleep 1; done; return 1; }
g() { ip netns exec g1 "$@"; }
ms() { date +%s%3N; }
VG=/srv/moat-vmtest
qpid() { cat /run/moat/guests/$1/qemu.pid 2>/dev/null; }
glog() { cat /var/lib/moat/guests/$1/console.log 2>/dev/null; }
ticks() { glog "$1" | grep -ac 'MOAT-TICK'; }
ticking() {	# ticking NAME -- new serial output within 300 s, QEMU alive throughout
	local n p i; n=$(ticks "$1"); p=$(qpid "$1")
	for i in $(seq 300); do
		[ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 1
		[ "$(ticks "$1")" -gt "$n" ] && return 0
		sleep 1
	done
	return 1
}
same_qemu() {	# same_qemu NAME PID -- the guest's QEMU is still that process
	[ "$(qpid "$1")" = "$2" ] && kill -0 "$2"
}
tables() { nft list tables | grep -q 'inet moat' && nft list tables | grep -q 'bridge moat'; }
http() { g curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" | grep -q '^200$'; }

links() {	# the gateway's own links, as an admin's network config would make
	ip link add moat0 type bridge
	ip addr add 10.77.0.1/24 dev moat0
	ip link set moat0 up
	ip netns add inet
	ip link add up0 type veth peer name eth0 netns inet
	ip addr add 203.0.113.1/24 dev up0; ip link set up0 up
}

topology() {
	links
	ip -n inet addr add 203.0.113.2/24 dev eth0; ip -n inet link set eth0 up
	ip -n inet addr add 203.0.113.3/24 dev eth0	# a host no name leads to
	ip -n inet link set lo up
	ip -n inet route add default via 203.0.113.1
	ip netns add g1
	ip link add mt-g1 type veth peer name eth0 netns g1
	ip link set mt-g1 master moat0; ip link set mt-g1 type bridge_slave isolated on
	ip link set mt-g1 up
	ip -n g1 link set eth0 address 52:54:00:00:00:0a
	ip -n g1 addr add 10.77.0.10/24 dev eth0; ip -n g1 link set eth0 up
	ip -n g1 link set lo up; ip -n g1 route add default via 10.77.0.1
	mkdir -p /etc/netns/g1 /srv/www
	echo "nameserver 10.77.0.1" >/etc/netns/g1/resolv.conf
	echo hello >/srv/www/index.html
	ip netns exec inet python3 "$D/cc-dns.py" 203.0.113.2 allowed.test=203.0.113.2 \
	    other.test=203.0.113.2 --lifetime 1200 >/dev/null 2>&1 &
	ip netns exec inet python3 -m http.server -b 203.0.113.2 -d /srv/www 80 >/dev/null 2>&1 &
	ip netns exec inet python3 -m http.server -b 203.0.113.3 -d /srv/www 80 >/dev/null 2>&1 &
	sysctl -qw net.ipv4.ip_forward=1
}

conf() {
	cat >/etc/moat/moat.conf <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.2" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "g1"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-g1";
    egress = "allowlist"; allow = [ "allowed.test" ]; }
);
CONF
}

guest_checks() {	# guest_checks WHEN
	chk "$1: g1 resolves an allowed name through the gateway" \
	    sh -c 'ip netns exec g1 dig +short @10.77.0.1 allowed.test | grep -qx 203.0.113.2'
	chk "$1: g1 reaches the allowed name (egress)" http http://allowed.test/
	nchk "$1: g1 cannot reach a name not in its allowlist" http http://other.test/
	nchk "$1: g1 cannot reach the internet by address" http http://203.0.113.3/
	nchk "$1: g1 cannot reach the gateway's ssh" g timeout 5 bash -c 'exec 3<>/dev/tcp/10.77.0.1/22'
}

# A member's guest, created and started through gatewayd (so under its
# unit's hardening), run by systemd as moat-guest@vg1.service.
guest_up() {
	mkdir -p $VG && cp "$D/vmlinuz" "$D/tick.cpio.gz" $VG/ && chmod 0644 $VG/*
	useradd -m -G moat -s /bin/bash alice
	chk "alice (group moat) creates a kernel-mode guest through gatewayd" \
	    runuser -u alice -- provision create vg1 --kernel $VG/vmlinuz \
	    --initrd $VG/tick.cpio.gz --egress none --accel tcg --memory 192
	chk "create: autostart is the default" test -e /var/lib/moat/guests/vg1/autostart
	local t0; t0=$(ms)
	chk "alice starts it through gatewayd" runuser -u alice -- provision start vg1
	say "# provision start (systemctl start moat-guest@vg1, QEMU up): $(( $(ms) - t0 )) ms"
	chk "moat-guest@vg1.service is active and enabled (autostart)" \
	    sh -c 'systemctl is-active moat-guest@vg1 && systemctl is-enabled moat-guest@vg1'
	chk "vg1's QEMU is in its own unit's cgroup, not gatewayd's" \
	    sh -c 'c=$(cat /proc/$(cat /run/moat/guests/vg1/qemu.pid)/cgroup); echo "$c"; echo "$c" | grep -q "/moat-guest@vg1.service$" && ! echo "$c" | grep -q moat-gatewayd'
	# Its own uid, the one provision recorded for vg1: not root, not a shared user.
	chk "vg1's QEMU runs as vg1's own uid" sh -c 'u=$(sed -n "s/^uid *= *\([0-9]*\);.*/\1/p" /var/lib/moat/guests/vg1/guest.conf); q=$(ps -o uid= -p $(cat /run/moat/guests/vg1/qemu.pid) | tr -d " "); echo "guest.conf uid=$u qemu uid=$q"; [ -n "$u" ] && [ "$u" != 0 ] && [ "$q" = "$u" ] && [ "$q" != "$(id -u moat-qemu)" ]'
	if systemctl is-active -q moat-guest@vg1 &&
	    wait_for 1200 sh -c 'grep -aq MOAT-TICK /var/lib/moat/guests/vg1/console.log'; then
		say "ok - the nested TCG guest boots and ticks on its serial console"
		say "# nested TCG: provision start to the guest's first tick: $(( $(ms) - t0 )) ms"
	else
		say "not ok - the nested TCG guest boots and ticks on its serial console"
		glog vg1 | tail -5 | sed 's/^/VMTAP: #   /'
	fi
	P1=$(qpid vg1)
}

# gatewayd cannot start (simulated by a drop-in whose ExecStartPre fails):
# a guest created meanwhile, whose sandbox is not in the kernel's policy
# yet, must not start.  provision itself is fine (its config is valid): it
# is the guest's unit that refuses.
fail_closed() {
	chk "root creates vg2 --no-autostart while gatewayd is stopped" \
	    provision create vg2 --kernel $VG/vmlinuz --initrd $VG/tick.cpio.gz \
	    --egress none --accel tcg --memory 192 --no-autostart
	mkdir -p /etc/systemd/system/moat-gatewayd.service.d
	printf '[Service]\nExecStartPre=/bin/false\n' \
	    >/etc/systemd/system/moat-gatewayd.service.d/vmtest-broken.conf
	systemctl daemon-reload
	nchk "gatewayd cannot start: provision start vg2 fails" provision start vg2
	nchk "fail closed: moat-gatewayd is not active" systemctl is-active moat-gatewayd
	chk "fail closed: no QEMU for vg2, its unit is not active" \
	    sh -c '! test -s /run/moat/guests/vg2/qemu.pid && ! systemctl is-active moat-guest@vg2'
	nchk "fail closed: vg2's unit is not enabled" systemctl is-enabled moat-guest@vg2
	rm -rf /etc/systemd/system/moat-gatewayd.service.d
	systemctl daemon-reload
	systemctl reset-failed moat-gatewayd moat-guest@vg2 2>/dev/null
	chk "vg1 kept running meanwhile" same_qemu vg1 "$P1"
}

# What the package may change on the host and a purge must give back.
host_state() {	# the accounts and folders (before the install)
	echo "users: $(getent passwd | cut -d: -f1 | grep '^moat' | tr '\n' ' ')"
	echo "groups: $(getent group | cut -d: -f1 | grep '^moat' | tr '\n' ' ')"
	for p in /etc/moat /var/lib/moat /var/log/moat /run/moat /usr/sbin/gatewayd \
	    /usr/lib/moat /lib/systemd/system/moat-gatewayd.service \
	    /etc/systemd/system/multi-user.target.wants/moat-gatewayd.service; do
		[ -e "$p" ] || [ -L "$p" ] && echo "present: $p"
	done
	echo "dpkg: $(dpkg-query -W -f='${Status}' moat 2>/dev/null)"
}
net_state() {	# the links, addresses, sysctls and tables gatewayd touches
	echo "links: $(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' ')"
	ip -br addr | awk '{ $2 = ""; print "addr:", $0 }' | sort
	for k in net.ipv4.conf.all.forwarding net.ipv4.conf.up0.forwarding \
	    net.ipv4.icmp_ratelimit net.ipv4.icmp_msgs_per_sec \
	    net.ipv4.icmp_msgs_burst net.ipv6.icmp.ratelimit; do
		echo "$k: $(sysctl -n $k 2>&1)"
	done
	echo "nft: $(nft list tables | tr '\n' ' ')"
}

phase1() {
	# The test image was built without man pages (mmdebstrap's dpkg path
	# filter stays in the image); a user's system has none.
	rm -f /etc/dpkg/dpkg.cfg.d/99mmdebstrap
	host_state >"$D/before-install"
	chk "the .deb installs with dpkg -i (no network)" dpkg -i "$D"/moat_*.deb
	chk "postinst created group moat and the users" sh -c \
	    'getent group moat && id moat-dns && id moat-proxy && id moat-log && id moat-qemu'
	chk "/etc/moat/moat.conf is a conffile" sh -c 'dpkg-query -W -f="\${Conffiles}" moat | grep -q /etc/moat/moat.conf'
	chk "man pages installed (gatewayd(8), moat.conf(5))" sh -c \
	    'zcat /usr/share/man/man8/gatewayd.8.gz | grep -q "^.TH \"GATEWAYD\" \"8\"" && test -f /usr/share/man/man5/moat.conf.5.gz'
	chk "unit installed and enabled by the package" systemctl is-enabled moat-gatewayd
	nchk "not started before it is configured" systemctl is-active moat-gatewayd
	nchk "moat-sync-box is not enabled by the package (only a KVM host with a box)" \
	    systemctl is-enabled moat-sync-box
	# (the image has no man-db: the pages the names point at are looked
	# for where the package puts them)
	chk "the units' Documentation= are man pages the package ships" sh -c \
	    'd=$(systemctl show -p Documentation --value moat-gatewayd); echo "$d"; case "$d" in *"man:gatewayd(8)"*"man:moat.conf(5)"*) ;; *) exit 1 ;; esac && test -e /usr/share/man/man8/gatewayd.8.gz && test -e /usr/share/man/man5/moat.conf.5.gz'
	topology; conf
	# Control: before any policy, the address-only host is reachable, so
	# the refusals below are the policy's doing.
	chk "control: without the policy g1 reaches 203.0.113.3" wait_for 30 http http://203.0.113.3/
	chk "systemctl enable --now moat-gatewayd" systemctl enable --now moat-gatewayd
	chk "moat-gatewayd is active" wait_for 60 sh -c 'systemctl is-active moat-gatewayd && ss -lun | grep -q 10.77.0.1:53'
	chk "the policy tables are in the kernel" tables
	guest_checks "under systemd"
	chk "secret set works under the unit (ReadWritePaths)" sh -c \
	    'echo vm-secret-value | gatewayd ctl secret set vmkey --host allowed.test && test -s /etc/moat/secrets.d/vmkey.conf'
	chk "the unit's hardening is in force (MemoryDenyWriteExecute, ProtectSystem)" sh -c \
	    'systemctl show -p MemoryDenyWriteExecute -p ProtectSystem moat-gatewayd >/tmp/hd; cat /tmp/hd; grep -qx MemoryDenyWriteExecute=yes /tmp/hd && grep -qx ProtectSystem=strict /tmp/hd'
	guest_up
	chk "systemctl restart moat-gatewayd" systemctl restart moat-gatewayd
	chk "policy kept across the restart" tables
	chk "restart: vg1's QEMU is the same process, still running" same_qemu vg1 "$P1"
	chk "restart: vg1 still talks on its serial console" ticking vg1
	chk "active again after the restart" wait_for 60 sh -c 'systemctl is-active moat-gatewayd && ss -lun | grep -q 10.77.0.1:53'
	guest_checks "after restart"
	chk "systemctl stop moat-gatewayd" systemctl stop moat-gatewayd
	chk "policy stays after stop (fail closed)" tables
	chk "stop: vg1's QEMU is the same process, still running" same_qemu vg1 "$P1"
	chk "stop: vg1 still talks on its serial console" ticking vg1
	chk "stop: moat-guest@vg1 is still active" systemctl is-active moat-guest@vg1
	nchk "stopped: g1 still cannot reach the internet by address" http http://203.0.113.3/
	nchk "stopped: g1 still cannot reach the gateway's ssh" g timeout 5 bash -c 'exec 3<>/dev/tcp/10.77.0.1/22'
	fail_closed
	cat >/etc/systemd/system/moat-vmtest-links.service <<UNIT
[Unit]
Before=moat-gatewayd.service
[Service]
Type=oneshot
ExecStart=/bin/bash $D/systemd-inside.sh links
[Install]
WantedBy=multi-user.target
UNIT
	systemctl enable moat-vmtest-links.service >/dev/null 2>&1
	cat >/etc/systemd/system/moat-vmtest.service <<UNIT
[Unit]
After=moat-gatewayd.service moat-guest@vg1.service
[Service]
Type=oneshot
ExecStart=/bin/sh -c '/bin/bash $D/systemd-inside.sh phase2 >/dev/ttyS0 2>&1'
[Install]
WantedBy=multi-user.target
UNIT
	systemctl enable moat-vmtest.service >/dev/null 2>&1
	say "# rebooting"
	systemctl reboot
}

same_as() {	# same_as FILE FN -- FN prints what $D/FILE recorded before
	"$2" >"/tmp/now-$1"; diff "$D/$1" "/tmp/now-$1"
}

# Install, start, stop, purge (issue 41): the host as it was.  "Before"
# for the network is this host with gatewayd stopped and its changes
# undone, without the admin's own bridge of links() (so gatewayd makes
# moat0 itself), with the uplink's forwarding off and the kernel's ICMP
# rate limit; for accounts and folders, before phase1's dpkg -i.
purge_check() {
	systemctl stop moat-gatewayd
	gatewayd --teardown -c /etc/moat/moat.conf >/dev/null 2>&1
	ip link del moat0
	nft-rules flush >/dev/null 2>&1
	sysctl -qw net.ipv4.conf.up0.forwarding=0 net.ipv4.icmp_ratelimit=1000
	net_state >"$D/before-net"
	chk "purge: gatewayd starts again" systemctl start moat-gatewayd
	chk "purge: ... and made moat0, its address and forwarding on up0" sh -c \
	    'ip -br addr show moat0 | grep -q 10.77.0.1/24 && [ "$(sysctl -n net.ipv4.conf.up0.forwarding)" = 1 ] && [ "$(sysctl -n net.ipv4.icmp_ratelimit)" = 0 ]'
	chk "purge: root starts vg1 (it runs during the purge)" provision start vg1
	chk "purge: systemctl stop moat-gatewayd (vg1 keeps running)" sh -c \
	    'systemctl stop moat-gatewayd && systemctl is-active moat-guest@vg1'
	local t0; t0=$(ms)
	chk "dpkg --purge moat" sh -c 'dpkg --purge moat >/tmp/purge.out 2>&1; rc=$?; cat /tmp/purge.out; exit $rc'
	say "# dpkg --purge moat: $(( $(ms) - t0 )) ms"
	sed 's/^/VMTAP: #   purge: /' /tmp/purge.out | head -40
	chk "purge: says what it removed (bridge, policy, logs, users, group)" sh -c \
	    'grep -q "teardown: deleted bridge moat0" /tmp/purge.out && grep -q "deleted the nftables policy" /tmp/purge.out && grep -q "removed /var/log/moat" /tmp/purge.out && grep -q "removed user moat-dns" /tmp/purge.out && grep -q "removed group moat" /tmp/purge.out'
	nchk "purge: vg1 was stopped" systemctl is-active moat-guest@vg1
	nchk "purge: no QEMU is left" pgrep -f qemu-system
	chk "purge: links, addresses, forwarding, ICMP sysctls and nft as before" same_as before-net net_state
	chk "purge: users, group and folders as before the install" same_as before-install host_state
}

phase2() {
	say "# second boot"
	# This unit is ordered After= moat-gatewayd: the policy must already
	# be there, with no waiting (a guest started here would be covered).
	chk "after reboot: the policy is in the kernel before units after gatewayd" tables
	chk "after reboot: moat-gatewayd started by itself" systemctl is-active moat-gatewayd
	chk "after reboot: g1's sandbox is in the policy" \
	    sh -c 'nft list ruleset | grep -q 10.77.0.10'
	chk "after reboot: moat-guest@vg1 came back by itself (autostart)" systemctl is-active moat-guest@vg1
	chk "after reboot: vg1's sandbox is in the policy" sh -c \
	    'a=$(sed -n "s/^address = \"\(.*\)\";/\1/p" /etc/moat/sandboxes.d/vg1.conf); [ -n "$a" ] && nft list ruleset | grep -qF "$a"'
	# gatewayd is active only once its policy is in the kernel (its
	# ExecStartPost); the guest's unit left "inactive" after that.
	chk "after reboot: the policy was in the kernel before vg1's unit started" sh -c \
	    'gw=$(systemctl show -p ActiveEnterTimestampMonotonic --value moat-gatewayd); g=$(systemctl show -p InactiveExitTimestampMonotonic --value moat-guest@vg1); echo "gatewayd active at $gw, vg1 started at $g"; [ "$gw" -gt 0 ] && [ "$gw" -le "$g" ]'
	say "# after reboot: gatewayd active $(systemctl show -p ActiveEnterTimestampMonotonic --value moat-gatewayd) us, vg1 started $(systemctl show -p InactiveExitTimestampMonotonic --value moat-guest@vg1) us after boot"
	local t0; t0=$(ms)
	if systemctl is-active -q moat-guest@vg1 && wait_for 1200 sh -c '[ $(grep -ac "moat-tick-guest: up" /var/lib/moat/guests/vg1/console.log) -ge 2 ]'; then
		say "ok - after reboot: vg1 boots again (new serial output)"
		say "# after reboot: vg1 up on its console $(( $(ms) - t0 )) ms after this check began"
	else say "not ok - after reboot: vg1 boots again (new serial output)"; fi
	nchk "after reboot: vg2 (--no-autostart, never started) stays down" systemctl is-active moat-guest@vg2
	chk "alice stops vg1 through gatewayd" runuser -u alice -- provision stop --timeout 5 vg1
	nchk "stopped: moat-guest@vg1 is not active" systemctl is-active moat-guest@vg1
	nchk "stopped: moat-guest@vg1 is disabled (will not come back at boot)" systemctl is-enabled moat-guest@vg1
	purge_check
	say "VMTAP-DONE"
	systemctl poweroff
}
"$1"
