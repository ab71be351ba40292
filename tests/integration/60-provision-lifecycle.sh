#!/usr/bin/env bash
# provision's life cycle and its failure paths: create / start / stop /
# destroy round trips leave no file, tap, process or config entry behind,
# and so does every failure midway (duplicate name, bad image, missing
# QEMU, a seed that cannot be built, an exhausted pool, a reload gatewayd
# refuses, a busy tap).  Image mode: the image is imported (no backing
# file) and the NoCloud seed is labelled cidata with the right content.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

[ -x build/provision ] || { not_ok "build/provision is built"; tap_done; exit 1; }
topo_up || { not_ok "topology comes up"; exit 1; }
guest_assets || { not_ok "guest kernel and initramfs" "apt access needed once"; tap_done; exit 1; }
pv_setup examples/demo.conf
SB=$TOPO_TMP/pv/sandboxes.d

# qemu_of NAME -- pid of guest NAME's QEMU, looked for only in this run's
# gateway namespace (another run may have a guest of the same name).
qemu_of() {
	local p
	for p in $(ip netns pids "$NS_GW" 2>/dev/null); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "process=moat-$1," && echo "$p"
	done
}
# leftovers NAME -- everything provision could have left of guest NAME.
leftovers() {
	ls -A "$SB" 2>/dev/null | grep -E "^\.?$1\.conf|^\.validate"
	ls -d "$PV_STATE/guests/$1" "$PV_RUN/guests/$1" 2>/dev/null
	qemu_of "$1"
	ip -n "$NS_GW" -br link show 2>/dev/null | grep -o "^mt-$1[^ @]*"
}
valid() { in_ns "$NS_GW" build/gatewayd -n -c "$PV_CONF" >/dev/null 2>&1; }
kcreate() { pv create "$@" --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
	--egress none --user "$PV_USER" --accel tcg --memory 128; }

# --- a kernel-mode guest ---------------------------------------------------
t0=$(now_ms); out=$(kcreate k1 2>&1); rc=$?; t1=$(now_ms)
echo "# create (kernel mode): $((t1 - t0)) ms"
expect_eq "create k1 exits 0" 0 "$rc"
expect_match "create k1 takes the first free address (demo uses .10-.12)" \
	"address 10.77.0.2, mac 02:6d:74:4d:00:02, tap mt-k1" "$out"
expect_ok "k1's drop-in exists" test -f "$SB/k1.conf"
expect_ok "the configuration with k1 validates (gatewayd -n)" valid
expect_match "drop-in records egress none" 'egress = "none"' "$(cat "$SB/k1.conf")"
expect_ok "k1's disk is a qcow2" sh -c "qemu-img info '$PV_STATE/guests/k1/disk.qcow2' | grep -q 'file format: qcow2'"
out=$(kcreate k2 2>&1)
expect_match "a second guest gets the next address" "address 10.77.0.3" "$out"

before=$(ls -lA "$SB" "$PV_STATE/guests/k1" | md5sum)
expect_fail "create k1 again fails (duplicate name)" kcreate k1
expect_eq "the duplicate changed nothing" "$before" "$(ls -lA "$SB" "$PV_STATE/guests/k1" | md5sum)"
expect_match "duplicate: says why" "already exists" "$(kcreate k1 2>&1)"

