# 70-provision.sh -- demo part (sourced by tests/demo.sh with the topology
# up and moat's policy applied): provision creates a real QEMU guest (TCG,
# Debian's cloud kernel, a busybox initramfs carrying containment-check),
# starts it on a tap on moat0 in the gateway namespace, and the guest's
# containment verdict is read from its serial log.  The guest powers itself
# off; provision destroy removes every trace; the demo policy is restored.
. tests/harness/guest-lib.sh

bold "7. provision: a real QEMU guest on the gateway (TCG, kernel mode)"
pv_demo() {
	local cc out t0 t1 rc
	guest_assets >/dev/null || { echo "  (no guest kernel: apt-get download failed; part skipped)"; return 1; }
	pv_setup "$DEMO_CONF"
	cc="--gateway,$GW_ADDR,--internet,$INET_HTTP:80,--target,$LAN_HOST"
	cc="$cc,--resolver,203.0.113.53,--treat-as-public,203.0.113.0/24,--timeout,1500"
	echo "  \$ provision create vm1 --kernel vmlinuz-cloud --initrd initrd.gz --egress open --accel tcg"
	pv create vm1 --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
		--append "quiet moat.cc=$cc" --egress open --user "$PV_USER" \
		--accel tcg --memory 256 2>&1 | sed 's/^/  /'
	sed 's/^/    /' "$TOPO_TMP/pv/sandboxes.d/vm1.conf"
	# The policy now includes vm1 (the same config plus its drop-in).
	in_ns "$NS_GW" $BIN/nft-rules -c "$PV_CONF" apply &&
		echo "  nft-rules apply: policy reloaded with sandbox vm1"
	in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 2>/dev/null
	if ! in_ns "$NS_GW" ss -Hlun "sport = :53" 2>/dev/null | grep -q .; then
		topo_bg "$NS_GW" pv-demo-dns python3 tests/harness/cc-dns.py $GW_ADDR --lifetime 120
		topo_wait_port "$NS_GW" $GW_ADDR 53
	fi
	echo "  \$ provision qemu-args vm1   (abridged)"
	pv qemu-args vm1 | tr ' ' '\n' | grep -E '^-(sandbox|machine|cpu|netdev|nodefaults)$' -A1 |
		grep -v '^--$' | paste -d' ' - - | sed 's/^/    /'
	t0=$(now_ms)
	echo "  \$ provision start vm1"
	pv_gw start vm1 2>&1 | sed 's/^/  /'
	pv list | sed 's/^/  /'
	guest_wait vm1 'moat-guest: init started' 40; t1=$(now_ms)
	echo "  guest's init running after $(( t1 - t0 )) ms; containment-check runs inside it..."
	guest_wait vm1 'MOAT-VERDICT' 90
	echo "  serial log ($PV_STATE/guests/vm1/console.log), verdict:"
	guest_log vm1 | grep -E '^(moat-guest: network|containment-check:|  pass|[0-9]+ probes|verdict:|MOAT-VERDICT)' |
		sed 's/^/    /'
	echo "  boot to verdict: $(( $(now_ms) - t0 )) ms under TCG"
	guest_wait vm1 'powering off' 20
	pv_gw destroy --timeout 2 vm1 2>&1 | sed 's/^/  /'
	# Back to the demo's own policy for the parts that follow.
	in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" apply >/dev/null 2>&1
	in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" add web 60000 $INET_HTTP >/dev/null 2>&1
	return 0
}
pv_demo
