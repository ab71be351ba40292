#!/usr/bin/env bash
# gatewayd --teardown sets back every sysctl gatewayd changed: forwarding
# on the bridge and uplink, and the ICMP rate limits fast refusals lift
# (refusals.fast, moat.conf(5)).  All of it in the gateway namespace of
# this run, which starts at the kernel's defaults.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

KNOBS="net.ipv4.icmp_ratelimit net.ipv6.icmp.ratelimit net.ipv4.icmp_msgs_per_sec
	net.ipv4.icmp_msgs_burst net.ipv4.conf.moat0.forwarding net.ipv4.conf.up0.forwarding"
knobs() { local k; for k in $KNOBS; do echo "$k = $(in_ns "$NS_GW" sysctl -n "$k")"; done; }

topo_up || { not_ok "topology"; exit 1; }
# The topology turned forwarding on everywhere; gatewayd's own change to
# set back is then on the bridge and uplink, off again here.
in_ns "$NS_GW" sysctl -qw net.ipv4.conf.moat0.forwarding=0 net.ipv4.conf.up0.forwarding=0
# Values unlike both the kernel's defaults and what moat sets, so that
# "set back" cannot pass by accident (whole jiffies: the kernel rounds).
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=2000 net.ipv4.icmp_msgs_per_sec=777 \
	net.ipv4.icmp_msgs_burst=33 net.ipv6.icmp.ratelimit=3000
before=$(knobs)

gw_start; expect_eq "gatewayd starts" 0 $?
expect_eq "fast refusals: per-host ICMP limit lifted" 0 "$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"
expect_eq "fast refusals: IPv6 per-host limit lifted" 0 "$(in_ns "$NS_GW" sysctl -n net.ipv6.icmp.ratelimit)"
expect_eq "fast refusals: global cap set" 100000 "$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_msgs_per_sec)"
expect_eq "forwarding on the bridge" 1 "$(in_ns "$NS_GW" sysctl -n net.ipv4.conf.moat0.forwarding)"
# A reload with another global rate changes the cap again: teardown must
# still go back to the value found before gatewayd, not to moat's first.
sed -i 's|^  exceptions = ( );|  exceptions = ( ); refusals: { global_rate = 50000; };|' "$GW_CONF"
expect_ok "reload with another global_rate" gw_ctl reload
expect_eq "the new global cap is in force" 50000 "$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_msgs_per_sec)"
undo=$(cat "$TOPO_TMP/state/network.undo" 2>&1)
expect_match "network.undo records the ICMP limit found" '^sysctl net.ipv4.icmp_ratelimit 2000$' "$undo"

out=$(in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1); rc=$?
expect_eq "teardown refused while gatewayd runs: exit 1" 1 $rc
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null
out=$(in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1); rc=$?
expect_eq "teardown: exit 0" 0 $rc
expect_match "teardown says what it set back" "net.ipv4.icmp_ratelimit set back to 2000" "$out"
expect_eq "teardown: every sysctl gatewayd changed is back" "$before" "$(knobs)"
expect_fail "teardown removed network.undo" test -e "$TOPO_TMP/state/network.undo"

# A record naming any other sysctl is ignored, not written.
printf 'sysctl kernel.panic 1\nsysctl net.ipv4.icmp_ratelimit 200\n' >"$TOPO_TMP/state/network.undo"
panic=$(sysctl -n kernel.panic)
out=$(in_ns "$NS_GW" build/gatewayd --teardown -c "$GW_CONF" -s "$GW_SOCK" 2>&1)
expect_match "a record of another sysctl is ignored, with a warning" 'ignored "sysctl kernel.panic 1"' "$out"
expect_eq "... and kernel.panic is untouched" "$panic" "$(sysctl -n kernel.panic)"
expect_eq "... the ICMP record is still set back" 200 "$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"
tap_done