# --- failures midway leave nothing ------------------------------------------
out=$(pv create bad1 --kernel /nonexistent/vmlinuz --egress open --user "$PV_USER" 2>&1)
expect_match "bad kernel path: says why" "--kernel /nonexistent/vmlinuz" "$out"
expect_eq "bad kernel path: nothing left" "" "$(leftovers bad1)"
out=$(pv --qemu /nonexistent/qemu create bad2 --kernel "$GUEST_KERNEL" --egress open --user "$PV_USER" 2>&1)
expect_match "QEMU missing: says why" "QEMU is missing" "$out"
expect_eq "QEMU missing: nothing left" "" "$(leftovers bad2)"
out=$(pv create bad3 --kernel "$GUEST_KERNEL" --egress open --user no-such-user-here 2>&1)
expect_match "unknown QEMU user: says why" "does not exist" "$out"
expect_eq "unknown QEMU user: nothing left" "" "$(leftovers bad3)"
out=$(pv create bad4 --kernel "$GUEST_KERNEL" --egress open --allow x.test --user "$PV_USER" 2>&1)
expect_match "config rejects allow with egress open: loader's message" "allow only applies" "$out"
expect_eq "invalid drop-in: nothing left" "" "$(leftovers bad4)"
out=$(pv create bad7 --kernel "$GUEST_KERNEL" --egress allowlist --allow '*.com' --user "$PV_USER" 2>&1)
expect_match "--allow '*.com': says why it is refused" \
	"--allow: wildcard \"\*\.com\" is too broad: it covers the whole top-level domain \"com\" \(a wildcard needs at least two labels after \"\*\.\", like \"\*\.example\.com\"\)" "$out"
expect_eq "--allow '*.com': nothing left" "" "$(leftovers bad7)"
out=$(pv --qemu-img /bin/false create bad5 --kernel "$GUEST_KERNEL" --egress open --user "$PV_USER" 2>&1)
expect_match "qemu-img fails midway: says why" "qemu-img could not create" "$out"
expect_eq "qemu-img fails midway: nothing left" "" "$(leftovers bad5)"

# --- image mode ------------------------------------------------------------
qemu-img create -q -f qcow2 "$TOPO_TMP/base.qcow2" 64M
chmod 0644 "$TOPO_TMP/base.qcow2"
echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMoatTestKeyOnly test@moat' >"$TOPO_TMP/key.pub"
printf '%s\n' '-----BEGIN CERTIFICATE-----' 'TUlJQnRlc3Q=' '-----END CERTIFICATE-----' >"$TOPO_TMP/ca.pem"
out=$(pv --genisoimage /bin/false create bad6 --image "$TOPO_TMP/base.qcow2" \
	--ssh-key "$TOPO_TMP/key.pub" --egress open --user "$PV_USER" 2>&1)
expect_match "seed build fails midway: says why" "genisoimage failed" "$out"
expect_eq "seed build fails midway: nothing left" "" "$(leftovers bad6)"
qemu-img create -q -f raw "$TOPO_TMP/raw.img" 16M
out=$(pv create bad7 --image "$TOPO_TMP/raw.img" --ssh-key "$TOPO_TMP/key.pub" --egress open --user "$PV_USER" 2>&1)
expect_match "raw image without --image-format is refused" "not a qcow2 image" "$out"
expect_eq "raw image: nothing left" "" "$(leftovers bad7)"

t0=$(now_ms)
out=$(pv create img1 --image "$TOPO_TMP/base.qcow2" --ssh-key "$TOPO_TMP/key.pub" \
	--ca "$TOPO_TMP/ca.pem" --egress allowlist --allow pypi.org --disk 1G \
	--user "$PV_USER" --accel tcg 2>&1); rc=$?
echo "# create (image mode, import + seed): $(( $(now_ms) - t0 )) ms"
expect_eq "create img1 (image mode) exits 0" 0 "$rc"
info=$(qemu-img info --output=json "$PV_STATE/guests/img1/disk.qcow2" 2>&1)
expect_fail "the disk is an imported copy: no backing file" grep -q backing <<<"$info"
expect_match "the imported disk is grown to --disk" '"virtual-size": 1073741824' "$info"
seed=$PV_STATE/guests/img1/seed.iso
expect_match "seed volume label is cidata" "Volume id: cidata" "$(isoinfo -d -i "$seed" 2>&1)"
ud=$(isoinfo -R -x /user-data -i "$seed" 2>&1)
expect_match "user-data: the SSH key" "AAAAC3NzaC1lZDI1NTE5AAAAIMoatTestKeyOnly" "$ud"
expect_match "user-data: password locked, no sudo" "lock_passwd: true" "$ud"
expect_fail "user-data: no NOPASSWD, no default user" sh -c "printf '%s' \"\$1\" | grep -Eq 'NOPASSWD|default'" _ "$ud"
expect_match "user-data: root locked, SSH password login off" "ssh_pwauth: false" "$ud"
expect_match "user-data: gateway CA" "ca_certs:" "$ud"
expect_match "meta-data: fixed instance-id" "instance-id: moat-img1" "$(isoinfo -R -x /meta-data -i "$seed" 2>&1)"
expect_match "network-config: static address, gateway as DNS" \
	'addresses: \[ "10.77.0.4/24" \]' "$(isoinfo -R -x /network-config -i "$seed" 2>&1)"
