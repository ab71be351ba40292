#!/usr/bin/env bash
# provision-bench.sh -- wall times of `provision create` (kernel and image
# mode), of `start` to ready and to the first serial byte, and of boot to
# the containment verdict under TCG.  Runs in a namespace topology of its
# own (tests/harness/topology.sh); every packet stays in it.
#
#   bench/provision-bench.sh [--runs N] [--markdown]
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one run of each
# step, and no boot to the containment verdict (a minute of TCG).
set -u
cd "$(dirname "$0")/.."
RUNS=5; MD=0
while [ $# -gt 0 ]; do
	case $1 in --runs) RUNS=$2; shift ;; --markdown) MD=1 ;; esac; shift
done
SMOKE=0; [ "${BENCH_SMOKE:-0}" = 1 ] && SMOKE=1 RUNS=1
. tests/harness/tap.sh		# for wait_for
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
range() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo "–" hi}'; }

topo_up >/dev/null || { echo "bench: topology failed" >&2; exit 1; }
topo_services >/dev/null
guest_assets >/dev/null || { echo "bench: no guest kernel (apt access needed once)" >&2; exit 1; }
topo_bg "$NS_GW" dns-gw $(as_dns_user) python3 $(topo_pub tests/harness/cc-dns.py) $GW_ADDR
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py 203.0.113.53
pv_setup examples/demo.conf
qemu-img create -q -f qcow2 "$TOPO_TMP/base.qcow2" 2G; chmod 0644 "$TOPO_TMP/base.qcow2"
echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchKey bench@moat' >"$TOPO_TMP/key.pub"

ck=(); ci=(); sr=(); ss=()
for i in $(seq "$RUNS"); do
	t0=$(now_ms); pv create k$i --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
		--append "quiet" --egress none --user "$PV_USER" --accel tcg --memory 256 >/dev/null 2>"$TOPO_TMP/err" ||
		{ echo "bench: create k$i failed: $(cat "$TOPO_TMP/err")" >&2; exit 1; }
	ck+=($(( $(now_ms) - t0 )))
	t0=$(now_ms); pv create i$i --image "$TOPO_TMP/base.qcow2" --ssh-key "$TOPO_TMP/key.pub" \
		--egress none --user "$PV_USER" --accel tcg --disk 8G >/dev/null 2>"$TOPO_TMP/err" ||
		{ echo "bench: create i$i failed: $(cat "$TOPO_TMP/err")" >&2; exit 1; }
	ci+=($(( $(now_ms) - t0 )))
done
# start -> ready and -> first serial byte; the guest is stopped right after.
for i in $(seq "$RUNS"); do
	t0=$(now_ms); pv_gw start k$i >/dev/null 2>"$TOPO_TMP/err" ||
		{ echo "bench: start k$i failed: $(cat "$TOPO_TMP/err")" >&2; exit 1; }
	t1=$(now_ms)
	guest_wait k$i '.' 60 || { echo "bench: k$i wrote nothing on its console" >&2; exit 1; }
	t2=$(now_ms)
	sr+=($(( t1 - t0 ))); ss+=($(( t2 - t0 )))
	pv_gw stop --force k$i >/dev/null 2>&1
done
for i in $(seq "$RUNS"); do pv destroy k$i >/dev/null 2>&1; pv destroy i$i >/dev/null 2>&1; done

# Boot to containment verdict behind the real policy (one run: ~20-30 s).
tinit=- tv=- scan="not run" verdict="not run (BENCH_SMOKE)"
[ $SMOKE = 1 ] || {
cc="--gateway,$GW_ADDR,--internet,$INET_HTTP:80,--target,$LAN_HOST,--resolver,203.0.113.53"
cc="$cc,--treat-as-public,203.0.113.0/24"
pv create v1 --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" --append "quiet moat.cc=$cc" \
	--egress open --user "$PV_USER" --accel tcg --memory 256 >/dev/null 2>&1
in_ns "$NS_GW" build/nft-rules -c "$PV_CONF" apply >/dev/null 2>&1 || echo "bench: nft-rules apply failed" >&2
t0=$(now_ms); pv_gw start v1 >/dev/null 2>&1
guest_wait v1 'moat-guest: init started' 60; tinit=$(( $(now_ms) - t0 ))
guest_wait v1 'MOAT-VERDICT' 180; tv=$(( $(now_ms) - t0 ))
verdict=$(guest_log v1 | grep -o 'MOAT-VERDICT: .*' | head -1)
scan=$(guest_log v1 | grep -oE '[0-9]+ probes in [0-9.]+ s' | head -1)
pv_gw destroy --force v1 >/dev/null 2>&1
}

row() { printf '| %s | %s ms | %s ms |\n' "$1" "$(printf '%s\n' "${@:2}" | median)" "$(printf '%s\n' "${@:2}" | range)"; }
if [ $MD -eq 1 ]; then
	echo "| step | median | range |"; echo "|---|---|---|"
	row "create, kernel mode (drop-in validated, blank 1 GiB qcow2)" "${ck[@]}"
	row "create, image mode (overlay + cloud-init seed ISO)" "${ci[@]}"
	row "start → QEMU ready (tap, bridge, pidfile, sockets)" "${sr[@]}"
	row "start → first serial byte" "${ss[@]}"
	echo "| start → guest /init running (TCG) | $tinit ms | 1 run |"
	echo "| start → containment verdict (TCG; $scan) | $tv ms | 1 run |"
	echo; echo "Verdict: \`$verdict\`; $RUNS runs each unless stated; $(nproc) CPUs, $(uptime | sed 's/.*load/load/')."
else
	printf 'create kernel mode: median %s ms (%s)\n' "$(printf '%s\n' "${ck[@]}" | median)" "$(printf '%s\n' "${ck[@]}" | range)"
	printf 'create image mode:  median %s ms (%s)\n' "$(printf '%s\n' "${ci[@]}" | median)" "$(printf '%s\n' "${ci[@]}" | range)"
	printf 'start to ready:     median %s ms (%s)\n' "$(printf '%s\n' "${sr[@]}" | median)" "$(printf '%s\n' "${sr[@]}" | range)"
	printf 'start to 1st serial byte: median %s ms (%s)\n' "$(printf '%s\n' "${ss[@]}" | median)" "$(printf '%s\n' "${ss[@]}" | range)"
	echo "start to guest init (TCG): $tinit ms"
	echo "start to containment verdict (TCG): $tv ms ($scan) -- $verdict"
fi
