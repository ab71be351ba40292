#!/usr/bin/env bash
# guest-kernel.sh -- fetch Debian's cloud kernel once and cache it.
#
#   guest-kernel.sh CACHE_DIR   prints the unpacked tree's directory
#
# CACHE_DIR/root holds the unpacked linux-image-*-cloud-amd64 (boot/vmlinuz-*,
# lib/modules/*).  A rerun with the cache filled downloads nothing.  Without
# apt access this fails loudly: the end-to-end tests must not silently skip.
set -eu
cache=${1:?usage: guest-kernel.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
# Tests run side by side: the first one downloads, the others wait for it.
exec 9>"$cache/.lock"
flock 9
if ! ls "$cache"/root/boot/vmlinuz-*-cloud-amd64 >/dev/null 2>&1; then
	cd "$cache"
	# The meta package names the current versioned image package.
	apt-get download linux-image-cloud-amd64 >/dev/null 2>&1 ||
		{ echo "guest-kernel: apt-get download linux-image-cloud-amd64 failed (no apt access?)" >&2; exit 1; }
	meta=$(ls -t linux-image-cloud-amd64_*.deb | head -1)
	dep=$(dpkg-deb -f "$meta" Depends | grep -o 'linux-image-[0-9][^ ,]*-cloud-amd64' | head -1)
	[ -n "$dep" ] || { echo "guest-kernel: cannot find the image package in $meta" >&2; exit 1; }
	ls "$dep"_*.deb >/dev/null 2>&1 || apt-get download "$dep" >/dev/null 2>&1 ||
		{ echo "guest-kernel: apt-get download $dep failed" >&2; exit 1; }
	rm -rf root.tmp
	dpkg -x "$(ls "$dep"_*.deb | head -1)" root.tmp
	rm -rf root && mv root.tmp root
fi
echo "$cache/root"
