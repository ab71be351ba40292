#!/usr/bin/env bash
# Around docs/provision.homelab.md (whose commands 64-docs-homelab.sh runs
# as written): what the page only describes, in network namespaces.
# `make install` to a temporary PREFIX, the members' commands from its bin
# on PATH, an empty state directory and no bridge.  gatewayd creates the
# bridge, its address and forwarding inside the test's gateway namespace;
# provision refuses a guest whose QEMU user cannot pass the state
# directory (the page's example error), then creates and starts a guest
# whose QEMU runs as a uid of its own, with moat-qemu's kvm group (install
# made both), with the accelerator and the reason shown; the guest
# reaches the internet namespace and containment-check inside it says
# "contained".  The proxy intercepts, as shipped (intercept = true).
# Then destroy, stop, `gatewayd --teardown`, and a bridge the admin
# manages (manage_network = false): warnings only.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale
# Stands in for Debian's kvm group (this host may have none): install
# must put moat-qemu in it, and QEMU must keep it after dropping root.
KG=${TOPO}kvm
groupadd "$KG" || not_ok "groupadd $KG"
trap 'rc=$?; groupdel "$KG" 2>/dev/null; topo_down; exit $rc' EXIT
# The gateway box: an uplink with a default route, no bridge, forwarding
# off (a fresh namespace may inherit the host's settings: set them).
topo_ns "$NS_GW" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" ||
	{ not_ok "namespaces"; tap_done; exit 1; }
in_ns "$NS_GW" sysctl -qw net.ipv4.conf.all.forwarding=0 net.ipv4.conf.default.forwarding=0
topo_link "$NS_GW" up0 "$NS_INET" eth0
ip -n "$NS_GW" addr add 203.0.113.1/24 dev up0
ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
ip -n "$NS_INET" addr add $INET_HTTP/24 dev eth0
ip -n "$NS_INET" addr add 203.0.113.53/24 dev eth0
ip -n "$NS_GW" route add default via $INET_ADDR
topo_link "$NS_GW" lan0 "$NS_LAN" eth0
ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
ip -n "$NS_LAN" route add default via 192.168.77.1
topo_services || not_ok "services start"
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py 203.0.113.53 open.test=$INET_HTTP
topo_wait_port "$NS_INET" 203.0.113.53 53 || not_ok "upstream resolver starts"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
	net.ipv4.icmp_msgs_burst=100000 2>/dev/null
expect_fail "no bridge before gatewayd runs" ip -n "$NS_GW" link show moat0

# QEMU's user walks from / to its guest's folder: the temporary tree is
# made like /var/lib (everyone may pass, nobody lists).
chmod 0711 "$TOPO_TMP"
P=$TOPO_TMP/prefix
ETC=$P/etc
STATE=$TOPO_TMP/state
PV_STATE=$STATE		# for guest_wait
RUN=$TOPO_TMP/run
make --no-print-directory install PREFIX="$P" SYSCONFDIR="$ETC" UNITDIR="$P/systemd" \
	>"$TOPO_TMP/install.log" 2>&1
expect_eq "make install PREFIX=... exits 0" 0 $?
expect_match "install made the users, moat-qemu among them" moat-qemu "$(getent passwd moat-qemu)"
KVM_GROUP=$KG sh "$P/lib/moat/install-users.sh"
expect_match "install-users puts moat-qemu in the kvm group" "\b$KG\b" "$(id -nG moat-qemu)"
export PATH=$P/bin:$PATH
expect_eq "provision is on PATH from PREFIX/bin" "$P/bin/provision" "$(command -v provision)"
expect_eq "gatewayd (for gatewayd ctl) is on PATH from PREFIX/bin" "$P/bin/gatewayd" \
	"$(command -v gatewayd)"

# Step 1 of the walkthrough: the configuration.
CONF=$ETC/moat/moat.conf
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$STATE";
};
CONF
out=$(in_ns "$NS_GW" gatewayd -n -c "$CONF" 2>&1); rc=$?
expect_eq "gatewayd -n: the config is valid" 0 $rc
expect_match "gatewayd -n warns: bridge missing" "warning: network: bridge moat0: missing" "$out"
expect_match "gatewayd -n warns: forwarding off" "warning: network: forwarding up0: off" "$out"
expect_fail "gatewayd -n changed nothing" ip -n "$NS_GW" link show moat0

# Step 2: start gatewayd (the unit runs this, in the foreground; the audit
# log is the run's own, not the host's /var/log/moat).
mkdir -p "$RUN"
moat_daemon "$NS_GW" gatewayd -d -c "$CONF" -s "$RUN/gatewayd.sock" -a "$TOPO_TMP/audit.log" \
	>"$TOPO_TMP/gw.log" 2>&1 &
