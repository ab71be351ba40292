#!/usr/bin/env bash
# nft-delta.sh -- one sandbox added to a policy of 10, 1000 and 5000
# sandboxes (a script that prints a table, not a timed test).  Side by
# side in one run:
#   1. the apply of the increment through the library (nftr_update: one
#      transaction with only the new sandbox's objects) vs `nft -f` of the
#      same increment written by hand, on the same policy;
#   2. `gatewayd ctl reload` end to end after the sandbox's drop-in is
#      written (config load, build, delta, children told), and the apply's
#      share of it as gatewayd logs it.
# Everything runs in network namespaces this script creates and removes;
# no packet is sent.  Every loop is bounded by RUNS.  Writes its section
# of docs/benchmarks.md.
#
# usage: bench/nft-delta.sh [--no-doc]   (as root, after make)
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one run at 10
# sandboxes; no doc.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
topo_trap
RUNS=${RUNS:-11}
SIZES=${SIZES:-"10 1000 5000"}
DOC=1; [ "${1:-}" = "--no-doc" ] && DOC=0
[ "${BENCH_SMOKE:-0}" = 1 ] && RUNS=1 SIZES=10 DOC=0
BENCH=$TOPO_TMP/nft-bench
GWD=$ROOT/build/gatewayd

make -s build/gatewayd build/libnftrules.a build/libmoat.a >/dev/null || exit 1
cc -O2 -std=c17 -D_GNU_SOURCE -Ilib -Inft-rules -o "$BENCH" bench/nft-bench.c \
	build/libnftrules.a build/libmoat.a $(pkg-config --libs libnftnl libmnl libconfig) ||
	exit 1

. bench/gen-conf.sh
GEN_GATEWAY="  state_dir = \"$TOPO_TMP/state\"; manage_network = false;"

# The same increment and its undo in nft syntax.
cat >"$TOPO_TMP/inc.nft" <<EOF
add set inet moat allow_new { type ipv4_addr; flags timeout; }
add chain inet moat sb_new
add rule inet moat sb_new ip daddr @allow_new tcp dport 80 accept
add rule inet moat sb_new ip daddr @allow_new tcp dport 443 accept
add rule inet moat sb_new goto refuse_allowlist
add element inet moat sandboxes { $NEW_ADDR : goto sb_new }
add element inet moat intercept { $NEW_ADDR }
add element bridge moat guest_ports { "$NEW_TAP" }
add element bridge moat guest_ip { "$NEW_TAP" . $NEW_MAC . $NEW_ADDR }
add element bridge moat guest_arp { "$NEW_TAP" . $NEW_MAC . $NEW_MAC . $NEW_ADDR }
EOF
cat >"$TOPO_TMP/dec.nft" <<EOF
delete element inet moat sandboxes { $NEW_ADDR }
delete element inet moat intercept { $NEW_ADDR }
delete element bridge moat guest_ports { "$NEW_TAP" }
delete element bridge moat guest_ip { "$NEW_TAP" . $NEW_MAC . $NEW_ADDR }
delete element bridge moat guest_arp { "$NEW_TAP" . $NEW_MAC . $NEW_MAC . $NEW_ADDR }
flush chain inet moat sb_new
delete chain inet moat sb_new
delete set inet moat allow_new
EOF

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
flush_tables() { in_ns "$1" nft delete table inet moat 2>/dev/null; in_ns "$1" nft delete table bridge moat 2>/dev/null; }

