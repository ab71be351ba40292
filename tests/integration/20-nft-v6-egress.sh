#!/usr/bin/env bash
# Guests' IPv6 egress with gateway.ipv6 (nat66): a guest with its derived
# address (10.77.0.11 -> fd77:0:0:1::b) and a default route via the
# gateway's ::1 reaches the IPv6 internet's stand-ins (DoH on the public
# resolvers' v6 addresses, through the gateway's masquerade), and never:
# the gateway host's own IPv6 addresses (uplink and bridge), a host on the
# LAN's global prefix, another guest's IPv6 address, a unique-local
# address, or a NAT64-mapped private IPv4 address (RFC1918, link-local
# metadata, the gateway's own IPv4) or NAT64's local-use /48; each refused at once
# (ICMPv6 admin-prohibited) and counted.  A spoofed IPv6 source is dropped
# at the guest's port, a guest's router advertisement is dropped (counted
# "ra") and changes no other guest's routes, and a sandbox with ipv6 =
# false gets no IPv6 at all.  The LAN and uplink prefixes are documentation
# space made public with treat_as_public, so that what refuses the LAN is
# the host-networks set (lan6), not the private table.  NAT64's
# well-known prefix is judged by its IPv4 part: 64:ff9b::203.0.113.9
# (public by treat_as_public) is reached through a stand-in translator
# route to the LAN host.  No interception:
# the guest's own packets are the subject here (55-proxy-ipv6 has the
# proxy's redirect of guests' IPv6 80/443).
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules
[ -x "$NFTR" ] || { not_ok "nft-rules is built" "run make"; tap_done; exit 1; }

topo_up || { not_ok "topology comes up"; exit 1; }
topo_resolvers || { not_ok "the public resolvers' stand-ins come up"; exit 1; }
NET6=fd77:0:0:1
LAN6_HOST=2001:db8:77:5::2
ULA=fd00:99::2
NAT64=64:ff9b::c0a8:4d02	# 192.168.77.2, the LAN host
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest other 10.77.0.12 52:54:00:00:00:0c mt-other
topo_guest v4only 10.77.0.14 52:54:00:00:00:0e mt-v4only
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
# The LAN: a global prefix (the homelab case) and a unique-local one.
ip -n "$NS_GW" addr add 2001:db8:77:5::1/64 dev lan0 nodad
ip -n "$NS_LAN" addr add $LAN6_HOST/64 dev eth0 nodad
ip -n "$NS_LAN" addr add $ULA/64 dev eth0 nodad
ip -n "$NS_LAN" -6 route add default via 2001:db8:77:5::1
ip -n "$NS_GW" -6 route add fd00:99::/64 via $LAN6_HOST
ip -n "$NS_GW" -6 route add 64:ff9b::/96 via $LAN6_HOST
ip -n "$NS_LAN" addr add 64:ff9b::c0a8:4d02/128 dev lo nodad
# The translator's stand-in also holds NAT64 forms of a public IPv4, of
# private ones and of the gateway's IPv4, and one in the local-use /48.
NAT64_PUB=64:ff9b::cb00:7109	# 203.0.113.9
NAT64_PRIV="64:ff9b::a09:909 64:ff9b::a9fe:a9fe 64:ff9b::a4d:1"	# 10.9.9.9 169.254.169.254 10.77.0.1
NAT64_LOCAL=64:ff9b:1::cb00:7109
ip -n "$NS_GW" -6 route add 64:ff9b:1::/48 via $LAN6_HOST
for t in $NAT64_PUB $NAT64_PRIV $NAT64_LOCAL; do
	ip -n "$NS_LAN" addr add $t/128 dev lo nodad
