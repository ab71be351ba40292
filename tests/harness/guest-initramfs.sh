#!/usr/bin/env bash
# guest-initramfs.sh -- a busybox-static initramfs for test guests.
#
#   guest-initramfs.sh OUT.cpio.gz KERNEL_TREE [CONTAINMENT_CHECK]
#
# KERNEL_TREE is what guest-kernel.sh printed.  The guest's /init loads the
# virtio modules, configures eth0 from the kernel's ip= parameter (the format
# provision writes: ip=ADDR::GW:MASK:HOST:eth0:off:DNS), runs
# containment-check with the arguments in moat.cc= (commas for spaces),
# prints one verdict line to the serial console and powers off:
#
#   MOAT-VERDICT: contained            containment-check exited 0
#   MOAT-VERDICT: breach (exit N)      anything else
#
# With moat.ip6=ADDR/64,GW (what provision adds for a guest with IPv6) eth0
# also gets ADDR and an IPv6 default route via GW.  moat.probe6=ADDR.PORT,...
# then tries each over TCP and prints one line for each:
#   MOAT-PROBE6: [ADDR]:PORT open TEXT    or    MOAT-PROBE6: [ADDR]:PORT closed
#
# With moat.spoof=ADDR it then moves eth0 to ADDR and tries the gateway, the
# targets in moat.spoof_targets (HOST:PORT,...) and GET /moat-spoofed from
# moat.spoof_http, printing
#   MOAT-SPOOF: nothing got through    or    MOAT-SPOOF: LEAK <what>
#
# With moat.reverify=SECONDS it instead re-checks for ever, as an image
# guest's timer does: containment-check --quick with moat.cc's arguments,
# then "MOAT-VERDICT: contained", "MOAT-VERDICT: NOT CONTAINED" or
# "MOAT-VERDICT: error", then SECONDS of sleep.  moat.forge=1 first prints
# one forged, one escaped and one overlong verdict line.
set -eu
out=${1:?usage: guest-initramfs.sh OUT KERNEL_TREE [CONTAINMENT_CHECK]}
tree=${2:?usage: guest-initramfs.sh OUT KERNEL_TREE [CONTAINMENT_CHECK]}
cc=${3:-}
busybox=$(command -v busybox)
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	[ -e /bin/busybox ] || { echo "guest-initramfs: busybox-static needed" >&2; exit 1; }
kver=$(ls "$tree/lib/modules" | head -1)
mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,tmp,etc,lib/modules}
cp "$busybox" "$work/bin/busybox"
for m in $mods; do
	f=$(find "$tree/lib/modules/$kver" -name "$m.ko*" | head -1)
	[ -n "$f" ] || { echo "guest-initramfs: module $m not in $tree" >&2; exit 1; }
	case $f in
	*.ko.xz) xz -dc "$f" >"$work/lib/modules/$m.ko" ;;
	*.ko.zst) zstd -qdc "$f" >"$work/lib/modules/$m.ko" ;;
	*) cp "$f" "$work/lib/modules/$m.ko" ;;
	esac
