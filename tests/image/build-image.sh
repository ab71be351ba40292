#!/usr/bin/env bash
# build-image.sh -- a small Debian 12 cloud image, built locally, cached.
#
#   build-image.sh [CACHE_DIR]     prints the path of the qcow2
#
# What a user downloads as Debian's "generic" cloud image, minus the size:
# systemd, cloud-init (NoCloud), openssh-server, sudo, curl,
# ca-certificates, the cloud kernel and a bootloader (extlinux), built with
# mmdebstrap from Debian's own packages.  The image is cached under
# CACHE_DIR (default /var/cache/moat-test, outside any clone) in a file
# named after a hash of its inputs (this script), so only the first run
# pays; a rerun with the cache filled downloads nothing.
#
# The disk has no partition table: one ext4 file system from sector 0,
# with extlinux's boot sector in the 1 KiB that ext4 leaves free.  Root is
# by UUID, console on ttyS0 (where provision records the serial log).
set -euo pipefail
cache=${1:-/var/cache/moat-test}
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
SIZE=2G
# The test extras (nftables, iproute2, dig, nc) and the moat package's
# runtime libraries let the systemd test install the .deb without apt;
# qemu-system-x86 and qemu-utils run a small provision guest inside that
# test VM.
PKGS="systemd,systemd-sysv,udev,dbus,cloud-init,openssh-server,sudo,curl,\
ca-certificates,linux-image-cloud-amd64,initramfs-tools,ifupdown,resolvconf,\
iproute2,netbase,procps,kmod,nftables,bind9-dnsutils,netcat-openbsd,\
libconfig9,libnftnl11,libmnl0,libldns3,libssl3,libseccomp2,libh2o-evloop0.13,\
libbpf1,python3,\
qemu-system-x86,qemu-utils"

for t in mmdebstrap mkfs.ext4 extlinux qemu-img; do
	command -v $t >/dev/null || { echo "build-image: $t is missing (make deps)" >&2; exit 1; }
done
key=$( (cat "$0"; echo "$SUITE $MIRROR $SIZE $PKGS") | sha256sum | cut -c1-16)
img=$cache/debian12-cloud-$key.qcow2
[ -s "$img" ] && { echo "$img"; exit 0; }
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
mnt=$work/mnt
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	[ -n "${loop:-}" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
loop=

echo "build-image: mmdebstrap $SUITE (first run only; a few minutes)" >&2
mmdebstrap --variant=minbase --include="$PKGS" \
	--aptopt='Acquire::Retries "3"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	$SUITE "$work/root" \
	"deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
	"deb $MIRROR-security $SUITE-security main" >&2

root=$work/root
uuid=$(cat /proc/sys/kernel/random/uuid)
kver=$(ls "$root"/boot | sed -n 's/^vmlinuz-//p' | sort -V | tail -1)
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$root/etc/fstab"
echo "localhost" >"$root/etc/hostname"
: >"$root/etc/machine-id"	# a fresh id per instance, as in Debian's images
# Only NoCloud: a generic image probes cloud metadata services, which here
# would only time out (there is no cloud, and the policy refuses them).
cat >"$root/etc/cloud/cloud.cfg.d/90-moat-test-image.cfg" <<CFG
datasource_list: [ NoCloud, None ]
CFG
# ifupdown reads the file cloud-init renders; resolvconf turns its
# dns-nameservers into /etc/resolv.conf.
printf 'auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n' \
	>"$root/etc/network/interfaces"
# Timers that would compete with the test for the CPU under TCG.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
	fstrim.timer man-db.timer; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
rm -f "$root"/etc/ssh/ssh_host_*	# per instance, made at first boot
mkdir -p "$root/boot/extlinux"
cat >"$root/boot/extlinux/extlinux.conf" <<CFG
DEFAULT debian
PROMPT 0
TIMEOUT 0
LABEL debian
  LINUX /boot/vmlinuz-$kver
  INITRD /boot/initrd.img-$kver
  APPEND root=UUID=$uuid ro console=tty0 console=ttyS0,115200 net.ifnames=0 biosdevname=0
CFG

raw=$work/disk.raw
truncate -s $SIZE "$raw"
# No 64bit/metadata_csum_seed: extlinux reads ext4 without them.
mkfs.ext4 -q -F -L debian-root -U "$uuid" -O ^64bit,^metadata_csum_seed \
	-d "$root" "$raw"
loop=$(losetup --find --show "$raw")
mkdir -p "$mnt"
mount "$loop" "$mnt"
extlinux --install "$mnt/boot/extlinux" >&2
umount "$mnt"
losetup -d "$loop"; loop=
qemu-img convert -c -O qcow2 "$raw" "$work/out.qcow2"
mv "$work/out.qcow2" "$img"
echo "$img"
