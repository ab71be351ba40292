#!/usr/bin/env bash
# deps.sh -- install every build and test dependency from Debian's
# packages.  Idempotent: does nothing when everything is present.
set -eu
PKGS="build-essential pkg-config clang libclang-rt-14-dev
 libnftnl-dev libmnl-dev libldns-dev ldnsutils libssl-dev libconfig-dev
 libcmocka-dev libseccomp-dev libbpf-dev nftables iproute2 iputils-ping dnsutils curl
 ncat socat iputils-arping conntrack conntrackd keepalived openssl python3 python3-fusepy procps strace
 qemu-system-x86 qemu-utils busybox-static cpio genisoimage xz-utils zstd
 lowdown man-db mmdebstrap extlinux e2fsprogs openssh-client debhelper lintian dpkg-dev
 libh2o-evloop-dev chromium chromium-driver python3-selenium
 dnsperf dnsmasq-base unbound tinyproxy squid mitmproxy haproxy nginx-light"
# libh2o-evloop-dev is the web console's HTTP server; chromium, its
# driver and python3-selenium drive the console's tests in a real browser.
# The last line is the benches' peers (bench/*.sh, run in smoke mode by
# tests/integration/09-bench-smoke-*.sh); dnsmasq-base is dnsmasq without
# its service; haproxy and nginx-light are the TLS-terminating injectors
# the proxy benches compare moat with.
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $PKGS 2>/dev/null |
	awk '$NF != "installed" {print $1}')
# dpkg-query prints nothing for packages it has never heard of.
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')
[ -z "${missing// /}" ] && { echo "deps: all present"; exit 0; }
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: $missing (run as root: sudo make deps)" >&2
	exit 1
fi
echo "deps: installing $missing"
export DEBIAN_FRONTEND=noninteractive
# Another apt (unattended-upgrades, a first-boot install) may hold the
# locks: wait for it rather than fail.  DPkg::Lock::Timeout covers the
# dpkg frontend lock; the retry covers the lists lock taken by update.
APT="apt-get -o DPkg::Lock::Timeout=600"
apt_retry() {
	local deadline=$(( $(date +%s) + 900 )) err
	while :; do
		err=$("$@" 2>&1 >/dev/null) && return 0
		case $err in
		*"Could not get lock"*|*"Unable to lock"*|*"is held by process"*)
			[ "$(date +%s)" -lt "$deadline" ] || break
			echo "deps: waiting for another apt to finish" >&2
			sleep 5; continue ;;
		esac
		break
	done
	printf '%s\n' "$err" >&2
	return 1
}
# A package's service is not started by its install (unbound's would
# fetch the root trust anchor from outside; squid and tinyproxy would
# listen on the host): the tests start their own, in namespaces.  An
# existing policy-rc.d is the machine's and stays as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt_retry $APT update -qq
apt_retry $APT install -y -qq --no-install-recommends $missing
# Nor at the next boot, when this run installed it (one the machine
# had before is its owner's).
for s in unbound squid tinyproxy haproxy nginx-light:nginx; do
	case " $missing " in *" ${s%%:*} "*) systemctl disable "${s#*:}" >/dev/null 2>&1 || true ;; esac
done