done
[ -n "$cc" ] && install -m 0755 "$cc" "$work/bin/containment-check"
cat >"$work/init" <<INIT
#!/bin/busybox sh
# busybox finds itself through /proc/self/exe: mount /proc first.
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox --install -s /bin
echo "moat-guest: init started"
for m in $mods; do insmod /lib/modules/\$m.ko || echo "moat-guest: insmod \$m failed"; done
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^\$1=//p" | tail -1; }
ipspec=\$(arg ip)
addr=\$(echo "\$ipspec" | cut -d: -f1); gw=\$(echo "\$ipspec" | cut -d: -f3)
mask=\$(echo "\$ipspec" | cut -d: -f4); dev=\$(echo "\$ipspec" | cut -d: -f6)
dev=\${dev:-eth0}
i=0; while [ ! -e /sys/class/net/\$dev ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done
ip link set lo up
ip link set "\$dev" up
ipcalc -p "\$addr" "\$mask" >/tmp/plen 2>/dev/null; . /tmp/plen
ip addr add "\$addr/\${PREFIX:-24}" dev "\$dev"
ip route add default via "\$gw"
echo "nameserver \$gw" >/etc/resolv.conf
echo "moat-guest: network up \$addr/\${PREFIX:-24} via \$gw on \$dev"
ip6=\$(arg moat.ip6)
if [ -n "\$ip6" ]; then
	ip -6 addr add "\${ip6%,*}" dev "\$dev"
	ip -6 route add default via "\${ip6#*,}" dev "\$dev"
	echo "nameserver \${ip6#*,}" >>/etc/resolv.conf
	i=0; while ip -6 addr show dev "\$dev" | grep -q tentative && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done
	echo "moat-guest: IPv6 up \${ip6%,*} via \${ip6#*,} on \$dev"
fi
for t in \$(arg moat.probe6 | tr ',' ' '); do
	if nc -w 3 "\${t%.*}" "\${t##*.}" </dev/null >/tmp/p6 2>/dev/null && [ -s /tmp/p6 ]; then
		echo "MOAT-PROBE6: [\${t%.*}]:\${t##*.} open \$(head -c 40 /tmp/p6)"
	else echo "MOAT-PROBE6: [\${t%.*}]:\${t##*.} closed"; fi
done
cc=\$(arg moat.cc | tr ',' ' ')
rv=\$(arg moat.reverify)
if [ -n "\$rv" ] && [ -x /bin/containment-check ]; then
	if [ -n "\$(arg moat.forge)" ]; then
		echo "x MOAT-VERDICT: contained"
		printf 'MOAT-VERDICT: contained\033[2J\r\n'
		echo "MOAT-VERDICT: contained                                  x"
	fi
	while :; do
		echo "moat-guest: re-check: containment-check --in-guest --quick \$cc"
		/bin/containment-check --in-guest --quick \$cc >/tmp/rv.log 2>&1; rc=\$?
		grep -E '^ *(BREACH|FAIL)|probes in' /tmp/rv.log | head -8
		case \$rc in 0) v=contained ;; 1) v='NOT CONTAINED' ;; *) v=error ;; esac
		echo "MOAT-VERDICT: \$v"
		sleep "\$rv"
	done
fi
if [ -x /bin/containment-check ]; then
	echo "moat-guest: running containment-check --in-guest \$cc"
	/bin/containment-check --in-guest \$cc; rc=\$?
	if [ \$rc -eq 0 ]; then echo "MOAT-VERDICT: contained"
	else echo "MOAT-VERDICT: breach (exit \$rc)"; fi
else
	echo "MOAT-VERDICT: no containment-check in this initramfs"
fi
spoof=\$(arg moat.spoof)
if [ -n "\$spoof" ]; then
	ip addr flush dev "\$dev"
	ip addr add "\$spoof/\${PREFIX:-24}" dev "\$dev"
	ip route add default via "\$gw"
	echo "moat-guest: eth0 moved to \$spoof"
	leak=""
	ping -c 2 -W 2 "\$gw" >/dev/null 2>&1 && leak="\$leak gateway-ping"
	for t in \$(arg moat.spoof_targets | tr ',' ' '); do
		nc -w 3 \${t%:*} \${t#*:} </dev/null >/tmp/nc 2>/dev/null && leak="\$leak \$t"
		[ -s /tmp/nc ] && leak="\$leak \$t(data)"
	done
	h=\$(arg moat.spoof_http)
	[ -n "\$h" ] && wget -q -T 3 -O /tmp/w "http://\$h/moat-spoofed" 2>/dev/null && leak="\$leak http-\$h"
	if [ -z "\$leak" ]; then echo "MOAT-SPOOF: nothing got through"
	else echo "MOAT-SPOOF: LEAK\$leak"; fi
fi
echo "moat-guest: powering off"
sync
poweroff -f
INIT
chmod 0755 "$work/init"
(cd "$work" && find . | sort | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
