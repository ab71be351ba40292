#!/usr/bin/env bash
# run: guest (a kernel-mode guest re-verifies its containment under TCG)
# A guest re-verifies on a short interval and gatewayd records it: a
# kernel-mode guest (Debian's cloud kernel, a busybox initramfs carrying
# the current containment-check) runs containment-check --quick every
# 10 s, as an image guest's timer does every reverify_interval, and
# prints each verdict on its serial console.  The serial logger keeps the
# latest in verdict.rec; provision list shows it with its age, and
# gatewayd in ctl sandboxes and the metrics.  The guest first prints one
# forged, one escaped and one overlong verdict line: refused and counted.
# Then the policy is opened (an exception lets the sandbox reach the LAN
# host's ssh): the guest's next check reports NOT CONTAINED, and the
# sandbox (quarantine_on_breach, from create --quarantine-on-breach) is
# quarantined to egress "none" until ctl clear-quarantine.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_up || { not_ok "topology comes up"; exit 1; }
topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet" || not_ok "internet HTTP server"
topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-moat-lan-host" || not_ok "LAN ssh stand-in"
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py 203.0.113.53 allowed.test=$INET_HTTP
topo_wait_port "$NS_INET" 203.0.113.53 53 || not_ok "upstream resolver stand-in"

chmod 0755 "$TOPO_TMP"		# QEMU (nobody) reaches the kernel and initramfs
if guest_assets; then ok "guest kernel (cached) and initramfs with containment-check"
else not_ok "guest kernel (cached) and initramfs with containment-check" \
	"apt-get download of Debian's cloud kernel failed: this test needs apt access once"
	tap_done; exit 1; fi

mkdir -p "$TOPO_TMP/state" "$TOPO_TMP/sandboxes.d"
conf() {	# conf EXCEPTIONS
	cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( $1 );
  state_dir = "$TOPO_TMP/state";
  metrics: { listen = "192.168.77.1:9477"; interval = 1; };
};
CONF
}
conf ""
gw_start; expect_eq "gatewayd starts" 0 $?
PV_STATE=$TOPO_TMP/state
pvr() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
scrape() { in_ns "$NS_LAN" env -i curl -s --max-time 3 "http://192.168.77.1:9477/metrics"; }
sbjson() { gw_ctl sandboxes --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }
pvjson() { pvr list --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }

CC="--gateway,$GW_ADDR,--internet,$INET_HTTP:80,--target,$LAN_HOST,--resolver,203.0.113.53"
CC="$CC,--treat-as-public,203.0.113.0/24,--proxy-port,3128,--timeout,3000"
out=$(pvr create rv --kernel "$GUEST_KERNEL" --initrd "$GUEST_INITRD" \
	--append "quiet moat.cc=$CC moat.reverify=10 moat.forge=1" --egress open \
	--quarantine-on-breach --user nobody --accel tcg --memory 256 2>&1)
expect_match "provision create rv --quarantine-on-breach" "created rv: kernel mode" "$out"
expect_match "the drop-in says quarantine_on_breach" "quarantine_on_breach = true;" \
	"$(cat "$TOPO_TMP"/sandboxes.d/rv.conf 2>&1)"
expect_ok "gatewayd reloads with the new sandbox" gw_ctl reload
t0=$(now_ms)
out=$(pvr start rv 2>&1)
expect_match "provision start rv (TCG)" "started rv: pid [0-9]+, tcg" "$out"

nverdicts() { grep -acE $'^MOAT-VERDICT: (contained|NOT CONTAINED|error)\r*$' "$PV_STATE/guests/rv/console.log" 2>/dev/null; }
twice() { [ "$(nverdicts)" -ge 2 ]; }
wait_for 600 twice || not_ok "the guest reports two verdicts" "$(guest_log rv | grep -v '^\[' | tail -20)"
echo "# boot to the second verdict: $(( $(now_ms) - t0 )) ms (TCG)"
expect_match "its verdicts are contained" "^MOAT-VERDICT: contained" "$(guest_log rv)"
expect_eq "no NOT CONTAINED yet" "" "$(guest_log rv | grep -a '^MOAT-VERDICT: NOT' | head -1)"
out=$(pvr list 2>&1)
expect_match "provision list: the latest verdict and its age" "^rv .* contained, [0-9]+(s|m[0-9]{2}s) ago" "$out"
at1=$(pvjson rv verdict_at); age=$(pvjson rv verdict_age)
expect_ok "list --json: verdict_at is a time, verdict_age small (${age}s)" test "${at1:-0}" -gt 0 -a "${age:-999}" -lt 300
expect_eq "list --json: the three forged lines were refused" 3 "$(pvjson rv verdict_rejected)"
# The next re-check moves the time on.
newer() { [ "$(pvjson rv verdict_at)" -gt "${at1:-0}" ] 2>/dev/null; }
wait_for 300 newer; expect_ok "a later re-check replaces the verdict's time" newer

gw_seen() { [ "$(sbjson rv verdict)" = contained ]; }
wait_for 20 gw_seen; expect_ok "ctl sandboxes --json: rv's verdict" gw_seen
m=$(scrape)
expect_match "metrics: moat_guest_verdict{sandbox=rv} 1" '^moat_guest_verdict\{sandbox="rv"\} 1$' "$m"
expect_match "metrics: its age" '^moat_guest_verdict_age_seconds\{sandbox="rv"\} [0-9]+$' "$m"
for r in forged overlong escaped; do
	expect_match "metrics: one $r line refused" "^moat_guest_verdict_lines_refused_total\{sandbox=\"rv\",reason=\"$r\"\} 1\$" "$m"
done

# Open the policy: the LAN host's ssh for this sandbox.
conf "{ to = \"$LAN_HOST/32\"; proto = \"tcp\"; ports = [ 22 ]; sandboxes = [ \"rv\" ]; }"
expect_ok "reload with an exception that opens the LAN host's ssh to rv" gw_ctl reload
exc() { in_ns "$NS_GW" nft list table inet moat 2>/dev/null | grep -F "$LAN_HOST" | grep -F 22; }
expect_ok "nft: the exception is in the policy" exc
t1=$(now_ms)
breach() { grep -aq '^MOAT-VERDICT: NOT CONTAINED' "$PV_STATE/guests/rv/console.log"; }
wait_for 300 breach; expect_ok "the guest's next check reports NOT CONTAINED" breach
echo "# exception to the guest's NOT CONTAINED: $(( $(now_ms) - t1 )) ms"
expect_match "... naming the LAN host" "BREACH.*$LAN_HOST" "$(guest_log rv)"
q() { [ "$(sbjson rv quarantined)" = True ]; }
wait_for 30 q; expect_ok "gatewayd quarantined rv" q
expect_eq "rv's egress is none" none "$(sbjson rv egress)"
expect_match "audit: the breach and the quarantine" '"event":"quarantine".*"sandbox":"rv"' "$(cat "$GW_AUDIT")"
expect_match "provision list shows NOT CONTAINED with its age" "^rv .* NOT CONTAINED, [0-9]+(s|m[0-9]{2}s) ago" "$(pvr list 2>&1)"
expect_fail "nft: the exception is gone (egress none takes none)" exc
out=$(gw_ctl clear-quarantine rv 2>&1)
expect_match "ctl clear-quarantine rv" "quarantine of rv cleared" "$out"
expect_eq "rv's egress is open again" open "$(sbjson rv egress)"

pvr stop --force rv >/dev/null 2>&1
[ "$TAP_FAILED" -gt 0 ] && guest_log rv | grep -av '^\[' | tail -30 | sed 's/^/# console: /'
tap_done
