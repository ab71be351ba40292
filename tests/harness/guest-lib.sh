# guest-lib.sh -- helpers for tests that boot real QEMU guests with
# provision (sourced after tap.sh and topology.sh).
#
# The kernel is Debian's cloud kernel, downloaded once into
# build/guest-cache (GUEST_CACHE); the initramfs is rebuilt per run so it
# carries the current build/containment-check.  QEMU runs as "nobody" under
# `ip netns exec $NS_GW`, so topo_down's namespace sweep kills it on every
# exit path, and its tap (not persistent) goes with it.

GUEST_CACHE=${GUEST_CACHE:-build/guest-cache}
PV_BIN=${PV_BIN:-build/provision}
PV_USER=${PV_USER:-nobody}

# guest_assets -- sets GUEST_KERNEL and GUEST_INITRD; fails loudly.
guest_assets() {
	local tree
	tree=$(bash tests/harness/guest-kernel.sh "$GUEST_CACHE") || return 1
	# QEMU's user reads it: a copy outside the checkout (see topo_pub).
	GUEST_KERNEL=$(topo_pub "$(ls "$tree"/boot/vmlinuz-*-cloud-amd64 | head -1)") || return 1
	GUEST_INITRD=$TOPO_TMP/initrd.gz
	bash tests/harness/guest-initramfs.sh "$GUEST_INITRD" "$tree" \
		build/containment-check || return 1
	chmod 0644 "$GUEST_INITRD"
}

# pv_setup CONF_SOURCE -- copy a config into $TOPO_TMP with state_dir set
# there; sets PV_CONF and the pv function (provision with test paths).
pv_setup() {
	# QEMU runs as $PV_USER and must reach the files under $TOPO_TMP.
	chmod 0755 "$TOPO_TMP"
	PV_CONF=$TOPO_TMP/pv/moat.conf
	PV_RUN=$TOPO_TMP/run
	PV_STATE=$TOPO_TMP/state
	mkdir -p "$TOPO_TMP/pv"
	sed "s|^};|  state_dir = \"$PV_STATE\";\n};|" "$1" >"$PV_CONF"
}
pv() { "$PV_BIN" -c "$PV_CONF" --run-dir "$PV_RUN" "$@"; }
pv_gw() { ip netns exec "$NS_GW" "$PV_BIN" -c "$PV_CONF" --run-dir "$PV_RUN" "$@"; }

# guest_wait NAME REGEX SECONDS -- wait for REGEX in NAME's console log.
guest_wait() { wait_for "$3" guest_seen "$1" "$2"; }
guest_seen() { grep -Eq "$2" "$PV_STATE/guests/$1/console.log" 2>/dev/null; }
guest_log() { cat "$PV_STATE/guests/$1/console.log" 2>/dev/null; }

# Milliseconds since the epoch, for timings.
now_ms() { date +%s%3N; }
