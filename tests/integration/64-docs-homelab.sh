#!/usr/bin/env bash
# The docs are tests: docs/provision.homelab.md, run as written.
#
# Every command of the page's code blocks runs, in the page's order, as
# root on the gateway: the topology's gateway namespace, inside a mount
# namespace of this test where /etc, /usr, /var, /srv and /home are
# overlays (writes land in $TOPO_TMP, never on the host) and /run is a
# fresh tmpfs.  The machine starts without moat: none of its files, users
# or group, and dpkg does not know the package.  So the page's `apt install
# ./moat_*.deb` really installs the Debian package (dpkg's database, the
# maintainer scripts' users and enabled unit: all in the overlays; with no
# /run/systemd and no D-Bus socket in the fresh /run they cannot reach a
# systemd), gatewayd uses /var/lib/moat and /run/moat, and the page's
# paths and outputs hold unchanged.  The package is $MOAT_DEB when given
# (.ci/run builds it once, for this test and the VM tests), else this
# test builds it with `make deb` into its own folder.  The gateway's
# uplink is named eth0 and an upstream resolver answers on 9.9.9.9, as the
# shipped moat.conf says, so the file is used as the package installed it:
# the page asks to edit nothing that differs here.
#
# Output the page shows (lines "#   " after a command) must appear in the
# command's output (whitespace aside; "... X": a line containing X); a
# command that fails fails the test.  What cannot run here is stood in
# for, each stand-in named in the TAP output with its reason: systemd
# (the installed unit's own commands run instead), the image download and
# the cloud image (the test's kernel-mode guest, same provision flags but
# the image's, whose initramfs carries the package's containment-check),
# `provision console` (interactive), ssh into the guest (the guest runs
# containment-check with the page's arguments at boot), and the
# workstation's ssh through the box (not run).  A command
# the page gains that this table does not know fails the test.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh
. tests/harness/doc-run.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale

# --- the package -------------------------------------------------------
# The host must not have it: dpkg's database in the overlay is the host's.
if [ "$(dpkg-query -W -f='${Status}' moat 2>/dev/null)" = "install ok installed" ]; then
	not_ok "this machine has no package moat installed" \
		"the test installs it into its own overlays, starting from a machine without it"
	tap_done; exit 1
fi
t0=$EPOCHSECONDS how="given as \$MOAT_DEB"
if [ -z "${MOAT_DEB:-}" ]; then
	# make check ran the unit tests already (nocheck); lintian still runs.
	DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" make --no-print-directory deb \
		BUILD="$TOPO_TMP/build" >"$TOPO_TMP/deb.log" 2>&1 ||
		{ not_ok "make deb" "$(tail -20 "$TOPO_TMP/deb.log")"; tap_done; exit 1; }
	MOAT_DEB=$(ls "$TOPO_TMP"/build/deb/moat_*_amd64.deb)
	how="built by make deb in $((EPOCHSECONDS - t0)) s"
fi
[ -f "$MOAT_DEB" ] || { not_ok "the package $MOAT_DEB exists"; tap_done; exit 1; }
ok "the package: ${MOAT_DEB##*/} ($how)"
# The folder the admin runs the page's `apt install ./moat_*.deb` in,
# readable by apt's download user _apt, holding only the package.
DOC_CWD=$TOPO_PUB/download
install -d -m 0755 "$DOC_CWD" && install -m 0644 "$MOAT_DEB" "$DOC_CWD/"

# What the package would change on the host, were anything to leak out of
# the overlays: its files, dpkg's record of it, its users, their groups.
host_pkg_state() {
	local p u
	for p in /etc/moat /var/lib/moat /var/log/moat /usr/lib/moat /usr/sbin/gatewayd \
		/usr/bin/provision /usr/bin/containment-check /lib/systemd/system/moat-gatewayd.service \
		/etc/systemd/system/multi-user.target.wants/moat-gatewayd.service \
		/var/lib/systemd/deb-systemd-helper-enabled/moat-gatewayd.service.dsh-also \
		/var/lib/dpkg/info/moat.list /var/lib/dpkg/info/moat.postinst; do
		[ -e "$p" ] || [ -L "$p" ] || { echo "$p absent"; continue; }
		find "$p" -printf '%p %y %m %u:%g %s %T@\n' | sort
	done
	dpkg-query -W -f='${Package} ${Status}\n' moat 2>&1
	for u in moat-dns moat-proxy moat-log moat-ca moat-ctl moat-reg moat-mon moat-web moat-qemu; do
		echo "$u: $(getent passwd "$u")"
	done
	# The group's gid (other tests add members of their own meanwhile).
	getent group moat | cut -d: -f1-3
}
host_pkg_state >"$TOPO_TMP/host.before"

