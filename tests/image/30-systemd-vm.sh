#!/usr/bin/env bash
# The Debian package under a real systemd: the cached Debian 12 image boots
# under TCG with no network card; a NoCloud seed made here carries the
# .deb (make deb) and tests/image/systemd-inside.sh, which installs it,
# builds a gateway bridge, an uplink to an "internet" namespace and a guest
# namespace inside the VM, runs systemctl enable --now moat-gatewayd, checks
# egress and refusals, restart and stop (the policy stays), then reboots:
# the unit brings the policy back by itself.  Last, install, start, stop,
# purge: dpkg --purge stops the running guest, undoes gatewayd's network
# and removes moat's users and files, and the host's links, addresses,
# sysctls, users and files equal their snapshots from before.  Results
# come back as "VMTAP:" lines on the serial console.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
now_ms() { date +%s%3N; }
TMP=$(mktemp -d /tmp/moat-vm.XXXXXX)
QPID=
cleanup() { [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

if IMG=$(bash tests/image/build-image.sh); then ok "Debian 12 cloud image (cached)"
else not_ok "Debian 12 cloud image"; tap_done; exit 1; fi
t0=$(now_ms)
if [ -z "${MOAT_DEB:-}" ]; then
	make --no-print-directory deb >"$TMP/deb.log" 2>&1 || { not_ok "make deb" "$(tail -20 "$TMP/deb.log")"; tap_done; exit 1; }
	MOAT_DEB=$(ls build/deb/moat_*_amd64.deb | head -1)
fi
ok "package built ($MOAT_DEB, $(( $(now_ms) - t0 )) ms)"

mkdir -p "$TMP/seed"
cp "$MOAT_DEB" tests/image/systemd-inside.sh tests/harness/cc-dns.py "$TMP/seed/"
# The guest inside the VM: Debian's cloud kernel and a busybox initramfs
# that stays up and ticks on its serial console.
if tree=$(bash tests/harness/guest-kernel.sh build/guest-cache) &&
    cp "$(ls "$tree"/boot/vmlinuz-* | head -1)" "$TMP/seed/vmlinuz" &&
    bash tests/harness/tick-initramfs.sh "$TMP/seed/tick.cpio.gz"; then
	ok "guest kernel (cached) and tick initramfs for the guest in the VM"
else not_ok "guest kernel and tick initramfs"; tap_done; exit 1; fi
printf 'instance-id: moat-vmtest\nlocal-hostname: vmtest\n' >"$TMP/seed/meta-data"
cat >"$TMP/seed/user-data" <<'UD'
#cloud-config
runcmd:
  - [ sh, -c, "mkdir -p /root/vmtest /mnt/seed && mount -o ro LABEL=cidata /mnt/seed && cp /mnt/seed/* /root/vmtest/ && umount /mnt/seed && bash /root/vmtest/systemd-inside.sh phase1 >/dev/ttyS0 2>&1" ]
UD
genisoimage -quiet -output "$TMP/seed.iso" -volid cidata -joliet -rock "$TMP/seed" ||
	{ not_ok "seed image"; tap_done; exit 1; }
qemu-img create -q -f qcow2 -F qcow2 -b "$IMG" "$TMP/disk.qcow2" 4G
LOG=$TMP/console.log
t0=$(now_ms)
qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nodefaults -display none -vga none \
	-drive file="$TMP/disk.qcow2",if=virtio,format=qcow2 \
	-drive file="$TMP/seed.iso",if=virtio,format=raw,readonly=on \
	-nic none -serial file:"$LOG" >"$TMP/qemu.log" 2>&1 &
QPID=$!
for i in $(seq 3600); do
	grep -aq 'VMTAP-DONE' "$LOG" 2>/dev/null && break
	kill -0 "$QPID" 2>/dev/null || break
	sleep 1
done
echo "# VM test: $(( $(now_ms) - t0 )) ms from power-on to the second boot's checks (TCG)"
res=$(grep -a '^VMTAP: ' "$LOG" | sed 's/^VMTAP: //; s/\r$//')
[ -n "$res" ] || not_ok "the VM ran the checks" "$(tail -30 "$LOG")"
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "vm: ${line#ok - }" ;;
	"not ok - "*) not_ok "vm: ${line#not ok - }" ;;
	"#"*) echo "$line" ;;
	esac
done <<<"$res"
expect_match "the VM finished both boots" "VMTAP-DONE" "$(cat "$LOG")"
[ "$TAP_FAILED" -gt 0 ] && grep -a -v '^VMTAP' "$LOG" | tail -30 | sed 's/^/# console: /'
tap_done
