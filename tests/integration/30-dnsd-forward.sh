#!/usr/bin/env bash
# dnsd's forwarding: the cache (hits do not reach the upstream, TTLs count
# down, short TTLs expire), failover between upstreams when one goes
# down, SERVFAIL when all are down, and SIGHUP reload of the policy.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

dns_topology || { not_ok "topology comes up"; exit 1; }
ip -n "$NS_INET" addr add 203.0.113.54/24 dev eth0
dns_conf 203.0.113.53 203.0.113.54
dns_upstream 203.0.113.53 10 || not_ok "first upstream starts"
up1=${TOPO_PIDS[-1]}
dns_upstream 203.0.113.54 60 || not_ok "second upstream starts"
up2=${TOPO_PIDS[-1]}
dns_start --no-nft --timeout 500 || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }

# --- cache ---------------------------------------------------------------
out1=$(qdig dev open.test)
sleep 1.2	# time must pass for the TTL to count down
out2=$(qdig dev open.test)
out3=$(qdig web pypi.org)
out4=$(qdig web pypi.org)
expect_eq "first answer" "203.0.113.10" "$(answers_of <<<"$out1")"
expect_eq "cache hit: the upstream saw open.test once" "1" "$(upstream_count open.test)"
expect_eq "cache hit: same answer" "203.0.113.10" "$(answers_of <<<"$out2")"
ttl1=$(awk '$1 == "open.test." {print $2}' <<<"$out1")
ttl2=$(awk '$1 == "open.test." {print $2}' <<<"$out2")
expect_ok "cache hit: TTL counts down ($ttl1 -> $ttl2)" test "$ttl2" -lt "$ttl1"
expect_eq "cache shared across sandboxes but policy still per sandbox" \
	"REFUSED" "$(rcode_of <<<"$(qdig web open.test)")"
expect_eq "pypi.org asked upstream once for two queries" "1" "$(upstream_count pypi.org)"
qdig dev nx.test >/dev/null; qdig dev nx.test >/dev/null
expect_eq "negative answers are cached too" "1" "$(upstream_count nx.test)"
qdig dev short.test >/dev/null
sleep 2.5	# the 2 s TTL must run out: that is what is tested
qdig dev short.test >/dev/null
expect_eq "a 2 s TTL expires: asked again" "2" "$(upstream_count short.test)"

# --- coalescing ------------------------------------------------------------
pids=()
for i in 1 2 3 4 5; do qdig dev +tries=1 txt.test TXT >/dev/null & pids+=($!); done
wait "${pids[@]}"
expect_ok "five concurrent queries for one name: at most two upstream queries" \
	test "$(upstream_count txt.test)" -le 2

# --- failover ----------------------------------------------------------------
# Count what dnsd sends to the first upstream's address (a counter in the
# internet namespace), to prove a held-down upstream is skipped, not timed.
in_ns "$NS_INET" nft -f - <<'NFT'
table inet up1probe {
	counter up1 { }
	chain in { type filter hook input priority 0; ip daddr 203.0.113.53 udp dport 53 counter name "up1"; }
}
NFT
up1_sent() { in_ns "$NS_INET" nft list counter inet up1probe up1 | awk '/packets/ {print $2}'; }
kill "$up1"; wait "$up1" 2>/dev/null
out=$(qdig dev a.github.test)
expect_eq "first upstream down: the second answers" "NOERROR 203.0.113.60" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
c0=$(up1_sent)
out=$(qdig dev deep.x.github.test)
expect_eq "and keeps answering" "NOERROR" "$(rcode_of <<<"$out")"
expect_eq "a held-down upstream is skipped (no query sent to it)" "$c0" "$(up1_sent)"
kill "$up2"; wait "$up2" 2>/dev/null
out=$(in_ns "$TOPO-dev" dig @$GW_ADDR +time=8 +tries=1 denied.test 2>&1)
expect_eq "every upstream down: SERVFAIL" "SERVFAIL" "$(rcode_of <<<"$out")"
out=$(qdig dev open.test)
expect_eq "every upstream down: cached names still answered" "NOERROR 203.0.113.10" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
dns_upstream 203.0.113.53 10 >/dev/null

# --- reload ------------------------------------------------------------------
expect_eq "before reload: denied.test refused for web" "REFUSED" \
	"$(rcode_of <<<"$(qdig web denied.test)")"
sed -i 's/"pypi.org", "\*.github.test"/"pypi.org", "*.github.test", "denied.test"/' "$DNS_CONF"
reloads() { grep -c 'reloaded ' "$TOPO_TMP/dnsd.log"; }
reloaded_since() { [ "$(reloads)" -gt "$1" ]; }
n=$(reloads); kill -HUP "$DNSD_PID"; wait_for 30 reloaded_since "$n"
out=$(in_ns "$TOPO-web" dig @$GW_ADDR +time=8 +tries=1 denied.test 2>&1)
expect_eq "after SIGHUP: denied.test answered for web" "NOERROR 203.0.113.20" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
echo 'garbage = ;' >>"$DNS_CONF"
kill -HUP "$DNSD_PID"; wait_for 30 grep -q 'is not valid' "$TOPO_TMP/dnsd.log"
expect_match "an invalid config on reload is refused with file:line" \
	"moat.conf:[0-9]+" "$(dns_log)"
out=$(qdig web denied.test)
expect_eq "and the running policy stays" "NOERROR" "$(rcode_of <<<"$out")"
kill -USR1 "$DNSD_PID"; wait_for 30 grep -q 'stats: cache hits' "$TOPO_TMP/dnsd.log"
expect_match "SIGUSR1 logs counters" "stats: cache hits [1-9]" "$(dns_log)"
expect_eq "the resolver never crashed or restarted" "" \
	"$(grep -E 'resolver exited|ERROR: AddressSanitizer|runtime error' "$TOPO_TMP/dnsd.log")"
tap_done
