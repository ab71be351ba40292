#!/usr/bin/env bash
# A team-shared host against a hostile member.  Two real users in group
# moat (made here, removed on exit); alice attacks bob through gatewayd
# and provision, and each attempt fails with a clear error and leaves no
# state: an image whose backing file is bob's disk, an image with an
# external data file, json: and nbd: backing files (and nothing connects
# to the listener they name), a FIFO, an image over her disk quota, a
# file swapped for a symlink to bob's disk after create, a parent folder
# swapped during create, and bob's sandbox name in every verb.  An import
# that hangs is killed at gateway.import_timeout and holds no lock.  Then two
# guests boot: their QEMUs run as two different uids, and one guest's uid
# can neither read the other's disk, log, kernel or QMP socket nor signal
# its QEMU.  A destroyed guest's uid is free again; one in use never is.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh
MEMBER_PROVISION=$(topo_pub build/provision)	# run as a member or nobody: a copy anyone can run

UA=mia$$ UB=mib$$
iso_cleanup() {
	userdel "$UA" 2>/dev/null
	userdel "$UB" 2>/dev/null
}
topo_up || { not_ok "topology comes up"; iso_cleanup; exit 1; }
trap 'rc=$?; iso_cleanup; topo_down; exit $rc' EXIT
trap 'iso_cleanup; topo_down; exit 130' INT
trap 'iso_cleanup; topo_down; exit 143' TERM
command -v isoinfo >/dev/null || { not_ok "isoinfo is installed"; tap_done; exit 1; }
guest_assets || { not_ok "guest kernel and initramfs"; tap_done; exit 1; }

bash gatewayd/install-users.sh
for u in $UA $UB; do
	useradd -M -N -G moat -s /usr/sbin/nologin "$u" || { not_ok "useradd $u"; exit 1; }
done
chmod 711 "$TOPO_TMP"
A=$TOPO_TMP/home-a B=$TOPO_TMP/home-b
mkdir -p "$A" "$B" "$TOPO_TMP/etc/sandboxes.d"
chown "$UA" "$A"; chown "$UB" "$B"; chmod 700 "$A" "$B"
STATE=$TOPO_TMP/state SBD=$TOPO_TMP/etc/sandboxes.d
GW_CONF=$TOPO_TMP/etc/moat.conf
cat >"$GW_CONF" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  state_dir = "$STATE";
  import_timeout = 20;
};
quotas = ( { user = "$UA"; sandboxes = 6; disk_gb = 3; } );
CONF
gw_start; expect_eq "gatewayd starts" 0 $?

