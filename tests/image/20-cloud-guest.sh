#!/usr/bin/env bash
# A real Debian 12 cloud image (tests/image/build-image.sh, cached) created
# and started by provision in image mode, under TCG, behind the real policy
# (gatewayd: nftables, dnsd and the intercepting proxy, all in this run's
# gateway namespace).  cloud-init applies provision's seed; the checks are
# made from the gateway over SSH with the seeded key and from the guest's
# own first-boot containment-check, whose verdict provision list reports.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh
. tests/harness/guest-lib.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
t0=$(now_ms)
if IMG=$(bash tests/image/build-image.sh); then
	ok "Debian 12 cloud image (cached: $IMG)"
else not_ok "Debian 12 cloud image" "mmdebstrap needs apt access on its first run"
	tap_done; exit 1; fi
echo "# image ready in $(( $(now_ms) - t0 )) ms"

topo_up || { not_ok "topology comes up"; exit 1; }
proxy_certs || not_ok "test certificates"
proxy_servers || not_ok "test servers start"
chmod 0755 "$TOPO_TMP"
mkdir -p "$PX_DIR/secrets" && chmod 0700 "$PX_DIR/secrets"
printf '%s\n' "$PX_SECRET" >"$PX_DIR/secrets/api" && chmod 0600 "$PX_DIR/secrets/api"
mkdir -p "$TOPO_TMP/sandboxes.d"
# QEMU runs as nobody and must reach its guest folder under state_dir.
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
secrets = (
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; }
);
CONF
gw_start --upstream-ca "$PX_DIR/testca.crt"; expect_eq "gatewayd starts (policy, dnsd, proxy)" 0 $?
PV_STATE=$TOPO_TMP/state
pv() { build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
pv_gw() { ip netns exec "$NS_GW" build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }

ssh-keygen -q -t ed25519 -N '' -C "tester@moat" -f "$TOPO_TMP/id" || not_ok "ssh key"
out=$(pv --containment-check build/containment-check create cloud --image "$IMG" \
	--egress open --secret api --ssh-key "$TOPO_TMP/id.pub" --user nobody \
	--accel tcg --memory 1024 --disk 4G 2>&1)
expect_match "provision create cloud (image mode)" "created cloud: image mode, address 10.77.0.2" "$out"
expect_match "gatewayd took the new sandbox" '"cloud"' "$(gw_ctl sandboxes --json 2>&1)"

t_start=$(now_ms)
out=$(pv_gw start --accel auto cloud 2>&1)
expect_match "provision start cloud (--accel auto falls back to TCG)" "started cloud: pid [0-9]+, tcg" "$out"
case $out in *"started cloud"*) ;; *) tap_done; exit 1 ;; esac
guest_wait cloud 'Cloud-init v.*running .init-local' 600; t_ci=$(now_ms)
guest_wait cloud 'MOAT-VERDICT' 900; t_verdict=$(now_ms)
echo "# boot to cloud-init: $(( t_ci - t_start )) ms, to containment verdict: $(( t_verdict - t_start )) ms (TCG)"
log=$(guest_log cloud)
expect_match "first-boot containment-check on the serial console: contained" \
	"MOAT-VERDICT: contained" "$log"
expect_match "containment-check: 0 breaches, 0 failed controls" \
	"probes in .*: 0 breaches, 0 failed controls" "$log"
expect_match "provision list --json reports the verdict" \
	'"name": "cloud".*"verdict": "contained"' "$(pv list --json 2>&1)"
expect_match "provision list shows it" "^cloud .*running .* contained" "$(pv list 2>&1)"

G=10.77.0.2
gssh() {
	ip netns exec "$NS_GW" env -i PATH=/usr/bin:/bin ssh -i "$TOPO_TMP/id" \
	    -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
	    -o ConnectTimeout=20 -o LogLevel=ERROR "$@"
}
ok_ssh=
for i in $(seq 60); do
	gssh agent@$G true 2>/dev/null && { ok_ssh=1; break; }
	sleep 2
done
expect_eq "ssh agent@guest with the seeded key" 1 "${ok_ssh:-0}"
expect_match "the login user is agent, no password login offered" "Permission denied \(publickey\)" \
	"$(gssh -o PreferredAuthentications=password,keyboard-interactive -o PubkeyAuthentication=no agent@$G true 2>&1)"
expect_match "agent's password is locked (no password)" "^agent L " \
	"$(gssh agent@$G 'passwd -S agent' 2>&1)"
expect_match "sudo asks for a password (no passwordless sudo)" "a password is required" \
	"$(gssh agent@$G 'sudo -n true' 2>&1)"
expect_match "root cannot log in" "Permission denied" \
	"$(gssh root@$G true 2>&1)"
expect_eq "resolv.conf points at the gateway" "nameserver 10.77.0.1" \
	"$(gssh agent@$G 'grep ^nameserver /etc/resolv.conf' 2>&1)"
expect_eq "the placeholder is in the login environment" "$PX_PLACEHOLDER" \
	"$(gssh agent@$G 'echo $API_API_KEY' 2>&1)"
expect_match "the gateway CA is in the guest's trust store" "moat-gateway" \
	"$(gssh agent@$G 'ls /etc/ssl/certs/ | grep moat' 2>&1)"
out=$(gssh agent@$G 'env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -sS --max-time 20 \
	-H "Authorization: Bearer $API_API_KEY" https://api.bound.test/echo' 2>&1)
expect_match "curl https://api.bound.test without -k through interception" \
	"Bearer $PX_PLACEHOLDER" "$out"
expect_match "... and the bound host received the real secret" "Bearer $PX_SECRET" \
	"$(cat "$PX_DIR/bound.log" 2>/dev/null)"
expect_eq "the real secret is nowhere in the guest's console log" "" \
	"$(grep -F "$PX_SECRET" "$PV_STATE/guests/cloud/console.log")"
expect_match "the guest cannot reach the LAN" "unreachable|timeout|refused|000" \
	"$(gssh agent@$G "curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://$LAN_HOST/ || echo unreachable" 2>&1)"

[ "$TAP_FAILED" -gt 0 ] && guest_log cloud | tail -60 | sed 's/^/# console: /'
out=$(pv_gw destroy --force cloud 2>&1)
expect_match "provision destroy cloud" "destroyed cloud" "$out"
tap_done
