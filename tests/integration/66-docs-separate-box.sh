#!/usr/bin/env bash
# The docs are tests: docs/separate-box.md, run as written (the machinery
# is tests/harness/doc-run.sh; see 64-docs-homelab.sh).
#
# Three machines, each a network namespace of this run with a mount
# namespace of its own (/etc, /usr, /var, /srv, /home overlays of
# $TOPO_TMP, /run a tmpfs: nothing lands on the host): the gateway box
# (uplink eth0 to an internet with 9.9.9.9, sandbox side eth1, host A's
# trunk eth2, host B's trunk eth3, the registration address 192.0.2.10 on
# the management network) and KVM hosts kvmA and kvmB (trunk eth1 to the
# box, management eth0 198.51.100.2 and .6), named as the page names them.
# Before the page: moat installed on each machine (make install).
#
# Each command runs on the machine the page means: the box's steps on the
# box; "each KVM host" steps on kvmA as written and on kvmB with its own
# name and pool; step 5 on kvmA.  The page's two files are put in place
# as it says, with the fingerprints the commands printed typed where the
# page says "sha256:...".  Stand-ins, each named in the TAP output: systemd
# (the units' own commands run), the cloud image (the test's kernel-mode
# guest, every other provision flag as written).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh
. tests/harness/doc-run.sh

for b in build/provision build/gatewayd build/nft-rules; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale
guest_assets || { not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; }

NS_A=$TOPO-kvmA
NS_B=$TOPO-kvmB
# sb_net -- the box's other interfaces, the two hosts and the management
# network (doc_machine_up made the box with its uplink eth0 and LAN).
sb_net() {
	topo_ns "$NS_A" && topo_ns "$NS_B" || return 1
	ip -n "$NS_GW" link add eth1 type veth peer name eth1p || return 1
	ip -n "$NS_GW" link set eth1p up
	topo_link "$NS_A" eth1 "$NS_GW" eth2 && topo_link "$NS_B" eth1 "$NS_GW" eth3 || return 1
	ip -n "$NS_A" link set eth1 down; ip -n "$NS_B" link set eth1 down	# step 2 brings them up
	ip -n "$NS_GW" link set eth2 down; ip -n "$NS_GW" link set eth3 down	# and step 1
	ip -n "$NS_GW" addr add 192.0.2.10/32 dev lo
	topo_link "$NS_A" eth0 "$NS_GW" mgA && topo_link "$NS_B" eth0 "$NS_GW" mgB || return 1
	ip -n "$NS_GW" addr add 198.51.100.1/30 dev mgA
	ip -n "$NS_A" addr add 198.51.100.2/30 dev eth0
	ip -n "$NS_A" route add 192.0.2.10/32 via 198.51.100.1
	ip -n "$NS_GW" addr add 198.51.100.5/30 dev mgB
	ip -n "$NS_B" addr add 198.51.100.6/30 dev eth0
	ip -n "$NS_B" route add 192.0.2.10/32 via 198.51.100.5
}
doc_machine_up && sb_net || { not_ok "the machines (namespaces, overlays, resolver)"; tap_done; exit 1; }
HOLD_BOX=$DOC_HOLD OV_BOX=$DOC_OV
DOC_OV=$TOPO_TMP/ov-kvmA; doc_disk_up || { not_ok "kvmA's disk"; tap_done; exit 1; }
HOLD_A=$DOC_HOLD
DOC_OV=$TOPO_TMP/ov-kvmB; doc_disk_up || { not_ok "kvmB's disk"; tap_done; exit 1; }
HOLD_B=$DOC_HOLD
DOC_HOLD=$HOLD_BOX DOC_OV=$OV_BOX
ok "three machines, each disk an overlay of this test's (the host's /etc, /usr, /var untouched)"

# on MACHINE FN ARGS... -- FN (doc_run, inside, ...) on box, kvmA or kvmB.
on() {
	local m=$1; shift
	case $m in
	box) DOC_HOLD=$HOLD_BOX DOC_NS=$NS_GW "$@" ;;
	kvmA) DOC_HOLD=$HOLD_A DOC_NS=$NS_A "$@" ;;
	kvmB) DOC_HOLD=$HOLD_B DOC_NS=$NS_B "$@" ;;
	esac
}
# as_kvmB TEXT -- the page's kvmA text for host B: its name and pool.
as_kvmB() { sed -e 's/kvmA/kvmB/g' -e 's|10\.77\.0\.16/28|10.77.0.32/28|g' <<<"$1"; }