done
guest6() {	# guest6 NAME V6 -- the guest's static address and route
	ip -n "$TOPO-$1" addr add "$2"/64 dev eth0 nodad
	ip -n "$TOPO-$1" -6 route add default via $NET6::1
}
guest6 dev $NET6::b
guest6 other $NET6::c
guest6 v4only $NET6::e
# The other guest as the gateway would route to it (not on-link for dev),
# and ready to take router advertisements as a guest's kernel does.
ip -n "$TOPO-dev" -6 route add $NET6::c/128 via $NET6::1
ip -n "$TOPO-other" -6 route add $NET6::b/128 via $NET6::1
# The kernel would redirect dev to other (same link) when it forwards
# between them, and a guest that followed it would go on-link, where port
# isolation stops it; the policy drops such redirects (nd_out), and dev
# ignores them besides, so that it meets the gateway's refusal.
in_ns "$TOPO-dev" sysctl -qw net.ipv6.conf.eth0.accept_redirects=0 net.ipv6.conf.eth0.accept_ra=0
in_ns "$TOPO-other" sysctl -qw net.ipv6.conf.eth0.forwarding=0 net.ipv6.conf.eth0.accept_ra=2
for ns in "$NS_GW" "$TOPO-dev" "$TOPO-other" "$TOPO-v4only" "$NS_LAN"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done
banner6() {	# banner6 NS ADDR -- a TCP service on [ADDR]:2222 that says hi
	topo_bg "$1" "banner6-$2" socat TCP6-LISTEN:2222,bind="[$2]",fork,reuseaddr SYSTEM:"echo hi"
	topo_wait_port "$1" "$2" 2222
}
for t in "$NS_GW $GW_UP6" "$NS_GW $NET6::1" "$NS_LAN $LAN6_HOST" "$NS_LAN $ULA" \
    "$NS_LAN $NAT64" "$TOPO-other $NET6::c"; do
	banner6 $t || { not_ok "listener on $t"; exit 1; }
done
for t in $NAT64_PUB $NAT64_PRIV $NAT64_LOCAL; do
	banner6 "$NS_LAN" $t || { not_ok "listener on $t"; exit 1; }
done

CONF=$TOPO_TMP/moat.conf
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24", "2001:db8::/32" ];
  ipv6 = { network = "$NET6::/64"; uplink_mode = "nat66"; };
};
sandboxes = (
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; },
  { name = "other"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12"; tap = "mt-other";
    egress = "open"; },
  { name = "v4only"; mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-v4only";
    egress = "open"; ipv6 = false; }
);
CONF
nftr() { in_ns "$NS_GW" "$NFTR" -c "$CONF" "$@"; }
counter() {	# counter FAMILY NAME -- its packets
	in_ns "$NS_GW" nft list counter "$1" moat "$2" 2>/dev/null | awk '/packets/ {print $2}'
}
doh6() {	# doh6 GUEST ADDR [SRC] -- the HTTP status of https://[ADDR]/
	in_ns "$TOPO-$1" env -i curl -sk -o /dev/null -w '%{http_code}' ${3:+--interface $3} \
		--max-time 4 "https://[$2]/dns-query?dns=AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE" 2>/dev/null
}
hi() {	# hi GUEST ADDR -- what [ADDR]:2222 says, and how long it took (ms)
	local t0=$(date +%s%N) out
	out=$(in_ns "$TOPO-$1" timeout 5 socat -u TCP6:"[$2]":2222,connect-timeout=4 STDOUT 2>/dev/null)
	echo "$out $(( ($(date +%s%N) - t0) / 1000000 ))"
}

a=${PUBLIC_RESOLVERS6%% *}
# Controls without moat's policy: every target is really there.
for t in $GW_UP6 $NET6::1 $LAN6_HOST $ULA $NAT64 $NET6::c $NAT64_PUB $NAT64_PRIV $NAT64_LOCAL; do
	r=$(hi dev $t)
	expect_eq "no policy: the guest reaches [$t]:2222 (the path is real)" hi "${r% *}"
done

expect_ok "apply moat's policy with gateway.ipv6 (nat66)" nftr apply
# Neighbour discovery afresh, through the policy: nothing learned before.
ip -n "$TOPO-dev" -6 neigh flush dev eth0
ip -n "$NS_GW" -6 neigh flush dev moat0
for a6 in $PUBLIC_RESOLVERS6; do
	expect_match "policy: the guest reaches the v6 internet, https://[$a6]/" \
		'^[1-5][0-9][0-9]$' "$(doh6 dev "$a6")"
