#!/usr/bin/env bash
# Guests' IPv6 refusals on the bridge are immediate and neighbour
# discovery is no refusal (gateway.ipv6): a guest's connection to
# another guest's IPv6 address on its own /64 is refused at once with
# ICMPv6 administratively prohibited (EACCES), as it is at the gateway:
# the gateway answers the guest's neighbour solicitation for the other
# guest with its own MAC (a proxy entry per guest's address), and the
# policy refuses what then comes (before: port isolation kept the
# solicitation from the other guest, and the connection failed with "No
# route to host" after about 3 s).  Again and again: the gateway sends
# no redirect that would point the guest at the other guest's own MAC.
# A guest's duplicate address detection never meets the proxy: a guest
# that takes its address with DAD keeps it (no "dadfailed").  A
# solicitation sent to another guest's address (checking a neighbour
# entry) is dropped quietly, neither refused nor counted.  A guest's
# connection to the gateway's link-local address, on any port, is
# refused at once too, as one to its ::1 is, instead of being dropped
# silently at the bridge and in raw_pre (a 5 s timeout before); and a
# guest's neighbour solicitations, flooded to the other guests' ports and
# stopped there, are neither counted as "another guest" nor listed by
# `ctl refused` (one ff02::1:ff.. row per solicitation before, where a
# port lacks isolation).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_services
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
for g in "web $NET6::a" "dev $NET6::b"; do
	set -- $g
	ip -n "$TOPO-$1" addr add "$2"/64 dev eth0 nodad
	ip -n "$TOPO-$1" -6 route add default via $NET6::1
done
for ns in "$NS_GW moat0" "$TOPO-web eth0" "$TOPO-dev eth0"; do
	topo_wait_dad $ns || { not_ok "link-local addresses ready in $ns"; exit 1; }
done
sed -e 's/egress = "allowlist"; allow = \[ "pypi.org", "\*.github.test" \];/egress = "open";/' \
    -e 's|treat_as_public = \[ "203.0.113.0/24" \];|treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ]; ipv6 = { network = "'$NET6'::/64"; uplink_mode = "nat66"; };|' \
    -e '/name = "locked"/,+1d' examples/demo.conf | sed -e 's/owner = "bob"; },/owner = "bob"; }/' >"$GW_CONF"
