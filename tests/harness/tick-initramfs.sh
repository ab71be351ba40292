#!/usr/bin/env bash
# tick-initramfs.sh OUT.cpio.gz -- the smallest guest that stays up: a
# busybox-static initramfs whose /init prints "moat-tick-guest: up", then
# "MOAT-TICK N" every 2 s on the serial console, and answers every line it
# reads there with "GOT:LINE" ("FLOOD N": N bytes of output, then
# "FLOOD-DONE").  Used where a test needs a running guest
# that talks (provision console, guests surviving gatewayd restarts), not
# a containment verdict.
set -eu
out=${1:?usage: tick-initramfs.sh OUT.cpio.gz}
busybox=$(command -v busybox)
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	{ echo "tick-initramfs: busybox-static needed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc}
cp "$busybox" "$work/bin/busybox"
cat >"$work/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox --install -s /bin
stty -F /dev/ttyS0 raw -echo 2>/dev/null
echo "moat-tick-guest: up" >/dev/ttyS0
while read -r l; do
	case $l in
	FLOOD\ *) yes "MOAT-FLOOD 0123456789abcdef0123456789abcdef" | head -c "${l#FLOOD }"
		echo "FLOOD-DONE" ;;
	*) echo "GOT:$l" ;;
	esac
done </dev/ttyS0 >/dev/ttyS0 2>&1 &
i=0
while :; do i=$((i+1)); echo "MOAT-TICK $i" >/dev/ttyS0; sleep 2; done
INIT
chmod 0755 "$work/init"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