# --- 1. the increment: library vs nft ----------------------------------------
NS=$TOPO-delta
topo_ns "$NS" || exit 1
declare -A LIB MSGS NFT
for n in $SIZES; do
	gen_conf "$n" "$TOPO_TMP/b$n.conf"
	gen_conf "$n" "$TOPO_TMP/p$n.conf" new
	read -r LIB[$n] MSGS[$n] < <(in_ns "$NS" "$BENCH" update "$TOPO_TMP/b$n.conf" \
		"$TOPO_TMP/p$n.conf" "$RUNS") || exit 1
	flush_tables "$NS"
	"$BENCH" render "$TOPO_TMP/b$n.conf" >"$TOPO_TMP/b$n.nft" || exit 1
	in_ns "$NS" nft -f "$TOPO_TMP/b$n.nft" || exit 1
	NFT[$n]=$(in_ns "$NS" bash -c '
		for i in $(seq '"$RUNS"'); do
			t0=$EPOCHREALTIME; nft -f "$1" || exit 1; t1=$EPOCHREALTIME
			echo "($t1 - $t0) * 1000" | bc -l
			nft -f "$2" || exit 1
		done' _ "$TOPO_TMP/inc.nft" "$TOPO_TMP/dec.nft" | median) || exit 1
	flush_tables "$NS"
	printf '# %5d sandboxes: library %.2f ms (%d messages), nft -f %.2f ms\n' \
		"$n" "${LIB[$n]}" "${MSGS[$n]}" "${NFT[$n]}" >&2
done

# --- 3. provision create on the same gatewayd -------------------------------
# create (kernel mode) = its own work (loading the config, picking an
# address, the disk image, the guest's folder), the config check (the
# whole configuration loaded again with the new drop-in, then renamed into
# place) and the reload it asks gatewayd for.  Its parts are cut at
# syscalls: the drop-in's rename ends the check, which starts once
# qemu-img has exited; the reload runs from the connect to gatewayd's
# socket to the end.  strace stops only at those few syscalls
# (--seccomp-bpf), every other one runs at full speed.
declare -A CREATE CHECK CRELOAD
printf '\x7fELF-not-a-kernel' >"$TOPO_TMP/kernel"
chmod 755 "$TOPO_TMP"; chmod 644 "$TOPO_TMP/kernel"
create_runs() {
	local n=$1 i tr t0 t1 out="$TOPO_TMP/gw$n/create"
	for i in $(seq "$RUNS"); do
		tr=$TOPO_TMP/gw$n/strace.$i
		t0=$EPOCHREALTIME
		in_ns "$GNS" strace -f --seccomp-bpf -ttt -o "$tr" \
			-e trace=execve,exit_group,rename,renameat,renameat2,connect \
			"$ROOT/build/provision" -c "$conf" --run-dir "$TOPO_TMP/gw$n/run" \
			create c$i --kernel "$TOPO_TMP/kernel" --egress allowlist \
			--user nobody --accel tcg --memory 256 >/dev/null 2>"$tr.err" ||
			{ echo "provision create failed at $n sandboxes:"; cat "$tr.err"; exit 1; }
		t1=$EPOCHREALTIME
		awk -v t0="$t0" -v t1="$t1" '
			NR == 1 { first = $2 }
			/execve\(.*qemu-img/ { pid[$1] = 1 }
			($1 in pid) && /exit_group/ { img = $2 }
			/rename.*sandboxes\.d/ && !ren { ren = $2 }
			/connect\(.*gatewayd\.sock/ && !con { con = $2 }
			END { if (!img) img = first
				printf "%.1f %.1f %.1f\n", (t1 - t0) * 1000,
				(ren - img) * 1000, (t1 - con) * 1000 }' "$tr" >>"$out"
		"$ROOT/build/provision" -c "$conf" --run-dir "$TOPO_TMP/gw$n/run" \
			destroy c$i >/dev/null 2>&1 ||
			{ echo "provision destroy failed at $n sandboxes"; exit 1; }
	done
	CREATE[$n]=$(awk '{print $1}' "$out" | median)
	CHECK[$n]=$(awk '{print $2}' "$out" | median)
	CRELOAD[$n]=$(awk '{print $3}' "$out" | median)
	printf '# %5d sandboxes: provision create %.1f ms: config check %.1f ms, reload %.1f ms\n' \
		"$n" "${CREATE[$n]}" "${CHECK[$n]}" "${CRELOAD[$n]}" >&2
}

# --- 2. gatewayd ctl reload end to end -------------------------------------
# gatewayd without its children (-X): what is timed is the parent's reload.
declare -A RELOAD APPLY FULLAPPLY
for n in $SIZES; do
	GNS=$TOPO-gw$n
	topo_ns "$GNS" || exit 1
	in_ns "$GNS" ip link add up0 type veth peer name up0p
	in_ns "$GNS" ip link add moat0 type bridge
	mkdir -p "$TOPO_TMP/gw$n/sandboxes.d" "$TOPO_TMP/state"
	conf=$TOPO_TMP/gw$n/moat.conf sock=$TOPO_TMP/gw$n/run/gatewayd.sock log=$TOPO_TMP/gw$n/log
	mkdir -p "$TOPO_TMP/gw$n/run"
	cp "$TOPO_TMP/b$n.conf" "$conf"
	in_ns "$GNS" "$GWD" -d -X -c "$conf" -s "$sock" -a "$TOPO_TMP/gw$n/audit" >"$log" 2>&1 &
	TOPO_PIDS+=($!)
	ctl() { "$GWD" ctl -s "$sock" "$@"; }
	wait_for 120 ctl status >/dev/null 2>&1 || { echo "gatewayd did not start:"; cat "$log"; exit 1; }
	FULLAPPLY[$n]=$(grep -o 'policy: replaced, [0-9]* message(s) in [0-9.]* ms' "$log" | head -1 |
		awk '{print $(NF-1)}')
	for i in $(seq "$RUNS"); do
		printf '%s\n' "${NEW_SB#\{ name = \"new\"; }" | sed 's/ }$//' >"$TOPO_TMP/gw$n/sandboxes.d/new.conf"
		t0=$EPOCHREALTIME; ctl reload >/dev/null || exit 1; t1=$EPOCHREALTIME
		echo "($t1 - $t0) * 1000" | bc -l >>"$TOPO_TMP/gw$n/reload"
		rm "$TOPO_TMP/gw$n/sandboxes.d/new.conf"
		ctl reload >/dev/null || exit 1
	done
	RELOAD[$n]=$(median <"$TOPO_TMP/gw$n/reload")
	# Every other logged apply is an add; all of them are one sandbox.
	APPLY[$n]=$(grep -o 'policy: updated, [0-9]* message(s) in [0-9.]* ms' "$log" |
		awk 'NR % 2 == 1 {print $(NF-1)}' | median)
	[ "$(grep -c 'policy: replaced' "$log")" -eq 1 ] ||
		{ echo "a reload of gatewayd at $n sandboxes replaced the whole policy:"; grep 'policy:' "$log"; exit 1; }
	printf '# %5d sandboxes: ctl reload %.1f ms, of which apply %.2f ms\n' \
		"$n" "${RELOAD[$n]}" "${APPLY[$n]}" >&2
	create_runs "$n"
done

# --- the table -------------------------------------------------------------
table() {
	echo "Kernel $(uname -r), $(nproc) CPUs, nftables $(nft --version | awk '{print $2}'),"
	echo "libnftnl $(pkg-config --modversion libnftnl); median of $RUNS runs; $(date -u +%Y-%m-%d)."
	echo
	echo "| sandboxes | netlink messages | library nftr_update (ms) | nft -f same increment (ms) | library / nft | gatewayd ctl reload, end to end (ms) | of which apply (ms) | full replace at start (ms) | provision create (ms) | of which config check (ms) | of which reload (ms) |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for n in $SIZES; do
		printf '| %d | %d | %.2f | %.2f | %.2f | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f |\n' "$n" "${MSGS[$n]}" \
			"${LIB[$n]}" "${NFT[$n]}" "$(echo "${LIB[$n]} / ${NFT[$n]}" | bc -l)" \
			"${RELOAD[$n]}" "${APPLY[$n]}" "${FULLAPPLY[$n]:-0}" \
			"${CREATE[$n]}" "${CHECK[$n]}" "${CRELOAD[$n]}"
	done
}
out=$(table)
echo "$out"

if [ $DOC = 1 ]; then
	doc=docs/benchmarks.md
	[ -e $doc ] || printf '# moat benchmarks\n' >$doc
	# Only the measured block between the markers is replaced.
	section=$(printf '<!-- nft-delta:begin -->\n%s\n<!-- nft-delta:end -->' "$out")
	if grep -q '<!-- nft-delta:begin -->' $doc; then
		awk -v s="$section" '/<!-- nft-delta:begin -->/ {print s; skip=1}
			/<!-- nft-delta:end -->/ {skip=0; next} !skip' $doc >$doc.new && mv $doc.new $doc
	else
		printf '\n## nft-rules: one sandbox added\n\n%s\n' "$section" >>$doc
	fi
	echo "# wrote $doc" >&2
fi
