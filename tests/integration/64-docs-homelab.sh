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
. tests/harness/doc-run.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale
guest_assets || { not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; }
doc_machine_up || { not_ok "the machine (namespaces, overlays, resolver)"; tap_done; exit 1; }
ok "the machine's disk is overlays of this test's (the host's /etc, /usr, /var untouched)"

DOC=docs/provision.homelab.md
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
	["scp \"\$(command -v containment-check)\" agent@10.77.0.2:"]=standin_scp
	["ssh agent@10.77.0.2 ./containment-check --expect allowlist --in-guest"]=standin_ssh
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
		echo 's/^created dev: image mode,/created dev: kernel mode,/'
	echo 's/^started dev: (pid [^,]+), kvm,/started dev: \1, (kvm|tcg),/'
	echo 's/^accelerator kvm: KVM works$/accelerator (kvm: KVM works|tcg: KVM not usable by uid [0-9]+ \\(guest dev\\): .*)/'
}
doc_walk "$DOC"
expect_eq "every command of the page ran or was stood in for" "${#HOW[@]}" "$DOC_NCMDS"

# --- what the page promises beyond the shown output -----------------------
expect_eq "the config was used as installed: the shipped examples/moat.conf" "" \
	"$(inside diff "$PWD/examples/moat.conf" /etc/moat/moat.conf)"
expect_ok "... whose proxy intercepts (intercept = true, the default)" \
	inside grep -q 'intercept = true' /etc/moat/moat.conf
expect_eq "provision destroy left nothing of the guest" "" \
	"$(inside find /var/lib/moat/guests/ /etc/moat/sandboxes.d/ -mindepth 1 2>/dev/null)"
expect_fail "the bridge is gone after --teardown" ip -n "$NS_GW" link show moat0
expect_ok "the host's own /etc/moat was not touched by this test" \
	sh -c "! find /etc/moat /var/lib/moat /var/log/moat -newer '$DOC_OV' 2>/dev/null | grep -q ."
tap_done
