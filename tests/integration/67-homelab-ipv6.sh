#!/usr/bin/env bash
# The homelab walkthrough (62-homelab-walkthrough.sh) once with IPv6 on,
# in network namespaces.  The gateway box starts as a dual-stack homelab
# host does: no bridge, no forwarding, and its own IPv6 default route
# learned from its router's advertisement on the uplink (accept_ra 1).
# `make install` to a temporary PREFIX; gateway.ipv6 (nat66) in the
# config; gatewayd -n says what is missing; gatewayd makes the bridge,
# both addresses and forwarding, and the host keeps its advertised
# default route.  provision creates and starts a kernel-mode guest under
# TCG as its own uid; the guest gets its IPv6 address from provision,
# containment-check inside it finds both families contained (with an IPv6
# internet control that passes), it reaches a host on the
# IPv6 internet (through nat66 and the advertised route) and is refused
# the LAN's global prefix and the gateway host's own LAN address.  Then
# destroy, stop and `gatewayd --teardown`: every IPv6 change set back.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh

for b in build/provision build/gatewayd build/containment-check; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale
KG=${TOPO}kvm
groupadd "$KG" || not_ok "groupadd $KG"
trap 'rc=$?; groupdel "$KG" 2>/dev/null; topo_down; exit $rc' EXIT
NET6=fd77:0:0:1
FAR6=2001:db8:300::7		# a host on the IPv6 internet
LAN6_GW=2001:db8:77:5::1	# the gateway host's own address on its LAN
LAN6_HOST=2001:db8:77:5::2	# a host on the LAN's global prefix
topo_ns "$NS_GW" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" ||
	{ not_ok "namespaces"; tap_done; exit 1; }
in_ns "$NS_GW" sysctl -qw net.ipv4.conf.all.forwarding=0 net.ipv4.conf.default.forwarding=0 \
	net.ipv6.conf.all.forwarding=0 net.ipv6.conf.default.accept_ra=1
topo_link "$NS_GW" up0 "$NS_INET" eth0
ip -n "$NS_GW" addr add 203.0.113.1/24 dev up0
ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
ip -n "$NS_INET" addr add $INET_HTTP/24 dev eth0
ip -n "$NS_INET" addr add 203.0.113.53/24 dev eth0
ip -n "$NS_GW" route add default via $INET_ADDR
ip -n "$NS_GW" addr add $GW_UP6/64 dev up0 nodad
ip -n "$NS_INET" addr add $INET_ADDR6/64 dev eth0 nodad
ip -n "$NS_INET" addr add $FAR6/128 dev lo nodad
topo_link "$NS_GW" lan0 "$NS_LAN" eth0
ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
ip -n "$NS_LAN" route add default via 192.168.77.1
ip -n "$NS_GW" addr add $LAN6_GW/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6_HOST/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via $LAN6_GW
for ns in "$NS_INET eth0" "$NS_GW up0" "$NS_LAN eth0"; do
	topo_wait_dad $ns || not_ok "link-local addresses ready in $ns"
done
topo_services || not_ok "services start"
topo_bg "$NS_INET" dns-inet python3 tests/harness/cc-dns.py 203.0.113.53 open.test=$INET_HTTP
topo_wait_port "$NS_INET" 203.0.113.53 53 || not_ok "upstream resolver starts"
for t in "$NS_INET $FAR6 far" "$NS_LAN $LAN6_HOST lan" "$NS_GW $LAN6_GW gw"; do
	set -- $t
	topo_bg "$1" "banner6-$2" socat TCP6-LISTEN:2222,bind="[$2]",fork,reuseaddr SYSTEM:"echo hi-$3"
	topo_wait_port "$1" "$2" 2222 || not_ok "listener on $2"
done
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
	net.ipv4.icmp_msgs_burst=100000 2>/dev/null
# The host's IPv6 default route, from its router's advertisement (a
# router forwards: the kernel drops a default router whose neighbour
# advertisements say it is none).
in_ns "$NS_INET" sysctl -qw net.ipv6.conf.all.forwarding=1
in_ns "$NS_INET" python3 tests/harness/ra-send.py eth0
ra_route() { ip -n "$NS_GW" -6 route show default dev up0 proto ra; }
has_ra() { [ -n "$(ra_route)" ]; }
wait_for 5 has_ra
expect_match "the host's IPv6 default route comes from its router's advertisement" \
	"^default via fe80:" "$(ra_route)"
expect_eq "control: the host reaches the IPv6 internet by it" hi-far \
	"$(in_ns "$NS_GW" timeout 5 socat -u TCP6:"[$FAR6]":2222,connect-timeout=3 STDOUT 2>&1)"

chmod 0711 "$TOPO_TMP"
P=$TOPO_TMP/prefix
ETC=$P/etc
STATE=$TOPO_TMP/state
PV_STATE=$STATE		# for guest_wait
RUN=$TOPO_TMP/run
make --no-print-directory install PREFIX="$P" SYSCONFDIR="$ETC" UNITDIR="$P/systemd" \
	>"$TOPO_TMP/install.log" 2>&1
expect_eq "make install PREFIX=... exits 0" 0 $?
KVM_GROUP=$KG sh "$P/lib/moat/install-users.sh"
export PATH=$P/bin:$PATH

CONF=$ETC/moat/moat.conf
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8:300::/48", "2001:db8:77:5::/64" ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
  state_dir = "$STATE";
};
CONF
out=$(in_ns "$NS_GW" gatewayd -n -c "$CONF" 2>&1); rc=$?
expect_eq "gatewayd -n: the config with gateway.ipv6 is valid" 0 $rc
expect_match "gatewayd -n warns: IPv6 forwarding off" "warning: network: forwarding IPv6: off" "$out"
expect_fail "gatewayd -n changed nothing" ip -n "$NS_GW" link show moat0

