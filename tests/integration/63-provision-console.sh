#!/usr/bin/env bash
# provision console for members: two users in group moat (created here,
# removed on exit) each own a running kernel-mode guest (QEMU under TCG,
# a busybox initramfs that ticks on its serial console and echoes what it
# reads).  The guests' console sockets are in the QEMU user's 0700 folder:
# a member cannot open them.  gatewayd opens the owner's and passes the
# descriptor back over the control socket; nobody else gets it.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh
MEMBER_PROVISION=$(topo_pub build/provision)	# run as a member or nobody: a copy anyone can run

UA=mca$$ UB=mcb$$
CPID= SPID=
con_cleanup() {
	[ -n "$CPID" ] && kill "$CPID" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	userdel "$UA" 2>/dev/null
	userdel "$UB" 2>/dev/null
}
topo_up || { not_ok "topology comes up"; con_cleanup; exit 1; }
trap 'rc=$?; con_cleanup; topo_down; exit $rc' EXIT
trap 'con_cleanup; topo_down; exit 130' INT
trap 'con_cleanup; topo_down; exit 143' TERM

bash gatewayd/install-users.sh
for u in $UA $UB; do
	useradd -M -N -G moat -s /usr/sbin/nologin "$u" || { not_ok "useradd $u"; exit 1; }
done
as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
# Root's provision, with gatewayd's run directory (where it looks for
# guests' console sockets), in the gateway namespace (the taps' bridge).
pvr() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
# A member's console in the background: exec, so that $! is runuser's pid,
# which passes a kill on to provision (QEMU serves one console client at a
# time: one left behind would hold the guest's console).

chmod 0755 "$TOPO_TMP"		# QEMU (nobody) reaches the kernel and initramfs
tree=$(bash tests/harness/guest-kernel.sh "$GUEST_CACHE") &&
    KERNEL=$(ls "$tree"/boot/vmlinuz-*-cloud-amd64 | head -1) &&
    bash tests/harness/tick-initramfs.sh "$TOPO_TMP/tick.cpio.gz" &&
    chmod 0644 "$TOPO_TMP/tick.cpio.gz" ||
    { not_ok "guest kernel (cached) and tick initramfs" "needs apt access once"; exit 1; }

mkdir -p "$TOPO_TMP/state" "$TOPO_TMP/sandboxes.d"
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
};
CONF
gw_start; expect_eq "gatewayd starts" 0 $?

for g in "c-a $UA" "c-b $UB"; do
	set -- $g
	out=$(pvr create "$1" --owner "$2" --user nobody --kernel "$KERNEL" \
	    --initrd "$TOPO_TMP/tick.cpio.gz" --egress none --accel tcg --memory 192 2>&1)
	expect_match "root creates $1 for $2" "created $1: kernel mode" "$out"
	out=$(pvr start "$1" 2>&1)
	expect_match "$1 starts (TCG)" "started $1: pid [0-9]+" "$out"
done
t0=$(now_ms)
guest_up() { grep -aq MOAT-TICK "$TOPO_TMP/state/guests/$1/console.log" 2>/dev/null; }
wait_for 300 guest_up c-a && wait_for 300 guest_up c-b ||
	not_ok "both guests tick on their serial consoles" "$(tail -5 "$TOPO_TMP"/state/guests/*/console.log)"
echo "# both tick guests up (TCG): $(( $(now_ms) - t0 )) ms"

expect_fail "$UA cannot open her console socket herself (QEMU's 0700 folder)" \
	as "$UA" python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
	"$TOPO_TMP/guests/c-a/console.sock"

# Her console, through gatewayd: output from the guest, and her input
# reaches it.  stdin is a FIFO held open here, so the console stays up.
mkfifo "$TOPO_TMP/in"
exec 7<>"$TOPO_TMP/in"
(exec runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" console c-a) \
	<"$TOPO_TMP/in" >"$TOPO_TMP/con-a.out" 2>&1 &
CPID=$!
seen() { grep -aq "$1" "$2" 2>/dev/null; }
if wait_for 60 seen MOAT-TICK "$TOPO_TMP/con-a.out"; then
	ok "$UA reads her guest's serial console (provision console, fd from gatewayd)"
else not_ok "$UA reads her guest's serial console" "$(cat "$TOPO_TMP/con-a.out")"; fi
echo "hello-$$" >&7
if wait_for 60 seen "GOT:hello-$$" "$TOPO_TMP/con-a.out"; then
	ok "what $UA types reaches her guest (it echoes it back)"
else not_ok "what $UA types reaches her guest" "$(tail -5 "$TOPO_TMP/con-a.out")"; fi
kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null; CPID=
exec 7>&-

# Bob's: refused, with the answer a missing sandbox gets.
out=$(timeout 30 runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	console c-b </dev/null 2>&1); rc=$?
expect_eq "$UA's console c-b (owned by $UB) fails" 1 "$rc"
expect_match "refused: no sandbox \"c-b\" owned by $UA" "no sandbox \"c-b\" owned by $UA" "$out"
expect_fail "nothing of c-b's console reached $UA" grep -q MOAT-TICK <<<"$out"
out=$(timeout 30 runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	console nosuch </dev/null 2>&1)
expect_match "a sandbox that does not exist gets the same answer" \
	"no sandbox \"nosuch\" owned by $UA" "$out"
expect_match "the refusal is audited" \
	"\"control-refused\".*\"verb\":\"console\".*\"sandbox\":\"c-b\"" "$(cat "$GW_AUDIT")"

# Control: the console of c-b works for its owner.
exec 7<>"$TOPO_TMP/in"
(exec runuser -u "$UB" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" console c-b) \
	<"$TOPO_TMP/in" >"$TOPO_TMP/con-b.out" 2>&1 &
CPID=$!
if wait_for 60 seen MOAT-TICK "$TOPO_TMP/con-b.out"; then
	ok "$UB reads c-b's console (the refusal was about ownership)"
else not_ok "$UB reads c-b's console" "$(cat "$TOPO_TMP/con-b.out")"; fi
kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null; CPID=
exec 7>&-

# A QEMU that was taken over owns its runtime folder: it swaps its console
# socket for a symlink to a socket anyone may open (mode 0666, served by
# root, like a system bus), whose server logs who connects (SO_PEERCRED).
# The connection must come from the QEMU user, never from root, and the
# socket must not be handed on (its server is not the QEMU user).
python3 - "$TOPO_TMP/peer.sock" >"$TOPO_TMP/peer.log" 2>&1 <<'PY' &
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    pid, uid, gid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET,
        socket.SO_PEERCRED, struct.calcsize("3i")))
    print("peer uid=%d" % uid, flush=True)
    c.close()