echo "# before the page: make install on each machine, an image on kvmA"
for m in box kvmA kvmB; do
	expect_ok "$m: make install" on $m doc_run "make install >/dev/null"
done
expect_ok "kvmA: an image (the test's kernel and initramfs)" on kvmA doc_run \
	"install -d -m 0755 /srv/images && install -m 0644 '$GUEST_KERNEL' /srv/images/vmlinuz &&
		install -m 0644 '$GUEST_INITRD' /srv/images/initrd.gz"

# How each command runs: on the box, or on each KVM host.
box() { on box doc_run "$1"; }
hosts() {
	echo "# on kvmA as written, on kvmB with its name and pool"
	on kvmA doc_run "$1" && on kvmB doc_run "$(as_kvmB "$1")"
}
box_fpr() {	# the box's fingerprint, kept for the hosts' pin (step 4)
	on box doc_run "$1" | tee "$TOPO_TMP/fpr-box"
	[ "${PIPESTATUS[0]}" = 0 ]
}
hosts_fpr() {	# each host's fingerprint, kept for the box's hosts list
	local m
	for m in kvmA kvmB; do
		on $m doc_run "$1" | tee "$TOPO_TMP/fpr-$m" || return 1
	done
}
pin() { echo "sha256:$(cut -d' ' -f1 "$TOPO_TMP/fpr-$1")"; }
# The page's files: the box's moat.conf, each host's (pin typed in).
doc_snippet() {
	case $2 in
	*"GATEWAY BOX"*) echo "# $DOC:$1: a picture of the machines (built by this test)" ;;
	*"hosts = ("*)
		echo "# $DOC:$1: the page's text is the box's /etc/moat/moat.conf, each host's"
		echo "#   printed fingerprint typed in as its key"
		sed -e "s|name = \"kvmA\"; key = \"sha256:...\"|name = \"kvmA\"; key = \"$(pin kvmA)\"|" \
			-e "s|name = \"kvmB\"; key = \"sha256:...\"|name = \"kvmB\"; key = \"$(pin kvmB)\"|" \
			<<<"$2" >"$TOPO_TMP/box.conf"
		expect_fail "$DOC:$1: each host's key was typed in" grep -qF 'sha256:...' "$TOPO_TMP/box.conf"
		on box inside install -m 0644 "$TOPO_TMP/box.conf" /etc/moat/moat.conf ;;
	*"box: {"*)
		echo "# $DOC:$1: the page's text is each host's /etc/moat/moat.conf, the box's"
		echo "#   fingerprint typed in as pin (kvmB: its own pool)"
		sed "s|pin     = \"sha256:...\"|pin     = \"$(pin box)\"|" <<<"$2" >"$TOPO_TMP/kvmA.conf"
		as_kvmB "$(cat "$TOPO_TMP/kvmA.conf")" >"$TOPO_TMP/kvmB.conf"
		expect_fail "$DOC:$1: the box's fingerprint was typed in" grep -qF 'sha256:...' "$TOPO_TMP/kvmA.conf"
		on kvmA inside install -m 0644 "$TOPO_TMP/kvmA.conf" /etc/moat/moat.conf
		on kvmB inside install -m 0644 "$TOPO_TMP/kvmB.conf" /etc/moat/moat.conf ;;
	*) not_ok "$DOC:$1: a file's text this test knows what to do with" "$2" ;;
	esac
}
box_start() { on box standin_systemctl_start; }
standin_create() {
	echo "# stand-in (on kvmA): kernel mode instead of the page's cloud image: --image"
	echo "#   and --ssh-key replaced by the test's kernel and initramfs, every other"
	echo "#   flag as written"
	on kvmA doc_run "$(sed -E -e 's| --image [^ ]+| --kernel /srv/images/vmlinuz --initrd /srv/images/initrd.gz|' \
		-e 's| --ssh-key [^ ]+||' <<<"$1")"
}
on_kvmA() { on kvmA doc_run "$1"; }
standin_sync_unit() {
	echo "# stand-in: no systemd here; the unit's own command runs on each host, as at boot"
	local u=/lib/systemd/system/moat-sync-box.service
	hosts "$(on kvmA inside sed -n 's/^ExecStart=//p' $u)"
}
standin_daemon_reload() {
	echo "# stand-in: no systemd here; the drop-in on each host must clear the"
	echo "#   ExecStartPre= the installed moat-guest@.service has"
	local m
	for m in kvmA kvmB; do
		on $m inside grep -q '^ExecStartPre=.' /lib/systemd/system/moat-guest@.service &&
			on $m inside grep -qx 'ExecStartPre=' /etc/systemd/system/moat-guest@.service.d/box.conf ||
			return 1
	done
}