as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
apv() { as $UA "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
bpv() { as $UB "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
rpv() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
# nothing NAME -- every trace a create of NAME could leave: none.
nothing() {
	ls -d "$STATE/guests/$1" "$SBD/$1.conf" 2>/dev/null
	ls -A "$SBD" | grep '^\.'
	find "$STATE/guests" -name import.tmp
}
conf_of() { sed -n "s/^$2 = \"\{0,1\}\([^\";]*\)\"\{0,1\};/\1/p" "$STATE/guests/$1/guest.conf"; }

# --- bob's sandbox, alice's files ------------------------------------------
echo "# bob's placeholder kernel" >"$B/k"; chown "$UB" "$B/k"
out=$(bpv create b1 --kernel "$B/k" --egress none 2>&1)
expect_match "bob creates b1 through gatewayd" "created b1: .*uid [0-9]+" "$out"
BDISK=$STATE/guests/b1/disk.qcow2
expect_ok "bob's disk exists" test -f "$BDISK"
BSUM=$(md5sum <"$BDISK")
as $UA sh -c "echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAliceKeyOnly alice@test' >'$A/key.pub'"
as $UA qemu-img create -q -f qcow2 "$A/good.qcow2" 64M

# --- images that reach beyond themselves -------------------------------------
acreate() { local n=$1 img=$2; shift 2
	apv create "$n" --image "$img" --ssh-key "$A/key.pub" --egress none --disk 1G "$@"; }
as $UA qemu-img create -q -f qcow2 -u -b "$BDISK" -F qcow2 "$A/chain.qcow2" 64M
out=$(acreate x1 "$A/chain.qcow2" 2>&1)
expect_match "a backing chain onto bob's disk is refused, and says why" "names a backing file" "$out"
expect_eq "backing chain: nothing left" "" "$(nothing x1)"
as $UA qemu-img create -q -f qcow2 -o data_file="$A/data.raw" "$A/df.qcow2" 64M
out=$(acreate x2 "$A/df.qcow2" 2>&1)
expect_match "an external data file is refused, and says why" "external data file" "$out"
expect_eq "data file: nothing left" "" "$(nothing x2)"

# A listener where the json:/nbd: backing files point, inside the
# gateway's namespace (where gatewayd runs provision).
PORT=$((20000 + $$ % 20000)) HITS=$TOPO_TMP/nbd-hits
topo_bg "$NS_GW" nbd-sink socat TCP-LISTEN:$PORT,bind=127.0.0.1,reuseaddr,fork \
	SYSTEM:"echo hit >>$HITS"
topo_wait_port "$NS_GW" 127.0.0.1 $PORT
wait_for 30 test -s "$HITS"; : >"$HITS"	# the wait's own probe
as $UA qemu-img create -q -f qcow2 -u -F raw -b \
	"json:{\"driver\":\"nbd\",\"server\":{\"type\":\"inet\",\"host\":\"127.0.0.1\",\"port\":\"$PORT\"}}" \
	"$A/json.qcow2" 64M
as $UA qemu-img create -q -f qcow2 -u -F raw -b "nbd://127.0.0.1:$PORT" "$A/nbd.qcow2" 64M
for f in json nbd; do
	out=$(acreate x3$f "$A/$f.qcow2" 2>&1)
	expect_match "a $f: backing file is refused, and says why" "names a backing file" "$out"
	expect_fail "$f: the error carries nothing about connections" grep -qiE "connect|refused|socket|port" <<<"$out"
	expect_eq "$f: nothing left" "" "$(nothing x3$f)"
done
expect_eq "nothing connected to the listener the images name" "" "$(cat "$HITS")"

as $UA mkfifo "$A/fifo"
out=$(timeout 60 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" create x4 \
	--image "$A/fifo" --ssh-key "$A/key.pub" --egress none 2>&1 </dev/null)
rc=$?
expect_match "root's own provision refuses a FIFO at once" "rc=[12] .*not a regular file" "rc=$rc $out"
out=$(timeout 60 runuser -u $UA -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	create x4 --image "$A/fifo" --ssh-key "$A/key.pub" --egress none --disk 1G 2>&1 </dev/null)
rc=$?
expect_match "a member's FIFO is refused at once" "rc=1 .*not a regular file" "rc=$rc $out"
expect_eq "FIFO: nothing left" "" "$(nothing x4)"
# A member's own client, not provision: a pipe passed where the image
# should be is refused by what receives it, and so are too many files.
rawcreate() {	# rawcreate NFDS -- alice's create with a pipe as --image
	as $UA timeout 60 python3 - "$GW_SOCK" "$A/key.pub" "$1" <<'PY'
import os, socket, sys
sock, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r, w = os.pipe()
k = os.open(key, os.O_RDONLY)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
req = b"create x7 --image /pipe --ssh-key /key --egress none --disk 1G\n"
socket.send_fds(s, [req], [r, k] + [k] * (n - 2))
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.decode(errors="replace"))
PY
}
out=$(rawcreate 2 2>&1); rc=$?
expect_match "a pipe sent as the image is refused at once" "rc=0 .*--image /dev/fd/3: not a regular file \(a FIFO, device or folder is refused\)" "rc=$rc $(tr '\n' ' ' <<<"$out")"
expect_eq "pipe: nothing left" "" "$(nothing x7)"
out=$(rawcreate 9 2>&1)
expect_match "more files than any create needs: the connection is dropped" "too many descriptors" "$out"
expect_eq "too many: nothing left" "" "$(nothing x7)"
out=$(build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" create x6 --image "$A/chain.qcow2" \
	--ssh-key "$A/key.pub" --egress none 2>&1)
expect_match "root's own provision refuses a backing chain too" "names a backing file" "$out"
expect_eq "root's refused create: nothing left" "" "$(nothing x6)"

as $UA qemu-img create -q -f qcow2 "$A/big.qcow2" 4G
out=$(acreate x5 "$A/big.qcow2" 2>&1)
expect_match "an image larger than alice's disk quota is refused" "more than the owner's disk quota" "$out"
expect_eq "over quota: nothing left" "" "$(nothing x5)"
expect_eq "bob's disk is unchanged" "$BSUM" "$(md5sum <"$BDISK")"

# --- nothing is reopened by name ---------------------------------------------
as $UA sh -c "echo 'alice kernel $$' >'$A/k'"
out=$(apv create a1 --kernel "$A/k" --egress none 2>&1)
expect_match "alice creates a1 (kernel mode)" "created a1" "$out"
as $UA ln -sf "$BDISK" "$A/k"
expect_eq "a1's kernel is its own imported copy" "$STATE/guests/a1/kernel" "$(conf_of a1 kernel)"
args=$(rpv qemu-args --accel tcg a1 2>/dev/null)
expect_match "start gives QEMU the imported kernel" "-kernel $STATE/guests/a1/kernel" "$args"
expect_fail "start never names alice's path (now a symlink to bob's disk)" grep -qF "$A/k" <<<"$args"
expect_eq "the imported kernel is what alice had when she created a1" "alice kernel $$" "$(cat "$STATE/guests/a1/kernel")"

# A parent-folder swap during create: alice's key is opened, then (while
# the create waits for the sandboxes.d lock, which the test holds) its
# folder becomes a symlink to a root-only folder holding another key.  A
# provision that read the key by name after that point would read root's.
R=$TOPO_TMP/rootonly; mkdir -p "$R"; chmod 700 "$R"
echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIRootOnlyKey root@host' >"$R/key.pub"
as $UA mkdir "$A/d"; as $UA cp "$A/key.pub" "$A/d/key.pub"
lock_waited() { grep -q -- "-> FLOCK .*:$(stat -c %i "$SBD") " /proc/locks; }
exec 9<"$SBD"; flock 9
acreate a2 "$A/good.qcow2" --ssh-key "$A/d/key.pub" >"$TOPO_TMP/a2.out" 2>&1 &
CR=$!
wait_for 120 lock_waited
as $UA mv "$A/d" "$A/d.old"; as $UA ln -s "$R" "$A/d"
expect_ok "the folder was swapped while the create waited" test -L "$A/d"
flock -u 9; exec 9<&-
wait $CR
expect_match "alice creates a2" "created a2" "$(cat "$TOPO_TMP/a2.out")"
ud=$(isoinfo -R -x /user-data -i "$STATE/guests/a2/seed.iso" 2>&1)
expect_match "a2's seed holds the key alice opened" "AliceKeyOnly" "$ud"
expect_fail "a2's seed holds nothing of the root-only file" grep -q RootOnlyKey <<<"$ud"

# --- bob's name in every verb --------------------------------------------------
for v in start stop destroy; do
	out=$(apv $v b1 2>&1)
	expect_match "alice cannot $v bob's b1" "no sandbox \"b1\" owned by $UA" "$out"
done
out=$(apv create b1 --kernel "$A/d.old/key.pub" --egress none 2>&1)
expect_match "alice cannot create over bob's b1" "already exists" "$out"
expect_ok "b1 is still bob's" grep -q "owner = \"$UB\"" "$SBD/b1.conf"
expect_eq "bob's disk is still unchanged" "$BSUM" "$(md5sum <"$BDISK")"

kcreate() { rpv create "$1" --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
	--egress none --accel tcg --memory 128; }

# --- a stuck import times out, and holds up nobody meanwhile --------------------
M=$TOPO_TMP/mark; mkdir -m 1777 "$M"
printf '#!/bin/sh\necho $$ >>%s/pids\nexec sleep 600\n' "$M" >"$TOPO_TMP/stuck-qemu-img"
chmod 755 "$TOPO_TMP/stuck-qemu-img"
( timeout 150 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	--qemu-img "$TOPO_TMP/stuck-qemu-img" create s1 --image "$A/good.qcow2" \
	--ssh-key "$A/key.pub" --egress none >"$TOPO_TMP/s1.out" 2>&1
  echo "rc=$?" >>"$TOPO_TMP/s1.out" ) &
wait_for 60 test -s "$M/pids"
expect_match "another create finishes while s1's import is stuck" "created s2" \
	"$(timeout 60 ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	create s2 --kernel "$GUEST_KERNEL" --egress none 2>&1)"
expect_ok "s1 is still stuck meanwhile" kill -0 "$(head -1 "$M/pids")"
wait_for 120 grep -q "^rc=" "$TOPO_TMP/s1.out"
out=$(cat "$TOPO_TMP/s1.out")
expect_match "the stuck import is killed at gateway.import_timeout, and says so" \
	"did not finish within 20 s" "$out"
expect_match "the stuck create fails (exit 1)" "^rc=1$" "$out"
expect_eq "the stuck create: nothing left" "" "$(nothing s1)"
expect_fail "the stuck tool is gone" kill -0 "$(head -1 "$M/pids")"
rpv destroy s2 >/dev/null 2>&1

# --- a file that never answers a read ---------------------------------------------
# A member can serve a file from a FUSE filesystem of their own and hand it
# over as --ssh-key: root's provision must give up at gateway.import_timeout.
F=$TOPO_TMP/fuse; mkdir -p "$F"
/usr/bin/python3 tests/harness/stuckfs.py "$F" >/dev/null 2>&1 &
FUSE_PID=$!; TOPO_PIDS+=("$FUSE_PID")
if wait_for 30 mountpoint -q "$F"; then
	t0=$SECONDS
	out=$(timeout 150 runuser -u $UA -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" \
		create f1 --image "$A/good.qcow2" --ssh-key "$F/stuck.txt" --egress none --disk 1G 2>&1 </dev/null)
	expect_match "an --ssh-key that never answers is given up at gateway.import_timeout" \
		"--ssh-key /dev/fd/[0-9]+: not read within 20 s" "$out"
	expect_ok "... and the create ends well before the test's own limit" test $((SECONDS - t0)) -lt 100
	expect_eq "the stuck-file create: nothing left" "" "$(nothing f1)"
	expect_match "the next create is not held up" "created f2" \
		"$(apv create f2 --image "$A/good.qcow2" --ssh-key "$A/key.pub" --egress none --disk 1G 2>&1)"
	apv destroy f2 >/dev/null 2>&1
else
	not_ok "a FUSE filesystem mounts (tests/harness/stuckfs.py)"
fi
umount -l "$F"; kill -9 "$FUSE_PID" 2>/dev/null

# --- one uid per guest -----------------------------------------------------------
expect_ok "create u1" kcreate u1
expect_ok "create u2" kcreate u2
U1=$(conf_of u1 uid) U2=$(conf_of u2 uid)
expect_match "u1 has a uid of its own" "^[0-9]+$" "$U1"
expect_ok "u1 and u2 have different uids" test "$U1" != "$U2"
expect_eq "u1's folder: root's, u1's group, 0710" "710 0:$U1" "$(stat -c '%a %u:%g' "$STATE/guests/u1")"
expect_eq "u1's disk: u1's, 0600" "600 $U1" "$(stat -c '%a %u' "$STATE/guests/u1/disk.qcow2")"
expect_eq "u1's record stays root's" "600 0" "$(stat -c '%a %u' "$STATE/guests/u1/guest.conf")"
expect_match "start u1" "started u1" "$(rpv start u1 2>&1)"
expect_match "start u2" "started u2" "$(rpv start u2 2>&1)"
P1=$(cat "$TOPO_TMP/guests/u1/qemu.pid") P2=$(cat "$TOPO_TMP/guests/u2/qemu.pid")
uid_of() { awk '/^Uid:/ { print $2 }' "/proc/$1/status"; }
expect_eq "u1's QEMU runs as u1's uid" "$U1" "$(uid_of "$P1")"
expect_eq "u2's QEMU runs as u2's uid" "$U2" "$(uid_of "$P2")"
as1() { setpriv --reuid="$U1" --regid="$U1" --clear-groups "$@"; }
expect_match "u1's uid reads its own disk" "QFI" "$(as1 head -c 3 "$STATE/guests/u1/disk.qcow2")"
for f in disk.qcow2 console.log kernel initrd; do
	out=$(as1 cat "$STATE/guests/u2/$f" 2>&1 >/dev/null)
	expect_match "u1's uid cannot read u2's $f (EACCES)" "Permission denied" "$out"
done
out=$(as1 socat -u OPEN:/dev/null UNIX-CONNECT:"$TOPO_TMP/guests/u2/qmp.sock" 2>&1)
expect_match "u1's uid cannot open u2's QMP socket (EACCES)" "Permission denied" "$out"
out=$(as1 socat -u OPEN:/dev/null UNIX-CONNECT:"$TOPO_TMP/guests/u2/console.sock" 2>&1)
expect_match "u1's uid cannot open u2's console socket (EACCES)" "Permission denied" "$out"
out=$(as1 kill -0 "$P2" 2>&1)
expect_match "u1's uid cannot signal u2's QEMU (EPERM)" "Operation not permitted" "$out"
out=$(as1 cat "$BDISK" 2>&1 >/dev/null)
expect_match "u1's uid cannot read bob's disk" "Permission denied" "$out"

expect_match "destroy u1" "destroyed u1" "$(rpv destroy --timeout 1 u1 2>&1)"
expect_ok "create u3 while u2 runs" kcreate u3
U3=$(conf_of u3 uid)
expect_ok "u3 never gets u2's uid (in use)" test "$U3" != "$U2"
expect_eq "u3 gets u1's uid back: destroy released it" "$U1" "$U3"
rpv destroy --timeout 1 u2 >/dev/null 2>&1
rpv destroy u3 >/dev/null 2>&1
tap_done
