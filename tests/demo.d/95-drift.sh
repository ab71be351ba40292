# The kernel watch: gatewayd compares the kernel state with what it set.
# The demo's config turns on verify.repair_network, so a guest's bridge
# port flipped out of isolation by an admin's slip is caught from the link
# notification and put back at once.
bold "10b. The kernel watch: a drift caught and repaired"
echo "  \$ ip link set mt-dev type bridge_slave isolated off   (an admin's slip)"
ip -n "$NS_GW" link set mt-dev type bridge_slave isolated off
demo_repaired() { grep -q '"event":"policy-repaired","object":"bridge port","port":"mt-dev"' "$GW_AUDIT"; }
wait_for 5 demo_repaired
grep -h -E '"event":"policy-(drift|repaired)".*mt-dev' "$GW_AUDIT" | cut -c1-160 | sed 's/^/  /'
echo "  mt-dev now: $(ip -d -n "$NS_GW" link show mt-dev | grep -o 'isolated o[nf]*')"
echo "  (nft changes to moat's own tables are refused by the kernel itself"
echo "   where tables have the flag owner; where not, they are repaired the same way)"
