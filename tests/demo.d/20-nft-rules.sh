# 20-nft-rules.sh -- demo part (sourced by tests/demo.sh; gatewayd has
# applied moat's policy through nft-rules' library).
bold "5. nft-rules: the policy, one nftables transaction"
n=$(in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" render | wc -l)
echo "  \$ nft-rules -c moat.conf render   ($n lines of nft syntax; excerpt)"
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" render |
	grep -E -A4 'map sandboxes \{' | head -6 | sed 's/^[[:space:]]*/    /'
in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" render |
	grep -E -A1 'chain refuse_private \{' | sed 's/^[[:space:]]*/    /'
# verify compares what gatewayd applied with the config: drift here is a
# failure of the demo, shown whole, never skipped.
out=$(in_ns "$NS_GW" $BIN/nft-rules -c "$DEMO_CONF" verify 2>&1); rc=$?
if [ $rc = 0 ]; then
	echo "  \$ nft-rules verify: the kernel's tables match the config (exit 0)"
else
	echo "  \$ nft-rules verify: FAILED (exit $rc)"
	printf '%s\n' "$out" | sed 's/^/    /'
	echo "demo: nft-rules verify disagrees with what gatewayd applied" >&2
	exit 1
fi

bold "6. Probes from the guests with moat running"
demo_probes
echo "  (web is in allowlist mode: nothing is open for it until dnsd answers"
echo "   an allowed name, next section)"
echo "  \$ gatewayd ctl counters   (refusals so far, by reason)"
gw_ctl counters | awk '$3 > 0' | sed 's/^/    /'