PY
SPID=$!
wait_for 30 seen listening "$TOPO_TMP/peer.log"
NOBODY=$(id -u nobody)
as nobody ln -sf "$TOPO_TMP/peer.sock" "$TOPO_TMP/guests/c-a/console.sock"
out=$(timeout 30 runuser -u "$UA" -- build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	console c-a </dev/null 2>&1); rc=$?
expect_eq "console symlinked by its QEMU to a root-served 0666 socket: refused" 1 "$rc"
expect_match "... as not running" "guest \"c-a\" is not running" "$out"
out=$(timeout 30 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" console c-a </dev/null 2>&1); rc=$?
expect_eq "root's own provision console through it: refused too" 1 "$rc"
peers2() { [ "$(grep -c 'peer uid=' "$TOPO_TMP/peer.log")" -ge 2 ]; }
wait_for 10 peers2
expect_eq "the socket's server saw only the QEMU user (uid $NOBODY), twice" \
	"peer uid=$NOBODY peer uid=$NOBODY" "$(grep 'peer uid=' "$TOPO_TMP/peer.log" | xargs)"
expect_match "gatewayd audited the console as failed" \
	'"control-done".*"verb":"console".*"sandbox":"c-a".*"result":"failed"' "$(cat "$GW_AUDIT")"
kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=

# The same with gatewayd's control socket (0660, group moat).  gatewayd connects as
# that QEMU user, never as root, so the owner gets no root control session.
as nobody ln -sf "$TOPO_TMP/gatewayd.sock" "$TOPO_TMP/guests/c-a/console.sock"
out=$(printf 'status\n' | timeout 30 runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" \
	--run-dir "$TOPO_TMP" console c-a 2>&1)
expect_match "console symlinked by its QEMU to the control socket: refused" \
	"guest \"c-a\" is not running" "$out"
expect_fail "... and no control session as root came through" grep -q "uptime" <<<"$out"

# The serial log is capped: c-b prints 1.2 MB on its serial console (the
# tick guest's "FLOOD N", read by a console client meanwhile, as QEMU
# stalls its serial output while no client is connected), more than the
# 1 MiB cap.  console.log stays at or under it, the part before is in
# console.log.1 (also at most 1 MiB), the log goes on after the cut, and
# the files are root's: QEMU's user (a guest that escaped) cannot write
# them.
LOGB=$TOPO_TMP/state/guests/c-b
t0=$(now_ms)
timeout 400 python3 - "$TOPO_TMP/guests/c-b/console.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"FLOOD 1200000\n")
tail = b""
while b"FLOOD-DONE" not in tail:
    d = s.recv(65536)
    if not d: break
    tail = (tail + d)[-64:]
PY
flooded() { grep -aq "FLOOD-DONE" "$LOGB/console.log" 2>/dev/null; }
if wait_for 30 flooded; then ok "c-b printed 1.2 MB on its serial console"
else not_ok "c-b printed 1.2 MB on its serial console" "$(ls -l "$LOGB")"; fi
echo "# 1.2 MB out of the serial console (TCG): $(( $(now_ms) - t0 )) ms"
cur=$(stat -c %s "$LOGB/console.log"); old=$(stat -c %s "$LOGB/console.log.1" 2>/dev/null || echo 0)
expect_ok "console.log is at or under 1 MiB ($cur bytes)" test "$cur" -le 1048576
expect_ok "console.log.1 holds the part before, at most 1 MiB ($old bytes)" \
	test "$old" -gt 0 -a "$old" -le 1048576
expect_ok "nothing lost at the cut: the two hold more than 1 MiB" test $((cur + old)) -gt 1048576
expect_eq "console.log is root's, 0600" "0:0 600" "$(stat -c '%u:%g %a' "$LOGB/console.log")"
expect_fail "QEMU's user cannot write its console log" \
	runuser -u nobody -- sh -c "echo x >>'$LOGB/console.log'"

pvr stop --force c-a >/dev/null 2>&1
out=$(timeout 30 runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" \
	console c-a </dev/null 2>&1)
expect_match "a stopped guest's console: not running" "guest \"c-a\" is not running" "$out"
tap_done