guest_assets || { not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; }
doc_machine_up || { not_ok "the machine (namespaces, overlays, resolver)"; tap_done; exit 1; }
ok "the machine's disk is overlays of this test's (the host's /etc, /usr, /var untouched)"
# A fresh machine has no moat programs under /usr/local (a `make install`
# there would come first on the page's PATH), and none of moat's users or
# its group: the package's postinst must create them (in the overlay's /etc).
inside sh -c 'for f; do rm -f "/usr/local/${f#./usr/}"; done' _ \
	$(dpkg-deb -c "$MOAT_DEB" | awk '$6 ~ "^[.]/usr/s?bin/." { print $6 }')
inside sed -E -i -e '/^moat(-[a-z]+)?:/d' -e 's/([:,])moat-qemu(,|$)/\1/' -e 's/,$//' \
	/etc/passwd /etc/group /etc/shadow /etc/gshadow
expect_fail "the machine starts without moat's users and group" inside sh -c \
	'getent passwd moat-dns || getent passwd moat-qemu || getent group moat'
# The maintainer scripts call systemctl and deb-systemd-invoke only when
# /run/systemd/system exists; systemctl would talk to systemd through
# /run/systemd/private or D-Bus's /run/dbus socket.  None is in the fresh /run.
expect_ok "no systemd to reach: no /run/systemd, no /run/dbus in the machine" \
	inside sh -c '! [ -e /run/systemd ] && ! [ -e /run/dbus ]'

