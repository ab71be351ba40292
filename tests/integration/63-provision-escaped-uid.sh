#!/usr/bin/env bash
# What a guest that escaped into its QEMU can do with the guest's uid to
# provision and gatewayd, which act on its runtime folder (no QEMU here: a
# stand-in process of the guest's uid plays it).
#
# 1. A process of a uid may stop (SIGSTOP) any other process of that uid.
#    provision console, stop and gatewayd's console open the guest's
#    sockets from a child that has become that uid: a stopped child never
#    exits (its alarm waits too), so whoever waits for it would wait for
#    ever.  The stand-in stops every process of its uid, again and again,
#    while root's `provision console` and a member's (through gatewayd)
#    run: each must answer within seconds, and no stopped child may be
#    left behind holding one of gatewayd's job slots.
# 2. The pidfile is in the guest's folder: the stand-in, named like the
#    guest's QEMU, answers QMP and empties its pidfile when asked to power
#    down.  provision stop must still stop it, not take it for gone.
# 3. The stand-in answers QMP with events, a line a second, for ever, and
#    never with "return": provision stop gives up on QMP within its
#    deadline and kills it.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
MEMBER_PROVISION=$(topo_pub build/provision)	# run as a member: a copy anyone can run

UA=mcs$$
SPID=
cs_cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "${QPID:-}" ] && kill -KILL "$QPID" 2>/dev/null
	[ -n "${GUID:-}" ] && for p in $(stopped_of "$GUID"); do kill -KILL "$p"; done
	userdel "$UA" 2>/dev/null
}
alive() { local st; st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }
# stopped_of UID -- pids of the stopped processes whose real uid is UID
stopped_of() {
	local f uid st
	for f in /proc/[0-9]*/status; do
		uid=$(awk '/^Uid:/ { print $2 }' "$f" 2>/dev/null)
		st=$(awk '/^State:/ { print $2 }' "$f" 2>/dev/null)
		[ "$uid" = "$1" ] && [ "$st" = T ] && basename "$(dirname "$f")"
	done
}
topo_up || { not_ok "topology comes up"; exit 1; }
trap 'rc=$?; cs_cleanup; topo_down; exit $rc' EXIT
trap 'cs_cleanup; topo_down; exit 130' INT
trap 'cs_cleanup; topo_down; exit 143' TERM