GWPID=$!
TOPO_PIDS+=($GWPID)
for i in $(seq 100); do gatewayd ctl -s "$RUN/gatewayd.sock" status >/dev/null 2>&1 && break; sleep 0.2; done
st=$(gatewayd ctl -s "$RUN/gatewayd.sock" status 2>&1)
expect_match "ctl status: bridge created" "bridge moat0: created" "$st"
expect_match "ctl status: address added" "address 10.77.0.1/24: added to moat0" "$st"
expect_match "ctl status: forwarding enabled on the uplink" "forwarding up0: enabled" "$st"
expect_eq "ctl status: no network warning" "" "$(printf '%s\n' "$st" | grep WARNING)"
expect_eq "ctl status --json: network managed, 0 warnings" "True 0" \
	"$(gatewayd ctl -s "$RUN/gatewayd.sock" status --json | head -1 | python3 -c '
import json,sys; n=json.load(sys.stdin)["network"]; print(n["managed"], n["warnings"])' 2>&1)"
expect_match "the bridge is up with the gateway address, in the test namespace" \
	"inet 10.77.0.1/24" "$(ip -n "$NS_GW" addr show moat0 up 2>&1)"
expect_eq "state_dir made 0711 (QEMU's user passes, nobody lists)" 711 "$(stat -c %a "$STATE")"
topo_wait_port "$NS_GW" 10.77.0.1 53 || not_ok "dnsd listens on the new bridge address"

if guest_assets; then ok "guest kernel (cached) and initramfs with containment-check"
else not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; fi
IMG=$TOPO_TMP/images
mkdir -m 0755 "$IMG"
install -m 0644 "$GUEST_KERNEL" "$IMG/vmlinuz"
install -m 0644 "$GUEST_INITRD" "$IMG/initrd.gz"
pv() { in_ns "$NS_GW" provision -c "$CONF" --run-dir "$RUN" "$@"; }
CC="--gateway,10.77.0.1,--expect,open,--internet,$INET_HTTP:80,--target,$LAN_HOST"
CC="$CC,--resolver,203.0.113.53,--treat-as-public,203.0.113.0/24,--timeout,3000"

# A guest QEMU could not open is refused, not "created".
chmod 0700 "$STATE"
out=$(pv create dev --kernel "$IMG/vmlinuz" --initrd "$IMG/initrd.gz" --egress open 2>&1); rc=$?
chmod 0711 "$STATE"
expect_eq "create with a state_dir QEMU cannot pass: exit 1" 1 $rc
expect_match "... names the folder the guest's uid cannot pass" \
	"QEMU's user uid [0-9]+ \(guest dev\) cannot open $STATE/guests/dev/console.log: Permission denied \(folder $STATE is mode 0700" "$out"
case "$out" in *"created dev"*) not_ok "... never says created" "$out" ;; *) ok "... never says created" ;; esac
expect_eq "... and leaves nothing behind" "" \
	"$(find "$STATE/guests" "$ETC/moat/sandboxes.d" -mindepth 1 2>/dev/null)"

# Step 3: create.
out=$(pv create dev --kernel "$IMG/vmlinuz" --initrd "$IMG/initrd.gz" \
	--append "quiet moat.cc=$CC" --egress open --memory 256 2>&1)
expect_match "provision create dev" "created dev: kernel mode, address 10.77.0.2" "$out"
GUID=$(sed -n 's/^uid = \([0-9]*\);/\1/p' "$STATE/guests/dev/guest.conf")
expect_match "dev has a uid of its own" "^[0-9]+$" "$GUID"

# Step 4: start (auto: KVM is not usable here, so TCG, and it says why:
# /dev/kvm not usable by the guest's uid, or QEMU failing with it).
out=$(pv start dev 2>&1)
expect_match "provision start dev" "started dev: pid [0-9]+, tcg, tap mt-dev on moat0" "$out"
expect_match "start shows the accelerator and why KVM was not used" \
	"accelerator tcg: (KVM not usable by uid $GUID \(guest dev\): /dev/kvm: |KVM is present but QEMU cannot run a guest with it)" "$out"
qpid=$(cat "$RUN/guests/dev/qemu.pid" 2>/dev/null)
expect_eq "QEMU runs as dev's own uid" "$GUID" "$(ps -o uid= -p "${qpid:-0}" 2>/dev/null | tr -d ' ')"
expect_match "QEMU has moat-qemu's kvm group, kept when it dropped root" \
	"^Groups:.*\b$(getent group "$KG" | cut -d: -f3)\b" "$(cat /proc/${qpid:-0}/status 2>/dev/null)"