DOC=docs/provision.homelab.md
IMAGE_NAME=debian-12-genericcloud-amd64.qcow2
CC_PKG=$TOPO_TMP/containment-check.installed
standin_wget() {
	echo "# stand-in: no internet here, and no cloud-init guest: the test's kernel and"
	echo "#   an initramfs with the containment-check the package installed go where the"
	echo "#   image would, and a blank $IMAGE_NAME so the page's next command runs as written"
	local tree cc
	cc=$(doc_run 'command -v containment-check') ||
		{ echo "#   containment-check is not on the page's PATH"; return 1; }
	inside cat "$cc" >"$CC_PKG" && chmod 0755 "$CC_PKG" &&
		tree=$(bash tests/harness/guest-kernel.sh "$GUEST_CACHE") &&
		bash tests/harness/guest-initramfs.sh "$GUEST_INITRD" "$tree" "$CC_PKG" &&
		chmod 0644 "$GUEST_INITRD" || return 1
	doc_run "install -m 0644 '$GUEST_KERNEL' vmlinuz && install -m 0644 '$GUEST_INITRD' initrd.gz &&
		qemu-img create -q -f qcow2 $IMAGE_NAME 64M && chmod 0600 $IMAGE_NAME"
}
# The arguments the page gives containment-check in the guest (step 7).
CC_ARGS=$(python3 tests/harness/doc-blocks.py "$DOC" | python3 -c '
import json, sys
for l in sys.stdin:
    c = json.loads(l).get("cmd") or ""
    if c.startswith("ssh agent@") and " containment-check " in c:
        print(c.split(" containment-check ", 1)[1].strip())')
standin_create() {
	echo "# stand-in: kernel mode instead of the cloud image (no cloud-init, no ssh):"
	echo "#   --image/--ssh-key replaced, every other flag as written; the guest runs"
	echo "#   containment-check $CC_ARGS at boot"
	local cmd
	cmd=$(sed -E -e 's| --image [^ ]+| --kernel /srv/moat-images/vmlinuz --initrd /srv/moat-images/initrd.gz|' \
		-e 's| --ssh-key [^ ]+||' <<<"$1")
	doc_run "$cmd --append 'quiet moat.cc=$(tr ' ' ',' <<<"$CC_ARGS")'"
}
standin_ssh() {
	echo "# stand-in: no ssh into the kernel-mode guest: its initramfs carries the"
	echo "#   containment-check the package installed (as provision puts it in an"
	echo "#   image-mode guest), and its console log shows the run"
	local cc
	cc=$(doc_run 'command -v containment-check') || return 1
	echo "#   $cc: $(inside dpkg -S "$cc")"
	inside dpkg -S "$cc" | grep -q '^moat: ' && inside cmp "$cc" "$CC_PKG" || return 1
	inside test -e /var/lib/moat/guests/dev/console.log || return 1	# no guest started
	wait_for 300 inside grep -q MOAT-VERDICT /var/lib/moat/guests/dev/console.log
	inside cat /var/lib/moat/guests/dev/console.log
	inside grep -E 'running containment-check|BREACH|FAILED|DNS over HTTPS|probes in|verdict' \
		/var/lib/moat/guests/dev/console.log | sed 's/^/#   guest: /'
	inside grep -q '^MOAT-VERDICT: contained' /var/lib/moat/guests/dev/console.log
}
skip_workstation() {
	echo "# not run: on the admin's workstation, through the box's sshd (no sshd here)"
}
skip_console() {
	echo "# not run: interactive (63-provision-console.sh drives provision console)"
}

# How each command of the page runs here: "run" (as written) or a stand-in.
declare -A HOW=(
	["apt install ./moat_*.deb"]=run
	["gatewayd -n -c /etc/moat/moat.conf"]=run
	["systemctl enable --now moat-gatewayd"]=standin_systemctl_start
	["gatewayd ctl status"]=run
	["install -d -m 0755 /srv/moat-images"]=run
	["cd /srv/moat-images"]=run
	["wget https://cloud.debian.org/images/cloud/bookworm/latest/$IMAGE_NAME"]=standin_wget
	["chmod 0644 $IMAGE_NAME"]=run
	["[ -f ~/.ssh/id_ed25519 ] || ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519"]=run
	["provision create dev --image /srv/moat-images/$IMAGE_NAME --ssh-key ~/.ssh/id_ed25519.pub --egress allowlist --allow github.com --allow '*.githubusercontent.com' --allow pypi.org --cpus 2 --memory 4G --disk 20G"]=standin_create
	["provision start dev"]=run
	["provision console dev            # watch cloud-init finish; Ctrl-] leaves"]=skip_console
	["provision list"]=run
	["ssh agent@10.77.0.2 containment-check --expect allowlist --in-guest"]=standin_ssh
	["ssh -J root@box agent@10.77.0.2"]=skip_workstation
	["getent passwd alice >/dev/null || useradd -m -G moat alice"]=run
	["provision create alice-dev --owner alice --ssh-key alice.pub --image /srv/moat-images/$IMAGE_NAME --egress allowlist --allow pypi.org"]=standin_create
	["provision list --owner alice"]=run
	["provision destroy alice-dev"]=run
	["gatewayd ctl refused dev"]=run
	["gatewayd ctl allow dev files.pythonhosted.org --for 10m"]=run
	["gatewayd ctl allow dev @pypi          # written to sandboxes.d/dev.conf"]=run
	["gatewayd ctl unallow dev @pypi"]=run
	["provision destroy dev            # stops it; nothing of the guest is left"]=run
	["systemctl stop moat-gatewayd"]=standin_systemctl_stop
	["gatewayd --teardown -c /etc/moat/moat.conf"]=run
)

doc_varies() {
	[ "$HOW_NOW" = standin_create ] &&
		echo 's/^created ([a-z-]+): image mode,/created \1: kernel mode,/'
	echo 's/ image allowlist stopped / (image|kernel) allowlist stopped /'
	echo 's/^started dev: (pid [^,]+), kvm,/started dev: \1, (kvm|tcg),/'
	echo 's/^accelerator kvm: KVM works$/accelerator (kvm: KVM works|tcg: KVM not usable by uid [0-9]+ \\(guest dev\\): .*|tcg: KVM is present but QEMU cannot run a guest with it on this machine)/'
}
doc_walk "$DOC"
expect_eq "every command of the page ran or was stood in for" "${#HOW[@]}" "$DOC_NCMDS"

# --- what the page promises beyond the shown output -----------------------
expect_eq "the package is installed in the machine (dpkg's database in the overlay)" \
	"install ok installed" "$(inside dpkg-query -W -f='${Status}' moat)"
expect_ok "... its postinst created moat's users and group in the overlay's /etc" \
	sh -c "grep -q '^moat-dns:' '$DOC_OV/etc.u/passwd' && grep -q '^moat:' '$DOC_OV/etc.u/group'"
expect_ok "... and enabled moat-gatewayd there" \
	inside test -L /etc/systemd/system/multi-user.target.wants/moat-gatewayd.service
expect_eq "the config was used as the package installed it (its conffile's md5sum)" \
	"$(inside dpkg-query -W -f='${Conffiles}' moat | awk '$1 == "/etc/moat/moat.conf" { print $2 }')" \
	"$(inside md5sum /etc/moat/moat.conf | cut -d' ' -f1)"
expect_eq "... which is the shipped examples/moat.conf" "" \
	"$(inside diff "$PWD/examples/moat.conf" /etc/moat/moat.conf)"
expect_ok "... whose proxy intercepts (intercept = true, the default)" \
	inside grep -q 'intercept = true' /etc/moat/moat.conf
expect_ok "the page made root an ssh key where it had none (in the overlay's /root)" \
	inside ssh-keygen -l -f /root/.ssh/id_ed25519.pub
expect_eq "provision destroy left nothing of the guest" "" \
	"$(inside find /var/lib/moat/guests/ /etc/moat/sandboxes.d/ -mindepth 1 2>/dev/null)"
expect_fail "the bridge is gone after --teardown" ip -n "$NS_GW" link show moat0
expect_ok "the host's own /etc/moat was not touched by this test" \
	sh -c "! find /etc/moat /var/lib/moat /var/log/moat -newer '$DOC_OV' 2>/dev/null | grep -q ."
host_pkg_state >"$TOPO_TMP/host.after"
expect_eq "nothing of the package reached the host (files, dpkg's record, users, groups)" "" \
	"$(diff "$TOPO_TMP/host.before" "$TOPO_TMP/host.after")"
tap_done