OPENSSL="openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj"
FPR="openssl x509 -in /etc/moat/%s.crt -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum"
declare -A HOW=(
	["ip link set eth1 up; ip addr add 10.77.0.1/24 dev eth1   # gateway.bridge"]=box
	["ip link set eth2 up                                      # host A's trunk"]=box
	["ip route add 10.77.0.16/28 dev eth2 src 10.77.0.1"]=box
	["ip link set eth3 up                                      # host B's trunk"]=box
	["ip route add 10.77.0.32/28 dev eth3 src 10.77.0.1"]=box
	["sysctl -w net.ipv4.ip_forward=1"]=box
	["$OPENSSL /CN=moat-box -days 3650 -keyout /etc/moat/box.key -out /etc/moat/box.crt"]=box
	["chmod 0600 /etc/moat/box.key"]=box
	["$(printf "$FPR" box)"]=box_fpr
	["gatewayd -n -c /etc/moat/moat.conf     # check"]=box
	["systemctl enable --now moat-gatewayd"]=box_start
	["ip link add moat0 type bridge"]=hosts
	["ip link set moat0 up                 # no address on moat0"]=hosts
	["ip link set eth1 master moat0        # the trunk towards the box"]=hosts
	["ip link set eth1 up"]=hosts
	["$OPENSSL /CN=kvmA -days 3650 -keyout /etc/moat/host.key -out /etc/moat/host.crt"]=hosts
	["chmod 0600 /etc/moat/host.key"]=hosts
	["$(printf "$FPR" host)"]=hosts_fpr
	["provision create dev --image debian-12-genericcloud-amd64.qcow2 --ssh-key ~/.ssh/id_ed25519.pub --egress allowlist --allow pypi.org"]=standin_create
	["nft-rules --host-only --trunk eth1 apply && nft-rules --host-only --trunk eth1 verify"]=on_kvmA
	["provision start dev"]=on_kvmA
	["systemctl enable moat-sync-box.service"]=standin_sync_unit
	["mkdir -p /etc/systemd/system/moat-guest@.service.d"]=hosts
	["printf '[Service]\\nExecStartPre=\\n' >/etc/systemd/system/moat-guest@.service.d/box.conf"]=hosts
	["systemctl daemon-reload"]=standin_daemon_reload
)
DOC=docs/separate-box.md
doc_walk "$DOC"
expect_eq "every command of the page ran or was stood in for" "${#HOW[@]}" "$DOC_NCMDS"

# --- what the page promises beyond the commands' output --------------------
BOXSB=$(on box inside cat /etc/moat/sandboxes.d/dev.conf 2>&1)
expect_match "the box wrote dev's drop-in, with host A's trunk" 'trunk = "eth2"' "$BOXSB"
expect_match "... its egress" 'egress = "allowlist"' "$BOXSB"
expect_match "... and its allowlist" 'allow = .*"pypi\.org"' "$BOXSB"
expect_match "dev's address is in host A's pool" '^10\.77\.0\.(1[6-9]|2[0-9]|3[01])$' \
	"$(on kvmA inside sed -n 's/^address = "\(.*\)";/\1/p' /etc/moat/sandboxes.d/dev.conf)"
HOSTS=$(on box doc_run "gatewayd ctl hosts" 2>&1)
expect_match "gatewayd ctl hosts on the box lists kvmA" kvmA "$HOSTS"
expect_match "... and kvmB" kvmB "$HOSTS"
expect_eq "kvmA has only the bridge table (nft-rules --host-only)" "table bridge moat" \
	"$(in_ns "$NS_A" nft list tables)"
qemu_up() { on kvmA inside sh -c 'kill -0 "$(cat /run/moat/guests/dev/qemu.pid)"' 2>/dev/null; }
expect_ok "provision start dev started the guest after the box's ok" qemu_up
QPID=$(on kvmA inside cat /run/moat/guests/dev/qemu.pid 2>/dev/null)
expect_ok "kvmA: provision destroy dev" on kvmA doc_run "provision destroy dev"
expect_ok "... its QEMU is gone" wait_for 10 sh -c "! kill -0 ${QPID:-0} 2>/dev/null"
expect_fail "... and the box forgot it" on box inside test -e /etc/moat/sandboxes.d/dev.conf
expect_ok "the box's gatewayd stops" on box standin_systemctl_stop
expect_ok "the host's own /etc/moat was not touched by this test" \
	sh -c "! find /etc/moat /var/lib/moat /var/log/moat -newer '$DOC_OV' 2>/dev/null | grep -q ."
tap_done