args=$(pv qemu-args img1 2>&1)
expect_match "qemu-args img1: seed attached read-only" "seed.iso,if=none,id=seed0,format=raw,readonly=on" "$args"
expect_match "qemu-args img1: hardened" "-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny" "$args"
out=$(pv_gw destroy img1 2>&1)
expect_match "destroy img1" "destroyed img1" "$out"
expect_eq "destroy img1: nothing left" "" "$(leftovers img1)"
expect_ok "base image untouched by destroy" test -f "$TOPO_TMP/base.qcow2"

# --- gatewayd's answer to reload ----------------------------------------------
mkdir -p "$PV_RUN"
topo_bg "$NS_GW" fake-gwd socat UNIX-LISTEN:"$PV_RUN/gatewayd.sock",fork \
	SYSTEM:'read l; echo "error: refused by the test"'
wait_for 30 test -S "$PV_RUN/gatewayd.sock"
out=$(kcreate ref1 2>&1)
expect_match "gatewayd refuses the reload: create fails, says why" "refused by the test" "$out"
expect_eq "refused reload: nothing left" "" "$(leftovers ref1)"
pkill -f "UNIX-LISTEN:$PV_RUN/gatewayd.sock" ; rm -f "$PV_RUN/gatewayd.sock"
topo_bg "$NS_GW" fake-gwd-ok socat UNIX-LISTEN:"$PV_RUN/gatewayd.sock",fork \
	SYSTEM:'read l; echo "ok reloaded"'
wait_for 30 test -S "$PV_RUN/gatewayd.sock"
out=$(kcreate acc1 2>&1)
expect_match "gatewayd accepts the reload" "gatewayd reloaded" "$out"
pkill -f "UNIX-LISTEN:$PV_RUN/gatewayd.sock"; rm -f "$PV_RUN/gatewayd.sock"
# A destroy that gatewayd refuses to apply changes nothing but stopping the
# guest: its drop-in is back byte for byte (the same inode), its folder stays.
cp -p "$SB/acc1.conf" "$TOPO_TMP/acc1.before"
ino=$(stat -c %i "$SB/acc1.conf")
topo_bg "$NS_GW" fake-gwd-no socat UNIX-LISTEN:"$PV_RUN/gatewayd.sock",fork \
	SYSTEM:'read l; echo "error: refused by the test"'
refuser=${TOPO_PIDS[-1]}
wait_for 30 test -S "$PV_RUN/gatewayd.sock"
out=$(pv destroy acc1 2>&1); rc=$?
expect_eq "gatewayd refuses the reload: destroy fails" 1 "$([ $rc != 0 ] && echo 1 || echo 0)"
expect_match "... and says the guest was not destroyed" \
	'guest "acc1" not destroyed: gatewayd refused the configuration without it' "$out"
expect_ok "... its drop-in is back byte for byte" cmp "$TOPO_TMP/acc1.before" "$SB/acc1.conf"
expect_eq "... the same file (inode)" "$ino" "$(stat -c %i "$SB/acc1.conf" 2>&1)"
expect_ok "... its folder is kept" test -d "$PV_STATE/guests/acc1"
expect_eq "... no journal or hidden copy is left" "" "$(ls -A "$SB" | grep '^\.')"
kill "$refuser"; wait "$refuser" 2>/dev/null; rm -f "$PV_RUN/gatewayd.sock"
pv destroy acc1 >/dev/null 2>&1
expect_eq "with no gatewayd running, destroy then removes it all" "" "$(leftovers acc1)"

