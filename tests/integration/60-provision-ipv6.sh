#!/usr/bin/env bash
# A kernel-mode guest with IPv6: gateway.ipv6 on, provision creates and
# starts the guest under TCG, and its command line carries moat.ip6= (its
# address derived from its IPv4 one, /64, the gateway's ::1 as router);
# the test initramfs sets it up as a guest's init would.  gatewayd (no
# children) puts the gateway's IPv6 address on the bridge, turns on
# forwarding and applies the policy.  From inside the guest: a host on
# the IPv6 internet answers, through the gateway's nat66; the host's LAN
# prefix (global, the homelab case) and the gateway host's own address
# on it are refused.  Image mode: the seed's network-config holds the
# IPv6 address, gateway6 and the IPv6 resolver (an allowlist sandbox's
# too); a sandbox without IPv6 (egress none) gets none on its command line.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh
. tests/harness/gw.sh

for b in build/provision build/gatewayd; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
NET6=fd77:0:0:1
FAR6=2001:db8:300::7		# a host on the IPv6 internet
LAN6_GW=2001:db8:77:5::1	# the gateway host's own address on its LAN
LAN6_HOST=2001:db8:77:5::2	# a host on the LAN's global prefix
topo_up || { not_ok "topology comes up"; exit 1; }
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=0
ip -n "$NS_GW" addr add $LAN6_GW/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6_HOST/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via $LAN6_GW
ip -n "$NS_INET" addr add $FAR6/128 dev lo nodad
for t in "$NS_INET $FAR6 far" "$NS_LAN $LAN6_HOST lan" "$NS_GW $LAN6_GW gw"; do
	set -- $t
	topo_bg "$1" "banner6-$2" socat TCP6-LISTEN:2222,bind="[$2]",fork,reuseaddr SYSTEM:"echo hi-$3"
	topo_wait_port "$1" "$2" 2222 || { not_ok "listener on $2"; exit 1; }
done
# Controls: the targets are really there from the gateway host.
for t in "$FAR6 far" "$LAN6_HOST lan"; do
	set -- $t
	expect_eq "control: [$1]:2222 answers the gateway host" "hi-$2" \
		"$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$1]":2222,connect-timeout=3 STDOUT 2>&1)"
done

# The kernel, and an initramfs without containment-check: this test is
# about the guest's addresses, not a scan.
tree=$(bash tests/harness/guest-kernel.sh "$GUEST_CACHE") &&
	GUEST_KERNEL=$(topo_pub "$(ls "$tree"/boot/vmlinuz-*-cloud-amd64 | head -1)") &&
	GUEST_INITRD=$TOPO_TMP/initrd.gz &&
	bash tests/harness/guest-initramfs.sh "$GUEST_INITRD" "$tree" && chmod 0644 "$GUEST_INITRD" ||
	{ not_ok "guest kernel (cached) and initramfs" "this test needs apt access once"; tap_done; exit 1; }

cat >"$TOPO_TMP/base.conf" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
};
CONF
pv_setup "$TOPO_TMP/base.conf"
out=$(pv create v6 --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
	--append "quiet moat.probe6=$FAR6.2222,$LAN6_HOST.2222,$LAN6_GW.2222" \
	--egress open --user "$PV_USER" --accel tcg --memory 256 2>&1)
expect_match "provision create v6" "created v6: kernel mode, address 10.77.0.2" "$out"
# Image mode and sandboxes without IPv6 (not booted).
qemu-img create -q -f qcow2 "$TOPO_TMP/base.qcow2" 64M && chmod 0644 "$TOPO_TMP/base.qcow2"
echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMoatTestKeyOnly test@moat' >"$TOPO_TMP/key.pub"
icreate() { pv create "$1" --image "$TOPO_TMP/base.qcow2" --ssh-key "$TOPO_TMP/key.pub" \
	--user "$PV_USER" --accel tcg "${@:2}"; }
netcfg() { isoinfo -R -x /network-config -i "$PV_STATE/guests/$1/seed.iso" 2>&1; }
expect_match "create img6 (image mode, open)" "created img6" "$(icreate img6 --egress open 2>&1)"
n=$(netcfg img6)
expect_match "seed: the IPv6 address beside the IPv4 one" \
	'addresses: \[ "10.77.0.3/24", "'$NET6'::3/64" \]' "$n"
expect_match "seed: the gateway's IPv6 address as router" 'gateway6: "'$NET6'::1"' "$n"
expect_match "seed: ... and as resolver" \
	'nameservers:.*addresses: \[ "10.77.0.1", "'$NET6'::1" \]' "$(tr '\n' ' ' <<<"$n")"
expect_match "seed: no router advertisements taken" "accept-ra: false" "$n"
expect_match "create img4 (image mode, allowlist)" "created img4" \
	"$(icreate img4 --egress allowlist --allow pypi.org 2>&1)"
n=$(netcfg img4)
# An allowlist sandbox has IPv6 too (its AAAA answers open allow6_img4).
expect_match "allowlist seed: its IPv6 address beside the IPv4 one" \
	'addresses: \[ "10.77.0.4/24", "'$NET6'::4/64" \]' "$n"
expect_match "create k4 (kernel mode, egress none)" "created k4" \
	"$(pv create k4 --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" --egress none \
	--user "$PV_USER" --accel tcg --memory 128 2>&1)"
expect_fail "egress none: no moat.ip6 on its command line" grep -q "moat.ip6" <<<"$(pv qemu-args k4 2>&1)"
expect_match "qemu-args v6 shows moat.ip6" "moat.ip6=$NET6::2/64,$NET6::1" "$(pv qemu-args v6 2>&1)"

GW_CONF=$PV_CONF
gw_start -X; expect_eq "gatewayd applies the policy and sets up IPv6" 0 $?

out=$(pv_gw start v6 2>&1)
expect_match "provision start v6 (TCG)" "started v6: pid [0-9]+, tcg" "$out"
qpid=$(cat "$PV_RUN/guests/v6/qemu.pid" 2>/dev/null)
expect_match "the guest's command line carries its IPv6 address and router" \
	"moat.ip6=$NET6::2/64,$NET6::1( |$)" "$(tr '\0' ' ' </proc/${qpid:-0}/cmdline 2>/dev/null)"
guest_wait v6 'powering off' 420
log=$(guest_log v6)
expect_match "the guest's init set up IPv6 from it" \
	"moat-guest: IPv6 up $NET6::2/64 via $NET6::1 on eth0" "$log"
expect_match "the guest reaches a host on the IPv6 internet" \
	"MOAT-PROBE6: \[$FAR6\]:2222 open hi-far" "$log"
expect_match "the guest is refused a host on the LAN's IPv6 prefix" \
	"MOAT-PROBE6: \[$LAN6_HOST\]:2222 closed" "$log"
expect_match "the guest is refused the gateway host's LAN address" \
	"MOAT-PROBE6: \[$LAN6_GW\]:2222 closed" "$log"
tap_done
