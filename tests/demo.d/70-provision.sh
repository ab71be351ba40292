# 70-provision.sh -- demo part (sourced by tests/demo.sh; gatewayd is
# running): provision creates a real QEMU guest (TCG, Debian's cloud
# kernel, a busybox initramfs carrying containment-check); gatewayd reloads
# to take it in; the guest boots on a tap on moat0, scans outward, and its
# verdict is read from the serial log.  destroy removes every trace.
. tests/harness/guest-lib.sh

bold "9. provision: a real QEMU guest on the gateway (TCG, kernel mode)"
pv_demo() {
	local cc t0 t1
	guest_assets >/dev/null || { echo "  (no guest kernel: apt-get download failed; part skipped)"; return 1; }
	chmod 0755 "$TOPO_TMP"		# QEMU runs as $PV_USER
	PV_CONF=$DEMO_CONF PV_RUN=$TOPO_TMP/run PV_STATE=$DEMO_STATE
	cc="--gateway,$GW_ADDR,--internet,$INET_HTTP:80,--target,$LAN_HOST"
	cc="$cc,--resolver,203.0.113.53,--treat-as-public,203.0.113.0/24,--timeout,1500"
	echo "  \$ provision create vm1 --kernel vmlinuz-cloud --initrd initrd.gz --egress open --accel tcg"
	pv create vm1 --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
		--append "quiet moat.cc=$cc" --egress open --user "$PV_USER" \
		--accel tcg --memory 256 2>&1 | sed 's/^/  /'
	echo "  sandboxes.d/vm1.conf:"
	sed 's/^/    /' "$DEMO_DIR/sandboxes.d/vm1.conf"
	echo "  \$ gatewayd ctl sandboxes   (gatewayd reloaded when provision asked)"
	gw_ctl sandboxes | sed 's/^/    /'
	echo "  \$ provision qemu-args vm1   (abridged)"
	pv qemu-args vm1 | tr ' ' '\n' | grep -E '^-(sandbox|machine|cpu|netdev|nodefaults)$' -A1 |
		grep -v '^--$' | paste -d' ' - - | sed 's/^/    /'
	t0=$(now_ms)
	echo "  \$ provision start vm1"
	pv_gw start vm1 2>&1 | sed 's/^/  /'
	pv list | sed 's/^/  /'
	guest_wait vm1 'moat-guest: init started' 180; t1=$(now_ms)
	echo "  guest's init running after $(( t1 - t0 )) ms; containment-check runs inside it..."
	guest_wait vm1 'MOAT-VERDICT' 420
	echo "  serial log ($PV_STATE/guests/vm1/console.log), verdict:"
	guest_log vm1 | grep -E '^(moat-guest: network|containment-check:|  pass|[0-9]+ probes|verdict:|MOAT-VERDICT)' |
		sed 's/^/    /'
	echo "  boot to verdict: $(( $(now_ms) - t0 )) ms under TCG"
	guest_wait vm1 'powering off' 120
	pv_gw destroy --timeout 2 vm1 2>&1 | sed 's/^/  /'
	return 0
}
pv_demo