expect_match "list shows tcg and the reason" "running .* tcg \((KVM not usable by uid $GUID|KVM is present but QEMU cannot)" \
	"$(pv list 2>&1)"
expect_eq "list --json: accel and its reason" "tcg True" "$(pv list --json | python3 -c '
import json,sys; g=json.load(sys.stdin)[0]; print(g["accel"], "KVM not usable" in g["accel_reason"] or
    "KVM is present but QEMU cannot" in g["accel_reason"])' 2>&1)"

# Step 5: the guest proves the boundary from inside.
guest_wait dev 'MOAT-VERDICT' 240
log=$(cat "$STATE/guests/dev/console.log" 2>/dev/null)
expect_match "guest network came up through gatewayd's bridge" "network up 10.77.0.2/24 via 10.77.0.1" "$log"
expect_match "the internet namespace answered the guest (controls passed)" \
	"[1-9][0-9]* controls passed" "$log"
expect_match "containment-check in the guest: contained" "^MOAT-VERDICT: contained" "$log"
expect_match "containment-check: 0 breaches, 0 failed controls" \
	"probes in .*: 0 breaches, 0 failed controls" "$log"
[ "$TAP_FAILED" -gt 0 ] && printf '%s\n' "$log" | grep -v '^\[' | tail -30 | sed 's/^/# console: /'

# Step 6: done with it.
expect_match "provision destroy dev" "destroyed dev" "$(pv destroy dev 2>&1)"
out=$(in_ns "$NS_GW" gatewayd --teardown -c "$CONF" -s "$RUN/gatewayd.sock" 2>&1); rc=$?
expect_eq "teardown refused while gatewayd runs: exit 1" 1 $rc
expect_match "... and says to stop it first" "gatewayd is running .*stop it first" "$out"
expect_ok "... the bridge is still there" ip -n "$NS_GW" link show moat0
kill "$GWPID" 2>/dev/null
wait "$GWPID"
out=$(in_ns "$NS_GW" gatewayd --teardown -c "$CONF" -s "$RUN/gatewayd.sock" 2>&1)
expect_match "gatewayd --teardown deletes the bridge it made" "deleted bridge moat0" "$out"
expect_fail "... the bridge is gone" ip -n "$NS_GW" link show moat0
expect_eq "... forwarding on the uplink is back off" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.conf.up0.forwarding)"
expect_match "a second teardown has nothing to undo" "nothing to undo" \
	"$(in_ns "$NS_GW" gatewayd --teardown -c "$CONF" -s "$RUN/gatewayd.sock" 2>&1)"

# A bridge the admin manages (manage_network = false): gatewayd changes
# nothing and says exactly what is wrong, at start and on reload.
sed -i 's|^  state_dir|  manage_network = false;\n  state_dir|' "$CONF"
ip -n "$NS_GW" route del default
moat_daemon "$NS_GW" gatewayd -d -X -c "$CONF" -s "$RUN/gatewayd.sock" -a "$TOPO_TMP/audit.log" >"$TOPO_TMP/gw2.log" 2>&1 &
GWPID=$!
TOPO_PIDS+=($GWPID)
for i in $(seq 100); do gatewayd ctl -s "$RUN/gatewayd.sock" status >/dev/null 2>&1 && break; sleep 0.2; done
st=$(gatewayd ctl -s "$RUN/gatewayd.sock" status 2>&1)
expect_match "unmanaged: ctl status says checked only" "checked only" "$st"
expect_match "unmanaged: WARNING bridge missing" "WARNING +bridge moat0: missing" "$st"
expect_match "unmanaged: WARNING forwarding off" "WARNING +forwarding up0: off" "$st"
expect_match "unmanaged: WARNING uplink without a default route" \
	"WARNING +uplink up0: no IPv4 default route" "$st"
expect_match "unmanaged: the log warns too" "network: bridge moat0: missing" "$(cat "$TOPO_TMP/gw2.log")"
expect_fail "unmanaged: no bridge was made" ip -n "$NS_GW" link show moat0
ip -n "$NS_GW" link add moat0 type bridge
gatewayd ctl -s "$RUN/gatewayd.sock" reload >/dev/null 2>&1
st=$(gatewayd ctl -s "$RUN/gatewayd.sock" status 2>&1)
expect_match "after reload: WARNING bridge down" "WARNING +link moat0: down" "$st"
expect_match "after reload: WARNING address missing" "WARNING +address 10.77.0.1/24: missing on moat0" "$st"
expect_match "... and still not brought up by gatewayd" "state DOWN" \
	"$(ip -n "$NS_GW" link show moat0 2>&1)"
kill "$GWPID" 2>/dev/null
tap_done