bash gatewayd/install-users.sh
useradd -M -N -G moat -s /usr/sbin/nologin "$UA" || { not_ok "useradd $UA"; exit 1; }
pvr() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
# mpv SECONDS ARGS -- the member's provision, cut after SECONDS
mpv() { local s=$1; shift; timeout "$s" runuser -u "$UA" -- "$MEMBER_PROVISION" -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
now_ms() { date +%s%3N; }

chmod 0711 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/state" "$TOPO_TMP/sandboxes.d"
printf 'not a kernel\n' >"$TOPO_TMP/vmlinuz"
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
out=$(pvr create c-a --owner "$UA" --kernel "$TOPO_TMP/vmlinuz" --egress none 2>&1)
expect_match "root creates c-a for $UA" "created c-a" "$out"
GUID=$(sed -n 's/^uid = \([0-9]*\);/\1/p' "$TOPO_TMP/state/guests/c-a/guest.conf")
expect_match "c-a has a guest uid of its own" "^[0-9]+$" "$GUID"

# The guest's runtime folder, as provision start leaves it (owned by the
# guest's uid), with no console server in it: the child's connect fails
# at once, and the only way it can hang is being stopped.
mkdir -p "$TOPO_TMP/guests/c-a"
chown "$GUID:$GUID" "$TOPO_TMP/guests/c-a"; chmod 0700 "$TOPO_TMP/guests/c-a"

# The escaped guest: stops every process of its uid, for 120 s at most.
setpriv --reuid="$GUID" --regid="$GUID" --clear-groups /usr/bin/python3 -c '
import os, signal, time
end = time.time() + 120
while time.time() < end:
    try:
        os.kill(-1, signal.SIGSTOP)
    except OSError:
        pass' &
SPID=$!
sleep 0.5
expect_ok "the stand-in for the escaped guest runs as uid $GUID" kill -0 "$SPID"

slow=0
for i in $(seq 1 40); do
	t0=$(now_ms)
	timeout 10 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" console c-a </dev/null >/dev/null 2>&1
	[ $(( $(now_ms) - t0 )) -gt 8000 ] && slow=$((slow + 1))
done
expect_eq "root's provision console answers every time (40 tries) while the guest stops its uid's processes" 0 "$slow"

slow=0
for i in $(seq 1 40); do
	t0=$(now_ms)
	out=$(mpv 10 console c-a </dev/null 2>&1)
	[ $(( $(now_ms) - t0 )) -gt 8000 ] && slow=$((slow + 1))
done
expect_eq "$UA's console through gatewayd answers every time (40 tries)" 0 "$slow"
expect_match "... as a guest that is not running" "guest \"c-a\" is not running" "$out"

kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
sleep 0.5
expect_eq "no stopped child of the guest's uid is left behind" "" "$(stopped_of "$GUID" | xargs)"
out=$(mpv 10 list 2>&1); rc=$?
expect_eq "gatewayd still runs $UA's provision list (its job slots are free)" 0 "$rc"

# --- 2: a QEMU that empties its pidfile is still stopped -------------------
setpriv --reuid="$GUID" --regid="$GUID" --clear-groups /usr/bin/python3 - \
    "$TOPO_TMP/guests/c-a" >"$TOPO_TMP/fakeqemu.log" 2>&1 <<'PY' &
import os, socket, sys
d = sys.argv[1]
with open("/proc/self/comm", "w") as f:
    f.write("moat-c-a")
s = socket.socket(socket.AF_UNIX)
s.bind(d + "/qmp.sock"); s.listen(4)
with open(d + "/qemu.pid", "w") as f:
    f.write("%d\n" % os.getpid())
print("up", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b'{"QMP": {"version": {}}}\n')
    f = c.makefile("rb")
    for line in f:
        c.sendall(b'{"return": {}}\n')
        if b"system_powerdown" in line or b"quit" in line:
            open(d + "/qemu.pid", "w").close()	# "gone"
            print("asked:", line.decode().strip(), flush=True)
    c.close()
PY
QPID=$!; disown "$QPID"
wait_for 10 grep -q up "$TOPO_TMP/fakeqemu.log"
out=$(pvr list 2>&1)
expect_match "provision list takes the stand-in for c-a's QEMU" "c-a .*running" "$out"
out=$(timeout 60 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" stop --timeout 2 c-a 2>&1)
sleep 0.3
expect_match "the stand-in was asked to power down (and emptied its pidfile)" \
	"asked:.*system_powerdown" "$(cat "$TOPO_TMP/fakeqemu.log")"
expect_fail "provision stop stopped it all the same" alive "$QPID"
expect_match "... and said so" "stopped c-a" "$out"
kill -KILL "$QPID" 2>/dev/null

# --- 3: a QEMU that answers QMP with events for ever ----------------------
mkdir -p "$TOPO_TMP/guests/c-a"	# stop took the runtime folder away
chown "$GUID:$GUID" "$TOPO_TMP/guests/c-a"; chmod 0700 "$TOPO_TMP/guests/c-a"
setpriv --reuid="$GUID" --regid="$GUID" --clear-groups /usr/bin/python3 - \
    "$TOPO_TMP/guests/c-a" >"$TOPO_TMP/chatty.log" 2>&1 <<'PY' &
import os, socket, sys, time
d = sys.argv[1]
with open("/proc/self/comm", "w") as f:
    f.write("moat-c-a")
for n in ("qmp.sock", "qemu.pid"):
    try:
        os.unlink(d + "/" + n)
    except OSError:
        pass
s = socket.socket(socket.AF_UNIX)
s.bind(d + "/qmp.sock"); s.listen(4)
with open(d + "/qemu.pid", "w") as f:
    f.write("%d\n" % os.getpid())
print("up", flush=True)
while True:
    c, _ = s.accept()
    if os.fork() == 0:
        c.sendall(b'{"QMP": {"version": {}}}\n')
        while True:
            c.sendall(b'{"event": "STILL_HERE"}\n')
            time.sleep(1)
    c.close()
PY
QPID=$!; disown "$QPID"
wait_for 10 grep -q up "$TOPO_TMP/chatty.log"
expect_match "provision list takes the chatty stand-in for c-a's QEMU" "c-a .*running" "$(pvr list 2>&1)"
t0=$(now_ms)
out=$(timeout 90 build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" stop --timeout 2 c-a 2>&1); rc=$?
ms=$(( $(now_ms) - t0 ))
expect_eq "provision stop of a QEMU that only sends QMP events ends (not cut by timeout)" 0 "$rc"
expect_ok "... within 40 s (took $ms ms)" test "$ms" -lt 40000
sleep 0.3
expect_fail "... and the stand-in was killed" alive "$QPID"
kill -KILL "$QPID" 2>/dev/null
for p in $(stopped_of "$GUID"); do kill -KILL "$p"; done
tap_done
