#!/usr/bin/env bash
# AAAA answers for guests with IPv6 (gateway.ipv6): an allowlist guest
# that asks for an AAAA-only allowed name gets its public address, and the
# address is in the sandbox's set allow6_web by the time the answer
# arrives, so its first connect over IPv6 succeeds; a unique-local AAAA is
# removed with an EDE (Blocked), also from a mixed answer, and opens
# nothing; a name the allow list lacks is refused and its address stays
# unreachable; an address no answer gave stays refused; a name with ports
# of its own opens its AAAA address for those ports alone (allowp6_web).  The same allow
# list with ipv6 = false gets no AAAA record at all (an empty answer, the
# upstream never asked), and an open guest with IPv6 gets AAAA answers
# with nothing added to any set.  dnsd answers on the gateway's IPv6
# address as on its IPv4 one, knowing each guest by its IPv6 address.
# dnsd alone, policy from nft-rules, in
# the gateway namespace; the v6 "internet" is documentation space made
# public with treat_as_public, off the uplink's own network (which is the
# host's, refused as such).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

[ -x build/nft-rules ] || { not_ok "build/nft-rules is built"; exit 1; }
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web || { not_ok "guest web"; exit 1; }
topo_guest web4 10.77.0.13 52:54:00:00:00:0d mt-web4 || { not_ok "guest web4"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev || { not_ok "guest dev"; exit 1; }
NET6=fd77:0:0:1
V6_OK=2001:db8:cafe::10		# v6only.github.test
V6_DENIED=2001:db8:cafe::11	# denied6.test
V6_MIXED=2001:db8:cafe::12	# mixed6.github.test, with a unique-local one
V6_SSH=2001:db8:cafe::13	# ssh6.test, allowed for tcp/2222 only
V6_NAT64=64:ff9b::cb00:7114	# nat64.github.test's public one (203.0.113.20)
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $NET6::1/64 dev moat0 nodad
for g in "web $NET6::a" "web4 $NET6::d" "dev $NET6::b"; do
	set -- $g
	ip -n "$TOPO-$1" addr add "$2"/64 dev eth0 nodad
	ip -n "$TOPO-$1" -6 route add default via $NET6::1
done
for a in $V6_OK $V6_DENIED $V6_MIXED $V6_SSH $V6_NAT64; do
	ip -n "$NS_INET" addr add $a/128 dev lo nodad
done
# The way back for the controls without the policy (with it, nat66).
ip -n "$NS_INET" -6 route add $NET6::/64 via $GW_UP6
for ns in "$NS_GW" "$TOPO-web" "$TOPO-web4" "$TOPO-dev"; do
	topo_wait_dad "$ns" "$( [ "$ns" = "$NS_GW" ] && echo moat0 || echo eth0)" ||
		{ not_ok "link-local addresses ready in $ns"; exit 1; }
done
for a in $V6_OK $V6_DENIED $V6_MIXED $V6_SSH $V6_NAT64; do
	topo_http "$NS_INET" $a 80 "hello from $a" || { not_ok "http on [$a]"; exit 1; }
done
topo_bg "$NS_INET" ssh6 socat TCP6-LISTEN:2222,bind="[$V6_SSH]",fork,reuseaddr SYSTEM:"echo hi"
topo_wait_port "$NS_INET" $V6_SSH 2222 || { not_ok "listener on [$V6_SSH]:2222"; exit 1; }

cat >"$DNS_CONF" <<CONF
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
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org", "*.github.test", "ssh6.test:tcp/2222" ]; },
  { name = "web4"; mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-web4";
    egress = "allowlist"; allow = [ "pypi.org", "*.github.test" ]; ipv6 = false; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; }
);
CONF
curl6() {	# curl6 GUEST ADDR -- what http://[ADDR]/ says (empty if refused)
	in_ns "$TOPO-$1" curl -s --max-time 4 "http://[$2]/" 2>/dev/null
}
# Controls without moat's policy: the v6 hosts are really there.
for a in $V6_OK $V6_DENIED $V6_MIXED; do
	expect_eq "no policy: web reaches http://[$a]/ (the path is real)" "hello from $a" "$(curl6 web $a)"
done