mkdir -p "$RUN"
moat_daemon "$NS_GW" gatewayd -d -c "$CONF" -s "$RUN/gatewayd.sock" -a "$TOPO_TMP/audit.log" \
	>"$TOPO_TMP/gw.log" 2>&1 &
GWPID=$!
TOPO_PIDS+=($GWPID)
for i in $(seq 100); do gatewayd ctl -s "$RUN/gatewayd.sock" status >/dev/null 2>&1 && break; sleep 0.2; done
st=$(gatewayd ctl -s "$RUN/gatewayd.sock" status 2>&1)
expect_match "ctl status: bridge created" "bridge moat0: created" "$st"
expect_match "ctl status: IPv6 address added" "address $NET6::1/64: added to moat0" "$st"
expect_match "ctl status: IPv6 forwarding enabled" "forwarding IPv6: enabled" "$st"
expect_match "ctl status: accept_ra kept on the uplink" "accept_ra: kept on .*up0" "$st"
expect_eq "ctl status: no network warning" "" "$(printf '%s\n' "$st" | grep WARNING)"
expect_match "forwarding on: the host kept its advertised default route" "^default via fe80:" "$(ra_route)"
topo_wait_port "$NS_GW" 10.77.0.1 53 || not_ok "dnsd listens on the new bridge address"

if guest_assets; then ok "guest kernel (cached) and initramfs with containment-check"
else not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; fi
IMG=$TOPO_TMP/images
mkdir -m 0755 "$IMG"
install -m 0644 "$GUEST_KERNEL" "$IMG/vmlinuz"
install -m 0644 "$GUEST_INITRD" "$IMG/initrd.gz"
pv() { in_ns "$NS_GW" provision -c "$CONF" --run-dir "$RUN" "$@"; }
CC="--gateway,10.77.0.1,--expect,open,--internet,$INET_HTTP:80,--target,$LAN_HOST"
CC="$CC,--internet,[$FAR6]:2222,--target,$LAN6_HOST"
CC="$CC,--resolver,203.0.113.53,--treat-as-public,203.0.113.0/24,--timeout,3000"
out=$(pv create dev --kernel "$IMG/vmlinuz" --initrd "$IMG/initrd.gz" \
	--append "quiet moat.cc=$CC moat.probe6=$FAR6.2222,$LAN6_HOST.2222,$LAN6_GW.2222" \
	--egress open --memory 256 2>&1)
expect_match "provision create dev" "created dev: kernel mode, address 10.77.0.2" "$out"
out=$(pv start dev 2>&1)
expect_match "provision start dev" "started dev: pid [0-9]+, tcg, tap mt-dev on moat0" "$out"

guest_wait dev 'powering off' 420
log=$(cat "$STATE/guests/dev/console.log" 2>/dev/null)
expect_match "guest network came up through gatewayd's bridge" "network up 10.77.0.2/24 via 10.77.0.1" "$log"
expect_match "guest IPv6 came up from provision's moat.ip6" \
	"IPv6 up $NET6::2/64 via $NET6::1 on eth0" "$log"
expect_match "containment-check in the guest: IPv4 contained" \
	"^IPv4: [0-9]+ probes, 0 breaches, 0 failed controls, [1-9][0-9]* controls passed" "$log"
expect_match "containment-check in the guest: IPv6 contained, its IPv6 internet control passed" \
	"^IPv6: [0-9]+ probes, 0 breaches, 0 failed controls, [1-9][0-9]* controls? passed" "$log"
expect_match "the guest reaches a host on the IPv6 internet" \
	"MOAT-PROBE6: \[$FAR6\]:2222 open hi-far" "$log"
expect_match "the guest is refused a host on the LAN's global prefix" \
	"MOAT-PROBE6: \[$LAN6_HOST\]:2222 closed" "$log"
expect_match "the guest is refused the gateway host's LAN address" \
	"MOAT-PROBE6: \[$LAN6_GW\]:2222 closed" "$log"
[ "$TAP_FAILED" -gt 0 ] && printf '%s\n' "$log" | grep -E '^ *(BREACH|FAILED) ' | head -20 | sed 's/^/# finding: /'
[ "$TAP_FAILED" -gt 0 ] && printf '%s\n' "$log" | grep -v '^\[' | tail -30 | sed 's/^/# console: /'
[ "$TAP_FAILED" -gt 0 ] && tail -40 "$TOPO_TMP/gw.log" | sed 's/^/# gatewayd: /'

expect_match "provision destroy dev" "destroyed dev" "$(pv destroy dev 2>&1)"
kill "$GWPID" 2>/dev/null
wait "$GWPID"
out=$(in_ns "$NS_GW" gatewayd --teardown -c "$CONF" -s "$RUN/gatewayd.sock" 2>&1)
expect_match "teardown removes the bridge's IPv6 address" "removed $NET6::1/64 from moat0" "$out"
expect_match "teardown deletes the bridge it made" "deleted bridge moat0" "$out"
expect_eq "teardown: IPv6 forwarding back off" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.all.forwarding)"
expect_eq "teardown: accept_ra back to 1 on the uplink" 1 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv6.conf.up0.accept_ra)"
expect_match "teardown: the host's advertised default route is still there" "^default via fe80:" "$(ra_route)"
tap_done
