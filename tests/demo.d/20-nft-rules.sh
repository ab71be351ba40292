# 20-nft-rules.sh -- demo part (sourced by tests/demo.sh with the topology
# up): load moat's policy with nft-rules and probe again from the guests.
bold "4. nft-rules: the policy as one nftables transaction"
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" check
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" apply &&
	echo "  applied: tables inet moat and bridge moat (one atomic batch)"
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" verify &&
	echo "  verify: the kernel's tables match the config"
# web is in allowlist mode: dnsd would add what allowed names resolve to;
# here the internet web server's address is added by hand for 60 s.
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" add web 60000 $INET_HTTP &&
	echo "  allow_web: + $INET_HTTP for 60 s (as dnsd does for allowed names)"

bold "5. Probes from the guests with moat's policy"
demo_probes
echo "  refusals counted per reason (nft list counters table inet moat):"
in_ns "$NS_GW" nft list counters table inet moat 2>/dev/null |
	awk '/counter/ {name=$2} /packets/ && $2 > 0 {printf "    %-10s %s\n", name, $2}'