expect_ok "nft-rules applies the policy with gateway.ipv6" \
	in_ns "$NS_GW" build/nft-rules -c "$DNS_CONF" apply
ip -n "$TOPO-web" -6 neigh flush dev eth0
ip -n "$NS_GW" -6 neigh flush dev moat0
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
dns_start || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }

set6() { in_ns "$NS_GW" nft list set inet moat "allow6_$1" 2>&1; }
elem6() {	# elem6 SANDBOX ADDR -- that element's line of allow6_SANDBOX, if any
	set6 "$1" | tr ',{}' '\n\n\n' | grep -E "(^| )$2( |$)" | sed 's/^ *//'
}
aaaa_of() { awk '!/^;/ && NF >= 5 && $4 == "AAAA" {print $5}' | sort | tr '\n' ' ' | sed 's/ $//'; }

expect_eq "before any answer, allow6_web is empty of $V6_OK" "" "$(elem6 web $V6_OK)"
expect_eq "before any answer, web cannot reach [$V6_OK]" "" "$(curl6 web $V6_OK)"
expect_match "web4 (ipv6 = false) has no IPv6 set" "No such file or directory" "$(set6 web4)"

# One command: dig, then at once a connect over IPv6 to what it said.
out=$(in_ns "$TOPO-web" sh -c "a=\$(dig @$GW_ADDR +short AAAA v6only.github.test); echo \$a; curl -s --max-time 4 \"http://[\$a]/\"")
expect_eq "AAAA-only allowed name: the answer, then an immediate connect over IPv6 succeeds" \
	"$V6_OK
hello from $V6_OK" "$out"
expect_match "the element is in allow6_web for the TTL and a second (TTL 300)" \
	"$V6_OK timeout 5m1s expires" "$(elem6 web $V6_OK)"
expect_eq "an allowed AAAA opens nothing in web's IPv4 set" "" \
	"$(in_ns "$NS_GW" nft list set inet moat allow_web | grep -F "$V6_OK")"

out=$(qdig web AAAA priv6.github.test)
expect_eq "a unique-local AAAA: NOERROR" "NOERROR" "$(rcode_of <<<"$out")"
expect_eq "...with the record removed" "" "$(aaaa_of <<<"$out")"
expect_match "...and an EDE saying so" "EDE: 15 \(Blocked\).*private address removed by moat" "$out"
expect_eq "...and nothing opened" "" "$(elem6 web fd00:99::2)"

out=$(qdig web AAAA mixed6.github.test)
expect_eq "a mixed answer keeps only its public AAAA" "$V6_MIXED" "$(aaaa_of <<<"$out")"
expect_match "...marked with the EDE" "EDE: 15 \(Blocked\)" "$out"
expect_match "...its public address opened" "$V6_MIXED timeout" "$(elem6 web $V6_MIXED)"
expect_eq "...and reached" "hello from $V6_MIXED" "$(curl6 web $V6_MIXED)"

# NAT64 (64:ff9b::/96) is judged by its IPv4 part: the mapped private
# IPv4s and the gateway's go with the EDE, the mapped public one is opened
# and reached through the translator (here the internet's stand-in).
out=$(qdig web AAAA nat64.github.test)
expect_eq "a NAT64 answer keeps only its mapped public AAAA" "$V6_NAT64" "$(aaaa_of <<<"$out")"
expect_match "...marked with the EDE" "EDE: 15 \(Blocked\).*private address removed by moat" "$out"
expect_match "...its address opened in allow6_web" "$V6_NAT64 timeout" "$(elem6 web $V6_NAT64)"
for a in 64:ff9b::a09:909 64:ff9b::a9fe:a9fe 64:ff9b::a4d:1; do
	expect_eq "...the mapped private $a opened nothing" "" "$(elem6 web $a)"
done
expect_eq "...and reached" "hello from $V6_NAT64" "$(curl6 web $V6_NAT64)"

out=$(qdig web AAAA denied6.test)
expect_eq "a name the allow list lacks: REFUSED" "REFUSED" "$(rcode_of <<<"$out")"
expect_eq "...opening nothing" "" "$(elem6 web $V6_DENIED)"
expect_eq "...and its address stays unreachable over IPv6" "" "$(curl6 web $V6_DENIED)"

