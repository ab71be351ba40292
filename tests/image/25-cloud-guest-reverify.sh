#!/usr/bin/env bash
# A real Debian 12 cloud image (tests/image/build-image.sh, cached) made
# by provision with --reverify-interval 20 re-verifies its containment on
# the systemd timer its seed installs: after the first-boot verdict,
# moat-reverify.timer runs containment-check --quick and prints the next
# verdicts on the serial console; provision list and gatewayd show the
# latest with its age.  Under TCG, behind the real policy (gatewayd in
# this run's gateway namespace).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
if IMG=$(bash tests/image/build-image.sh); then
	ok "Debian 12 cloud image (cached: $IMG)"
else not_ok "Debian 12 cloud image" "mmdebstrap needs apt access on its first run"
	tap_done; exit 1; fi

topo_up || { not_ok "topology comes up"; exit 1; }
topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet" || not_ok "internet HTTP server"
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py 203.0.113.53
chmod 0755 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/sandboxes.d"
mkdir -p -m 0755 "$TOPO_TMP/state"
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$TOPO_TMP/state";
};
CONF
gw_start; expect_eq "gatewayd starts" 0 $?
PV_STATE=$TOPO_TMP/state
pv() { build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
pv_gw() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
pvjson() { pv list --json | python3 -c "import json,sys
for s in json.load(sys.stdin):
    if s['name']=='$1': print(s['$2'])"; }

ssh-keygen -q -t ed25519 -N '' -C "tester@moat" -f "$TOPO_TMP/id" || not_ok "ssh key"
out=$(pv --containment-check build/containment-check create rv --image "$IMG" \
	--egress open --ssh-key "$TOPO_TMP/id.pub" --user nobody --reverify-interval 20 \
	--accel tcg --memory 1024 --disk 4G 2>&1)
expect_match "provision create rv --reverify-interval 20 (image mode)" "created rv: image mode" "$out"
expect_match "the drop-in records the interval" "reverify_interval = 20;" \
	"$(cat "$TOPO_TMP/sandboxes.d/rv.conf" 2>&1)"
gw_ctl reload >/dev/null 2>&1

t_start=$(now_ms)
out=$(pv_gw start rv 2>&1)
expect_match "provision start rv (TCG)" "started rv: pid [0-9]+, tcg" "$out"
case $out in *"started rv"*) ;; *) tap_done; exit 1 ;; esac
nverdicts() { grep -acE $'^MOAT-VERDICT: (contained|NOT CONTAINED|error)\r*$' "$PV_STATE/guests/rv/console.log" 2>/dev/null; }
n_at_least() { [ "$(nverdicts)" -ge "$1" ]; }
wait_for 1200 n_at_least 1; t_first=$(now_ms)
expect_ok "the first-boot verdict" n_at_least 1
at1=$(pvjson rv verdict_at)
wait_for 600 n_at_least 3; t_third=$(now_ms)
expect_ok "two more verdicts from the timer" n_at_least 3
echo "# start to first verdict: $(( t_first - t_start )) ms, to the third: $(( t_third - t_start )) ms (TCG)"
expect_eq "every verdict is contained" "" \
	"$(grep -aE '^MOAT-VERDICT: ' "$PV_STATE/guests/rv/console.log" | grep -v 'MOAT-VERDICT: contained' | head -3)"
at3=$(pvjson rv verdict_at)
expect_ok "list --json: the latest verdict is later than the first ($at1 -> $at3)" test "${at3:-0}" -gt "${at1:-0}"
expect_match "provision list: contained, with its age" "^rv .*running .* contained, [0-9]+(s|m[0-9]{2}s) ago" "$(pv list 2>&1)"
gw_has() { gw_ctl sandboxes --json | grep -q '"name":"rv".*"verdict":"contained","verdict_at":[0-9]'; }
wait_for 20 gw_has; expect_ok "gatewayd's ctl sandboxes has the verdict and its time" gw_has

G=10.77.0.2
gssh() {
	ip netns exec "$NS_GW" env -i PATH=/usr/bin:/bin ssh -i "$TOPO_TMP/id" \
	    -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
	    -o ConnectTimeout=20 -o LogLevel=ERROR "$@"
}
expect_eq "in the guest: moat-reverify.timer is active" active \
	"$(gssh agent@$G 'systemctl is-active moat-reverify.timer' 2>&1)"
expect_match "in the guest: the re-check's report, --quick (about a thousand gateway ports)" \
	"probes in .*: 0 breaches, 0 failed controls" \
	"$(gssh agent@$G 'cat /var/log/moat-reverify.log' 2>&1 | grep 'probes in')"

[ "$TAP_FAILED" -gt 0 ] && guest_log rv | grep -a -v '^\[' | tail -60 | sed 's/^/# console: /'
out=$(pv_gw destroy --force rv 2>&1)
expect_match "provision destroy rv" "destroyed rv" "$out"
tap_done