grep -q 'uplink_mode = "nat66"' "$GW_CONF" || { not_ok "test config"; exit 1; }
# A proxy entry left in the guests' /64 (no sandbox has ::99) goes at
# start; one outside it is not gatewayd's and stays.
ip -n "$NS_GW" -6 neigh add proxy $NET6::99 dev moat0
ip -n "$NS_GW" -6 neigh add proxy 2001:db8:5::1 dev moat0
knobs() { in_ns "$NS_GW" sysctl -n net.ipv6.conf.moat0.proxy_ndp net.ipv6.neigh.moat0.proxy_delay | xargs; }
proxies() { ip -n "$NS_GW" -6 neigh show proxy dev moat0 | awk '{print $1}' | sort | xargs; }
knobs0=$(knobs)
gw_own_state
out=$(in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" 2>&1)
expect_match "gatewayd -n warns that the bridge answers for no guest yet" \
	"neighbour proxy moat0: proxy_ndp 0, proxy_delay [0-9]+, 0 of 2 guests" "$out"
gw_start; expect_eq "gatewayd starts with gateway.ipv6" 0 $?
expect_fail "ctl status: no warning about the neighbour proxy" \
	grep -q "WARNING.*neighbour proxy" <<<"$(gw_ctl status 2>&1)"
expect_eq "the bridge answers for guests at once (proxy_ndp, proxy_delay)" "1 0" "$(knobs)"
expect_eq "proxy entries: each guest's address, and the foreign one" \
	"2001:db8:5::1 $NET6::a $NET6::b" "$(proxies)"

LL=$(ip -n "$NS_GW" -6 addr show dev moat0 scope link | awk '/inet6/ {sub("/.*", "", $2); print $2}')
try() { in_ns "$TOPO-dev" python3 tests/harness/refusal6.py "$@"; }
fast() { awk -v t="$1" 'BEGIN { exit !(t + 0 < 1.0) }'; }
counter() { in_ns "$NS_GW" nft list counter "$1" moat "$2" | awk '/packets/ {print $2}'; }

GW_MAC=$(ip -n "$NS_GW" -br link show dev moat0 | awk '{print $3}')
ctl_rows() { gw_ctl refused 2>&1 | grep -c "another guest"; }

# --- another guest's IPv6 address: refused at once ------------------------
# The gateway knows web's own MAC (it has answered web), which a redirect
# would hand on to dev.
r=$(in_ns "$TOPO-web" python3 tests/harness/refusal6.py tcp $NET6::1 53)
expect_eq "web reaches DNS on the gateway's ::1" connected "${r% *}"
expect_match "the gateway has web's own MAC" "lladdr 52:54:00:00:00:0a" \
	"$(ip -n "$NS_GW" -6 neigh show $NET6::a dev moat0)"
g0=$(counter inet guest)
for i in 1 2 3; do
	r=$(try udp $NET6::a 9)
	expect_eq "dev -> [$NET6::a]:9/udp, try $i, is refused with ICMPv6 admin-prohibited ($r)" EACCES "${r% *}"
	expect_ok "... at once (${r#* } s)" fast "${r#* }"
done
r=$(try tcp $NET6::a 9000)
expect_eq "dev -> [$NET6::a]:9000/tcp is refused with ICMPv6 admin-prohibited ($r)" EACCES "${r% *}"
expect_ok "... well before address resolution would give up (${r#* } s)" \
	awk -v t="${r#* }" 'BEGIN { exit !(t + 0 < 2.0) }'
expect_ok "the refusals are counted as \"another guest\"" test "$(counter inet guest)" -ge $((g0 + 4))
expect_match "dev's neighbour entry for web's address is the gateway's MAC" \
	"lladdr $GW_MAC" "$(ip -n "$TOPO-dev" -6 neigh show $NET6::a dev eth0)"
r=$(try udp $NET6::a 9)
expect_eq "dev -> [$NET6::a]:9/udp once more: still refused ($r)" EACCES "${r% *}"
expect_ok "... at once (${r#* } s)" fast "${r#* }"
expect_match "ctl refused lists web's address as another guest" \
	"$NET6::a.*another guest" "$(gw_ctl refused 2>&1)"

# --- duplicate address detection never meets the proxy --------------------
ip -n "$TOPO-web" addr del $NET6::a/64 dev eth0
ip -n "$TOPO-web" addr add $NET6::a/64 dev eth0
ip -n "$TOPO-web" -6 route replace default via $NET6::1
dad_done() { ! ip -n "$TOPO-web" -6 addr show dev eth0 2>/dev/null | grep -q tentative; }
expect_ok "web's address comes out of DAD" wait_for 10 dad_done
out=$(ip -n "$TOPO-web" -6 addr show dev eth0 2>/dev/null)
expect_match "... and web keeps it (no dadfailed)" "inet6 $NET6::a/64 scope global" "$out"
expect_fail "... no dadfailed" grep -q dadfailed <<<"$out"
r=$(in_ns "$TOPO-web" python3 tests/harness/refusal6.py tcp $NET6::1 53)
expect_eq "web's address works: DNS on the gateway's ::1 connects" connected "${r% *}"
r=$(in_ns "$TOPO-web" python3 tests/harness/refusal6.py udp $NET6::b 9)
expect_eq "web -> dev's address is refused at once too ($r)" EACCES "${r% *}"

# --- a solicitation sent to another guest's address: dropped quietly ------
g0=$(counter inet guest); n0=$(ctl_rows)
for i in 1 2 3; do
	in_ns "$TOPO-dev" python3 -c "
import socket, struct
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
t = socket.inet_pton(socket.AF_INET6, '$NET6::a')
s.sendto(struct.pack('!BBHI', 135, 0, 0, 0) + t, ('$NET6::a', 0))"
done
sleep 1
expect_eq "unicast solicitations for web's address are not refused as \"another guest\"" \
	"$g0" "$(counter inet guest)"
expect_eq "... nor listed by ctl refused" "$n0" "$(ctl_rows)"

# --- the gateway's link-local address: refused at once -------------------
h0=$(counter inet host)
for p in "tcp 22" "tcp 53" "tcp 3128" "udp 53" "udp 9"; do
	set -- $p
	r=$(try $1 "$LL" $2 eth0)
	expect_eq "[$LL%eth0]:$2/$1 is refused with ICMPv6 admin-prohibited ($r)" EACCES "${r% *}"
	[ "$1" = udp ] && expect_ok "... at once (${r#* } s)" fast "${r#* }"
done
expect_ok "the refusals are counted as the gateway host's" test "$(counter inet host)" -gt "$h0"
r=$(try udp $NET6::1 9)
expect_eq "the gateway's ::1, udp 9, the same ($r)" EACCES "${r% *}"
expect_ok "... at once" fast "${r#* }"
r=$(try tcp $NET6::1 53)
expect_eq "DNS on the gateway's ::1 still connects" connected "${r% *}"
# Link-local source, global destination: still dropped as a spoof.
d0=$(counter bridge spoof)
in_ns "$TOPO-dev" python3 -c "
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(('$(ip -n "$TOPO-dev" -6 addr show dev eth0 scope link | awk '/inet6/ {sub("/.*", "", $2); print $2}')', 0, 0, socket.if_nametoindex('eth0')))
s.sendto(b'x', ('2001:db8:203::2', 9))" 2>/dev/null
expect_ok "a link-local source towards a global address is still dropped (counter spoof)" \
	wait_for 2 eval '[ "$(counter bridge spoof)" -gt "$d0" ]'

# --- neighbour discovery is no refusal -----------------------------------
# With port isolation on both ports the bridge never offers a frame from
# one guest to the other to its filter; a tap that joined without it
# (QEMU's bridge helper, a tap added by hand) leaves the filter as what
# keeps guests apart, and every solicitation meets it.
ip -n "$NS_GW" link set mt-web type bridge_slave isolated off
g0=$(counter bridge guest)
# dev solicits web's address (and the gateway's), over and over.
ip -n "$TOPO-dev" neigh flush dev eth0
try tcp $NET6::a 9000 >/dev/null
ip -n "$TOPO-dev" neigh flush dev eth0
try udp $NET6::1 53 >/dev/null
sleep 1
expect_eq "guests' neighbour solicitations are not counted as \"another guest\"" "$g0" "$(counter bridge guest)"
r=$(try tcp $NET6::a 9000)
expect_eq "... and still never reach the other guest: the gateway refuses ($r)" EACCES "${r% *}"
out=$(gw_ctl refused 2>&1)
expect_fail "ctl refused lists no ff02:: row" grep -q "ff02:" <<<"$out"
expect_match "... while it does list the gateway's link-local refusals" "fe80:.*the gateway host" "$out"
[ "$TAP_FAILED" = 0 ] || { echo "$out"; in_ns "$NS_GW" nft list table bridge moat | grep -A5 "chain forward"; } >&2

# --- the entries follow the sandboxes; teardown takes them away ----------
sed -i 's/egress = "open"; owner = "bob"/egress = "none"; owner = "bob"/' "$GW_CONF"
expect_ok "reload: dev loses its IPv6 (egress none)" gw_ctl reload
expect_eq "... and its proxy entry" "2001:db8:5::1 $NET6::a" "$(proxies)"
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null
out=$(in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1)
expect_eq "teardown: the guests' proxy entries are gone, the foreign one stays" \
	"2001:db8:5::1" "$(proxies)"
expect_eq "teardown: proxy_ndp and proxy_delay are back ($out)" "$knobs0" "$(knobs)"
tap_done