# A name with ports of its own: its AAAA address opens for those ports
# alone, in allowp6_web (address . protocol . port).
expect_eq "ssh6.test (tcp/2222 only): its AAAA answer" "$V6_SSH" "$(qdig web AAAA ssh6.test | aaaa_of)"
expect_match "...opened as address . tcp . 2222 in allowp6_web" "$V6_SSH . tcp . 2222" \
	"$(in_ns "$NS_GW" nft list set inet moat allowp6_web 2>&1)"
expect_eq "...not as a plain address" "" "$(elem6 web $V6_SSH)"
expect_eq "...so web reaches [$V6_SSH]:2222" "hi" \
	"$(in_ns "$TOPO-web" timeout 5 socat -u TCP6:"[$V6_SSH]":2222,connect-timeout=4 STDOUT 2>/dev/null)"
expect_eq "...and not its port 80" "" "$(curl6 web $V6_SSH)"

# dnsd answers on the gateway's IPv6 address too, and knows the guest
# by its IPv6 address: the same policy, the same set.
out=$(in_ns "$TOPO-web" dig @$NET6::1 +time=5 +tries=1 AAAA mixed6.github.test 2>&1)
expect_eq "over IPv6 to [$NET6::1]: web's allowed name is answered" "$V6_MIXED" "$(aaaa_of <<<"$out")"
out=$(in_ns "$TOPO-web" dig @$NET6::1 +tcp +time=5 +tries=1 AAAA v6only.github.test 2>&1)
expect_eq "...over TCP too" "$V6_OK" "$(aaaa_of <<<"$out")"
out=$(in_ns "$TOPO-web" dig @$NET6::1 +time=5 +tries=1 AAAA denied6.test 2>&1)
expect_eq "...and a name off web's list is refused there as on IPv4" "REFUSED" "$(rcode_of <<<"$out")"
out=$(in_ns "$TOPO-dev" dig @$NET6::1 +time=5 +tries=1 AAAA denied6.test 2>&1)
expect_eq "...while the open guest dev gets it over IPv6" "$V6_DENIED" "$(aaaa_of <<<"$out")"
expect_eq "web4 (no IPv6) cannot ask over IPv6" "" \
	"$(in_ns "$TOPO-web4" dig @$NET6::1 +time=2 +tries=1 +short AAAA v6only.github.test 2>/dev/null | grep -v '^;')"

# ipv6 = false: the same allow list, no AAAA, the upstream not asked.
n0=$(upstream_count v6only.github.test)
out=$(qdig web4 AAAA v6only.github.test)
expect_eq "ipv6 = false: the AAAA query is answered NOERROR" "NOERROR" "$(rcode_of <<<"$out")"
expect_eq "...with no AAAA record" "" "$(aaaa_of <<<"$out")"
expect_eq "...without asking the upstream" "$n0" "$(upstream_count v6only.github.test)"
expect_eq "...and web4 does not reach [$V6_OK] over IPv6 (it has none)" "" "$(curl6 web4 $V6_OK)"

# An open sandbox with IPv6 gets AAAA answers; no set is touched.
out=$(qdig dev AAAA denied6.test)
expect_eq "open guest with IPv6: the AAAA answer" "$V6_DENIED" "$(aaaa_of <<<"$out")"
expect_eq "...which opens nothing in web's set" "" "$(elem6 web $V6_DENIED)"
r=$(curl6 dev $V6_DENIED)
expect_eq "...and dev reaches it" "hello from $V6_DENIED" "$r"
[ -n "$r" ] || { in_ns "$TOPO-dev" curl -v --max-time 4 "http://[$V6_DENIED]/"; ip -n "$TOPO-dev" -6 route; ip -n "$NS_GW" -6 route; in_ns "$NS_GW" nft list ruleset | grep -E "counter|packets" | grep -v "packets 0 " | head -40; } >&2
expect_eq "web still does not reach [$V6_DENIED]" "" "$(curl6 web $V6_DENIED)"
expect_eq "dnsd never crashed" "" \
	"$(grep -E 'resolver exited|ERROR: AddressSanitizer|runtime error' "$TOPO_TMP/dnsd.log")"
in_ns "$NS_GW" build/nft-rules -c "$DNS_CONF" flush >/dev/null 2>&1
tap_done
