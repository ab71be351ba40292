#!/usr/bin/env bash
# What a guest's uid can put in its own files never steers root's
# provision: no guest is booted here.  An image-mode guest is created; then
# its QEMU user (as an escaped guest would) plants a FIFO as its pidfile,
# and its console log carries terminal escapes and forged verdict lines.
# `list` and `stop` must not hang on the FIFO, and `list` shows only a
# known verdict word, labelled as the guest's own report.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

[ -x build/provision ] || { not_ok "build/provision is built"; tap_done; exit 1; }
topo_up || { not_ok "topology comes up"; exit 1; }
pv_setup examples/demo.conf

qemu-img create -q -f qcow2 "$TOPO_TMP/base.qcow2" 64M
chmod 0644 "$TOPO_TMP/base.qcow2"
echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMoatTestKeyOnly test@moat' >"$TOPO_TMP/key.pub"
out=$(pv create g1 --image "$TOPO_TMP/base.qcow2" --ssh-key "$TOPO_TMP/key.pub" \
	--egress none --user "$PV_USER" --accel tcg 2>&1)
expect_match "create g1 (image mode, not started)" "created g1" "$out"
G=$PV_STATE/guests/g1
R=$PV_RUN/guests/g1

# --- a FIFO for a pidfile (the runtime folder is the QEMU user's) ---------
mkdir -p "$R" && chown "$PV_USER" "$R" && chmod 0700 "$R"
runuser -u "$PV_USER" -- mkfifo "$R/qemu.pid"
expect_ok "the QEMU user planted a FIFO as g1's pidfile" test -p "$R/qemu.pid"
out=$(timeout 20 "$PV_BIN" -c "$PV_CONF" --run-dir "$PV_RUN" list 2>&1); rc=$?
expect_eq "list does not hang on a FIFO pidfile (exit 0, not 124)" 0 "$rc"
expect_match "list: g1 stopped" "^g1 .* stopped" "$out"
out=$(timeout 20 "$PV_BIN" -c "$PV_CONF" --run-dir "$PV_RUN" list --json 2>&1); rc=$?
expect_eq "list --json does not hang either" 0 "$rc"
out=$(timeout 20 "$PV_BIN" -c "$PV_CONF" --run-dir "$PV_RUN" stop g1 2>&1); rc=$?
expect_eq "stop does not hang on it (exit 0, not 124)" 0 "$rc"

tap_done