# --- start / stop / destroy -------------------------------------------------
ip -n "$NS_GW" tuntap add dev mt-k2 mode tap
out=$(pv_gw start k2 2>&1)
expect_match "tap busy: start fails and says why" "tap mt-k2 is busy" "$out"
expect_eq "tap busy: no QEMU, no runtime folder" "" \
	"$(qemu_of k2; ls -d "$PV_RUN/guests/k2" 2>/dev/null)"
ip -n "$NS_GW" link del mt-k2

t0=$(now_ms)
out=$(pv_gw start k1 2>&1)
t1=$(now_ms)
expect_match "start k1" "started k1: pid [0-9]+, tcg" "$out"
guest_wait k1 '.' 180; t2=$(now_ms)
echo "# start: $((t1 - t0)) ms to ready, $((t2 - t0)) ms to the first serial byte"
expect_fail "start k1 twice is refused" pv_gw start k1
rdir=$(stat -c '%a %U' "$PV_RUN/guests/k1" 2>&1)
expect_eq "QMP folder is 0700 and the QEMU user's" "700 $PV_USER" "$rdir"
expect_match "list: k1 running" "^k1 +10.77.0.2 +kernel +none +running" "$(pv list)"
expect_ok "console socket answers" sh -c "timeout 2 build/provision -c '$PV_CONF' --run-dir '$PV_RUN' console k1 </dev/null >/dev/null; [ \$? -ne 1 ]"
out=$(pv_gw stop --timeout 2 k1 2>&1)
expect_match "stop k1" "stopped k1" "$out"
expect_eq "after stop: no QEMU, no tap, no runtime folder" "" \
	"$(qemu_of k1; ip -n "$NS_GW" -br link show mt-k1 2>/dev/null; ls -d "$PV_RUN/guests/k1" 2>/dev/null)"
expect_match "list: k1 stopped" "^k1 .* stopped" "$(pv list)"
expect_ok "k1 starts again after stop" pv_gw start k1
out=$(pv_gw destroy --timeout 1 k1 2>&1)
expect_match "destroy a running guest" "destroyed k1" "$out"
expect_eq "destroy k1: nothing left" "" "$(leftovers k1)"
pv_gw destroy k2 >/dev/null 2>&1
expect_fail "destroy an unknown guest fails" pv destroy nosuch
expect_fail "destroy refuses sandboxes written by hand" pv destroy web
expect_eq "all guests gone: list --json is empty" "[]" "$(pv list --json)"
expect_eq "sandboxes.d is empty" "" "$(ls -A "$SB")"
expect_ok "the configuration still validates" valid

# --- pool exhaustion --------------------------------------------------------
cat >"$TOPO_TMP/small.conf" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/29"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
};
sandboxes = (
  { name = "a"; mac = "02:00:00:00:00:02"; address = "10.77.0.2"; tap = "ta"; egress = "none"; },
  { name = "b"; mac = "02:00:00:00:00:03"; address = "10.77.0.3"; tap = "tb"; egress = "none"; },
  { name = "c"; mac = "02:00:00:00:00:04"; address = "10.77.0.4"; tap = "tc"; egress = "none"; },
  { name = "d"; mac = "02:00:00:00:00:05"; address = "10.77.0.5"; tap = "td"; egress = "none"; },
  { name = "e"; mac = "02:00:00:00:00:06"; address = "10.77.0.6"; tap = "te"; egress = "none"; }
);
CONF
pv_setup "$TOPO_TMP/small.conf"
out=$(kcreate full1 2>&1)
expect_match "address pool exhausted: says why" "address pool exhausted" "$out"
expect_eq "pool exhausted: nothing left" "" "$(leftovers full1)"
tap_done
