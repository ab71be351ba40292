#!/usr/bin/env bash
# dnsd opens the firewall for allowlist sandboxes: the A records of an
# allowed answer (after the CNAME chain) are in the sandbox's nftables
# set, with a timeout from the TTL, by the time the guest has the answer,
# so its first connect succeeds; cache hits refresh the timeout; nothing
# leaks to another sandbox through the shared cache; refused and private
# answers open nothing.  Policy from nft-rules, in the gateway namespace.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

[ -x build/nft-rules ] || { not_ok "build/nft-rules is built"; exit 1; }
dns_topology || { not_ok "topology comes up"; exit 1; }
dns_conf
expect_ok "nft-rules applies the policy in the gateway namespace" \
	in_ns "$NS_GW" build/nft-rules -c "$DNS_CONF" apply
topo_http "$NS_INET" 203.0.113.10 80 "pypi" || not_ok "http .10"
topo_http "$NS_INET" 203.0.113.2 80 "unresolved" || not_ok "http .2"
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
dns_start || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }

set_web() { in_ns "$NS_GW" nft list set inet moat allow_web 2>&1; }
elem() {	# elem ADDR -- that element's line of the listing, if any
	set_web | tr ',{}' '\n\n\n' | grep -E "(^| )$1( |$)" | sed 's/^ *//'
}
secs() {	# "4m59s120ms" -> 299
	local s=$1 t=0
	[[ $s =~ ([0-9]+)h ]] && t=$((t + ${BASH_REMATCH[1]} * 3600))
	[[ $s =~ ([0-9]+)m([0-9]|$) ]] && t=$((t + ${BASH_REMATCH[1]} * 60))
	[[ $s =~ ([0-9]+)s ]] && t=$((t + ${BASH_REMATCH[1]}))
	echo $t
}
expires() { secs "$(elem "$1" | sed -n 's/.*expires \([0-9hms]*\).*/\1/p')"; }
curl_web() { in_ns "$TOPO-web" curl -s --max-time 10 "http://$1/" 2>&1; }

expect_eq "before any answer, the set is empty" "" "$(elem 203.0.113.10)"
expect_fail "before any answer, web cannot reach 203.0.113.10" curl_web 203.0.113.10

# One command: dig, then at once the set and a connect.
out=$(in_ns "$TOPO-web" sh -c "dig @$GW_ADDR +short pypi.org && curl -s --max-time 10 http://203.0.113.10/")
expect_eq "answer, then an immediate connect succeeds" "203.0.113.10
pypi" "$out"
expect_match "the element is in allow_web with a 5 min timeout (TTL 300)" \
	"203.0.113.10 timeout 5m expires" "$(elem 203.0.113.10)"
expect_fail "an address no answer gave stays refused" curl_web 203.0.113.2

qdig web www.github.test >/dev/null
expect_match "CNAME chain: the final A records are opened (.30)" "timeout" "$(elem 203.0.113.30)"
expect_match "CNAME chain: the final A records are opened (.31)" "timeout" "$(elem 203.0.113.31)"
expect_eq "records off the chain are not opened" "" "$(elem 203.0.113.99)"

qdig web short.github.test >/dev/null
expect_match "a 2 s TTL opens for the 60 s floor" "203.0.113.13 timeout 1m " "$(elem 203.0.113.13)"
qdig web long.github.test >/dev/null
expect_match "a 1 day TTL is capped at 1 h" "203.0.113.14 timeout 1h " "$(elem 203.0.113.14)"

qdig web denied.test >/dev/null
expect_eq "a refused name opens nothing" "" "$(elem 203.0.113.20)"
qdig web rebind.github.test >/dev/null
expect_eq "a private answer opens nothing" "" "$(elem 192.168.77.2)"

qdig dev deep.x.github.test >/dev/null
expect_eq "an open sandbox's answer does not touch allow_web" "" "$(elem 203.0.113.11)"
qdig web deep.x.github.test >/dev/null
expect_eq "the same name from cache for web: upstream asked once" "1" \
	"$(upstream_count deep.x.github.test)"
expect_match "and web's set gets it on the cache hit" "timeout" "$(elem 203.0.113.11)"

# dnsmasq's nftset only fills the set on upstream answers, so elements
# expire while its cache keeps answering.  Here a cache hit re-adds.
in_ns "$NS_GW" nft delete element inet moat allow_web '{ 203.0.113.10 }'
expect_eq "element removed behind dnsd's back" "" "$(elem 203.0.113.10)"
sleep 2	# so that the remaining TTL is less than the full 300 s
ttl=$(qdig web pypi.org | awk '$1 == "pypi.org." && $4 == "A" {print $2}')
expect_eq "pypi.org still asked upstream only once" "1" "$(upstream_count pypi.org)"
tmo=$(secs "$(elem 203.0.113.10 | sed -n 's/.*timeout \([0-9hms]*\).*/\1/p')")
# The element's timeout is the TTL the guest was just given (same second).
if [ -n "$ttl" ] && [ "$ttl" -lt 300 ] && [ "$tmo" -ge $((ttl - 1)) ] && [ "$tmo" -le $((ttl + 1)) ]; then
	ok "a cache hit puts the element back, timeout = remaining TTL ($tmo s, TTL $ttl)"
else not_ok "a cache hit puts the element back, timeout = remaining TTL" "timeout $tmo s, TTL ${ttl:-none}: $(elem 203.0.113.10)"; fi

# Fail closed: without the policy's set, allowlist answers become SERVFAIL.
in_ns "$NS_GW" build/nft-rules -c "$DNS_CONF" flush >/dev/null 2>&1
out=$(qdig web a.github.test)
expect_eq "set update fails: the guest gets SERVFAIL, not the address" \
	"SERVFAIL" "$(rcode_of <<<"$out")"
expect_match "and it is logged" "sandbox web: set update refused" "$(dns_log)"
out=$(qdig dev open.test)
expect_eq "open sandboxes are not affected" "NOERROR" "$(rcode_of <<<"$out")"
expect_eq "the resolver never crashed or restarted" "" \
	"$(grep -E 'resolver exited|ERROR: AddressSanitizer|runtime error' "$TOPO_TMP/dnsd.log")"
tap_done
