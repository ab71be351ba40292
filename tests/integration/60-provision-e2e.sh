#!/usr/bin/env bash
# End to end: provision creates a kernel-mode guest (Debian's cloud kernel,
# a busybox initramfs carrying containment-check), the real policy is
# applied with nft-rules in the gateway namespace, provision starts the
# guest under TCG on a tap in that namespace, and the guest's verdict is
# read from its serial log: contained, the internet test server reachable,
# the LAN and the gateway host refused.  The guest then moves itself to
# another address and shows that nothing gets through.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

for b in build/provision build/nft-rules build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_up || { not_ok "topology comes up"; exit 1; }
topo_services || not_ok "services start"
# The gateway's resolver (a stub) and a "public" one for bypass probes.
topo_bg "$NS_GW" dns-gw $(as_dns_user) python3 $(topo_pub tests/harness/cc-dns.py) $GW_ADDR \
	allowed.test=$INET_HTTP rebind.test=$LAN_HOST --refuse denied.test
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py \
	203.0.113.53 denied.test=$INET_HTTP
topo_wait_port "$NS_GW" $GW_ADDR 53 && topo_wait_port "$NS_INET" 203.0.113.53 53 ||
	not_ok "stub resolvers start"
topo_banner "$NS_GW" $GW_ADDR 22 "SSH-2.0-gateway-host"

if guest_assets; then ok "guest kernel (cached) and initramfs with containment-check"
else not_ok "guest kernel (cached) and initramfs with containment-check" \
	"apt-get download of Debian's cloud kernel failed: this test needs apt access once"
	tap_done; exit 1; fi

cat >"$TOPO_TMP/base.conf" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
};
CONF
pv_setup "$TOPO_TMP/base.conf"
CC="--gateway,$GW_ADDR,--internet,$INET_HTTP:80,--target,$LAN_HOST,--resolver,203.0.113.53"
CC="$CC,--treat-as-public,203.0.113.0/24,--allow-name,allowed.test,--deny-name,denied.test"
CC="$CC,--rebind-name,safe.test,--timeout,3000"
SPOOF="moat.spoof=10.77.0.99 moat.spoof_targets=$LAN_HOST:22,$INET_HTTP:80,$GW_ADDR:22 moat.spoof_http=$INET_HTTP"
out=$(pv create e2e --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
	--append "quiet moat.cc=$CC $SPOOF" --egress open --user "$PV_USER" \
	--accel tcg --memory 256 2>&1)
expect_match "provision create e2e" "created e2e: kernel mode, address 10.77.0.2" "$out"
expect_ok "nft-rules applies the policy with the new sandbox" \
	in_ns "$NS_GW" build/nft-rules -c "$PV_CONF" apply

t0=$(now_ms)
out=$(pv_gw start e2e 2>&1)
expect_match "provision start e2e (TCG)" "started e2e: pid [0-9]+, tcg, tap mt-e2e on moat0" "$out"
expect_match "tap is on the bridge with port isolation" "master moat0.*isolated on|isolated on.*" \
	"$(ip -n "$NS_GW" -d link show mt-e2e 2>&1)"
expect_match "tap is owned by the QEMU user" "user $PV_USER" \
	"$(ip -n "$NS_GW" -d link show mt-e2e 2>&1)"
qpid=$(cat "$PV_RUN/guests/e2e/qemu.pid" 2>/dev/null)
expect_eq "QEMU runs as $PV_USER" "$PV_USER" "$(ps -o user= -p "${qpid:-0}" 2>/dev/null | tr -d ' ')"
expect_match "QEMU's seccomp sandbox is on" "Seccomp:[[:space:]]+2" \
	"$(cat /proc/${qpid:-0}/status 2>/dev/null)"
expect_match "list shows it running" '"name": "e2e".*"state": "running"' "$(pv list --json 2>&1)"

guest_wait e2e 'moat-guest: init started' 180; t_init=$(now_ms)
guest_wait e2e 'MOAT-VERDICT' 420; t_verdict=$(now_ms)
guest_wait e2e 'MOAT-SPOOF|powering off' 120
log=$(guest_log e2e)
echo "# boot to init: $(( t_init - t0 )) ms, to containment verdict: $(( t_verdict - t0 )) ms (TCG)"
expect_match "guest network came up on the tap" "network up 10.77.0.2/24 via 10.77.0.1" "$log"
expect_match "verdict from the serial log: contained" "^MOAT-VERDICT: contained" "$log"
expect_match "containment-check: 0 breaches, 0 failed controls" \
	"probes in .*: 0 breaches, 0 failed controls" "$log"
expect_match "internet test server reachable (controls passed)" \
	"[1-9][0-9]* controls passed" "$log"
sect() { printf '%s\n' "$log" | sed -n "/^== $1:/,/^\$/p"; }
expect_match "LAN host and private ranges refused (admin-prohibited)" \
	"ok +[0-9]+ more probes blocked" "$(sect private)"
expect_match "gateway host refused except DNS (admin-prohibited)" \
	"ok +[0-9]{4,} more probes blocked" "$(sect gateway)"
expect_eq "no probe breached" "" "$(printf '%s\n' "$log" | grep -E '^ *BREACH')"
expect_match "spoofed address: nothing got through" "^MOAT-SPOOF: nothing got through" "$log"
expect_eq "spoofed address: the internet server saw no request" "" \
	"$(grep moat-spoofed "$TOPO_TMP/http-$INET_HTTP-80.log" 2>/dev/null)"

# The guest powers itself off; QEMU exits and the tap goes with it.
wait_for 120 test ! -e "/proc/${qpid:-0}"
expect_fail "QEMU exited after the guest powered off" test -e "/proc/${qpid:-0}"
expect_fail "the tap went with QEMU" ip -n "$NS_GW" link show mt-e2e
[ "$TAP_FAILED" -gt 0 ] && guest_log e2e | grep -v '^\[' | tail -40 | sed 's/^/# console: /'
out=$(pv_gw destroy e2e 2>&1)
expect_match "provision destroy e2e" "destroyed e2e" "$out"
expect_eq "nothing of the guest is left" "" \
	"$(ls "$PV_STATE/guests" "$PV_RUN/guests" 2>/dev/null | grep e2e; ls "$TOPO_TMP/pv/sandboxes.d")"
tap_done