done
expect_eq "policy: DNS over IPv6 to a public resolver is refused (the gateway's only)" "" \
	"$(in_ns "$TOPO-dev" dig +time=2 +tries=1 @"$a" example.com A 2>/dev/null | sed -n 's/.*status: \([A-Z]*\),.*/\1/p')"
check_refused() {	# check_refused WHAT ADDR COUNTER
	local c0 r
	c0=$(counter inet "$3")
	r=$(hi dev "$2")
	expect_eq "policy: $1 [$2] is not reached" "" "${r% *}"
	expect_eq "policy: $1 [$2] refused at once (${r##* } ms), counted as $3" True \
		"$([ "${r##* }" -lt 2000 ] && [ "$(counter inet "$3")" -gt "$c0" ] && echo True || echo False)"
}
check_refused "the gateway's uplink address" $GW_UP6 host
check_refused "the gateway's bridge address" $NET6::1 host
check_refused "the LAN host on a global prefix" $LAN6_HOST private
check_refused "a unique-local address" $ULA private
check_refused "a NAT64-mapped private IPv4" $NAT64 private
check_refused "another guest's address" $NET6::c guest
r=$(hi dev $NAT64_PUB)
expect_eq "policy: NAT64 of a public IPv4 [$NAT64_PUB] is reached (its IPv4 part is public)" hi "${r% *}"
for t in $NAT64_PRIV; do
	check_refused "NAT64 of a private IPv4 or the gateway's" $t private
done
check_refused "NAT64's local-use prefix" $NAT64_LOCAL private

# A spoofed source: another address of the /64 on dev's own port.
ip -n "$TOPO-dev" addr add $NET6::99/64 dev eth0 nodad
c0=$(counter bridge spoof)
expect_eq "policy: a spoofed IPv6 source reaches nothing" 000 "$(doh6 dev "$a" $NET6::99)"
expect_eq "policy: the spoofed packets were dropped at the port, counted as spoof" True \
	"$([ "$(counter bridge spoof)" -gt "$c0" ] && echo True || echo False)"
ip -n "$TOPO-dev" addr del $NET6::99/64 dev eth0

# A router advertisement from dev: a default route and a prefix.
routes0=$(ip -n "$TOPO-other" -6 route show | sort)
c0=$(counter bridge ra)
in_ns "$TOPO-dev" python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
ra = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0)
pio = struct.pack("!BBBBIII", 3, 4, 64, 0xc0, 86400, 14400, 0) + \
    socket.inet_pton(socket.AF_INET6, "2001:db8:bad::")
idx = socket.if_nametoindex("eth0")
for _ in range(3):
    s.sendto(ra + pio, ("ff02::1", 0, 0, idx))
PY
sleep 1
expect_eq "policy: dev's router advertisements were dropped, counted as ra" True \
	"$([ "$(counter bridge ra)" -ge $((c0 + 3)) ] && echo True || echo False)"
expect_eq "policy: the other guest's routes did not change" "$routes0" \
	"$(ip -n "$TOPO-other" -6 route show | sort)"

# ipv6 = false: the same static address and route get nothing.
c0=$(counter bridge ipv6)
expect_eq "policy: the ipv6 = false sandbox does not reach the v6 internet" 000 "$(doh6 v4only "$a")"
expect_eq "policy: its IPv6 was dropped at its port, counted as ipv6" True \
	"$([ "$(counter bridge ipv6)" -gt "$c0" ] && echo True || echo False)"
r=$(doh6 dev "$a")
expect_match "policy: dev still reaches the v6 internet after all that" '^[1-5][0-9][0-9]$' "$r"
[[ $r =~ ^[1-5] ]] || { ip -n "$TOPO-dev" -6 addr; ip -n "$TOPO-dev" -6 route; ip -n "$TOPO-dev" -6 neigh; in_ns "$NS_GW" nft list ruleset | grep -E "counter|packets" | grep -v "packets 0 " | head -60; } >&2
expect_ok "flush" nftr flush
tap_done
