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

# --- what the guest printed on its serial console ------------------------
# The real first-boot report, then what a guest can print afterwards: a
# verdict word followed by terminal escapes (clear screen, set the
# title), a verdict inside another line, and a later, forged one.
printf 'boot\r\nMOAT-VERDICT: NOT CONTAINED\r\nMOAT-VERDICT: contained\033[2J\033]0;owned\a\r\nGOT: MOAT-VERDICT: contained\r\n' >"$G/console.log"
printf 'MOAT-VERDICT: contained \033[1A\033[2K\r\n' >>"$G/console.log"
out=$(pv list 2>&1)
expect_match "list: the first verdict, as the guest's claim" "^g1 .* NOT CONTAINED \(guest\)" "$out"
expect_fail "list prints no escape byte from the log" grep -q $'\033' <<<"$out"
expect_fail "... and nothing of the forged lines" grep -q "owned" <<<"$out"
out=$(pv list --json 2>&1)
expect_match "list --json: verdict and its source" \
	'"name": "g1".*"verdict": "NOT CONTAINED", "verdict_source": "guest"' "$out"
expect_fail "list --json: no escape from the log" grep -q '033\|u001b' <<<"$out"
# Recorded on its own (by the serial logger, see 63): that word wins.
printf 'contained\n' >"$G/verdict"
expect_match "list: the recorded verdict" "^g1 .* contained \(guest\)" "$(pv list 2>&1)"
printf 'contained\033[2J\n' >"$G/verdict"
expect_match "a verdict file that is not a known word is ignored" \
	"^g1 .* NOT CONTAINED \(guest\)" "$(pv list 2>&1)"
printf 'boot\r\n' >"$G/console.log"; rm -f "$G/verdict"
expect_match "no verdict: -" "^g1 .* stopped +- +- +-" "$(pv list 2>&1)"
expect_match "no verdict: null in JSON" '"verdict": null, "verdict_source": null' \
	"$(pv list --json 2>&1)"

tap_done
