#!/usr/bin/env bash
# The metrics textfile never blocks gatewayd's root process (issue 39,
# problem 5: a FIFO at its temporary name hung the root loop, and with it
# ctl status, allowlist lookups, grants and budgets).  A FIFO at the
# temporary name is left alone and the file still written; one at the
# final name is not replaced, with a log line; the folder is made when
# it is missing.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
DIR=$TOPO_TMP/collector/textfile
PROM=$DIR/moat.prom
FIFOS=()
cleanup_fifos() { # a reader for each FIFO, so nothing stays stuck on one
	local f readers=()
	for f in "${FIFOS[@]}"; do
		[ -p "$f" ] || continue
		timeout 1 cat "$f" >/dev/null 2>&1 <"$f" &
		readers+=($!)
	done
	# Those readers only: the daemons are this shell's children too.
	[ ${#readers[@]} -eq 0 ] || wait "${readers[@]}" 2>/dev/null
}
trap 'rc=$?; cleanup_fifos; topo_down; exit $rc' EXIT
cp examples/demo.conf "$GW_CONF"
sed -i "s|^gateway: {|gateway: {\n  metrics: { textfile = \"$PROM\"; interval = 1; };|" "$GW_CONF"
gw_start; expect_eq "gatewayd starts with a textfile in a folder that is not there" 0 $?
written() { grep -qs '^moat_up 1$' "$PROM"; }
expect_ok "the textfile is written" wait_for 10 written
expect_eq "its folder was made, 0755, root's" "755 root" "$(stat -c '%a %U' "$DIR")"
expect_eq "and the folder above it" "755 root" "$(stat -c '%a %U' "$TOPO_TMP/collector")"
expect_match "which is logged" "metrics: made the folder $DIR" "$(cat "$GW_LOG")"

answers() { timeout 5 build/gatewayd ctl -s "$GW_SOCK" status >/dev/null 2>&1; }
inode() { stat -c %i "$PROM" 2>/dev/null; }
renewed() { [ "$(inode)" != "$1" ] && written; }

# --- a FIFO at the temporary name ---------------------------------------------
# The name gatewayd used to open (O_CREAT without O_EXCL, blocking): it
# would wait there for a reader, forever.
TMP=$PROM.$GW_PID.tmp
mkfifo -m 0666 "$TMP"; FIFOS+=("$TMP")
ino=$(inode)
expect_ok "with a FIFO at the temporary name the textfile is still replaced" \
	wait_for 10 renewed "$ino"
expect_ok "ctl status answers" answers
ino=$(inode)
expect_ok "and the textfile is replaced again and again" wait_for 10 renewed "$ino"
expect_ok "ctl status still answers" answers
expect_eq "the FIFO is left where it was" fifo "$(stat -c %F "$TMP" | sed 's/.* //')"
expect_match "the FIFO is logged, once" \
	"^1 .*metrics: $TMP is a FIFO that is not ours: left alone, writing through another name" \
	"$(grep -c "is a FIFO that is not ours" "$GW_LOG") $(grep "is a FIFO that is not ours" "$GW_LOG")"
expect_eq "no other temporary file is left beside it" \
	"$(printf '%s\n' moat.prom "$(basename "$TMP")" | sort | tr '\n' ' ' | sed 's/ $//')" \
	"$(ls "$DIR" | sort | tr '\n' ' ' | sed 's/ $//')"
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
expect_match "an allowlist guest still resolves (its set is filled by the parent)" \
	"^203\.0\.113\.10$" \
	"$(in_ns "$TOPO-web" dig +time=2 +tries=3 @$GW_ADDR +short a.github.test A 2>&1)"
# A symbolic link there is not followed either.
rm -f "$TMP"; ln -s "$TOPO_TMP/elsewhere" "$TMP"
ino=$(inode)
expect_ok "with a symbolic link there the textfile is still replaced" wait_for 10 renewed "$ino"
expect_eq "and nothing is written through the link" no "$([ -e "$TOPO_TMP/elsewhere" ] && echo yes || echo no)"
rm -f "$TMP"

# --- a FIFO at the final name -----------------------------------------------------
rm -f "$PROM"; mkfifo -m 0666 "$PROM"; FIFOS+=("$PROM")
refused() { grep -q "metrics: $PROM is a FIFO, not a regular file: not replaced" "$GW_LOG"; }
expect_ok "a FIFO at the textfile's name is refused with a log line" wait_for 10 refused
sleep 2
expect_ok "ctl status answers" answers
expect_eq "the FIFO is not replaced" fifo "$(stat -c %F "$PROM" | sed 's/.* //')"
expect_eq "and logged once, not every second" 1 "$(grep -c "metrics: $PROM is a FIFO" "$GW_LOG")"
expect_eq "no temporary file is left beside it" "moat.prom" "$(ls "$DIR" | tr '\n' ' ' | sed 's/ $//')"
rm -f "$PROM"
expect_ok "once it is removed the textfile is written again" wait_for 10 written
expect_match "which is logged" "metrics: $PROM written again" "$(cat "$GW_LOG")"

# --- the folder removed while gatewayd runs ----------------------------------------
rm -rf "$TOPO_TMP/collector"
expect_ok "a folder removed under it is made again" wait_for 10 written
expect_eq "0755, root's" "755 root" "$(stat -c '%a %U' "$DIR")"
expect_ok "ctl status answers at the end" answers
tap_done
