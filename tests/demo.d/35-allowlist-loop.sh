# 35-allowlist-loop.sh -- demo part (sourced by tests/demo.sh): an agent
# in web is refused a name; the operator sees it and grants it for a while.
bold "7b. The allowlist loop: see what a guest was refused, grant it narrowly"
echo "  web\$ dig open.test   (not on web's allow list)"
in_ns "$TOPO-web" dig @$GW_ADDR +time=3 +tries=1 open.test A 2>&1 |
	grep -E 'status:|EDE' | sed 's/^;* */    /'
echo "  web\$ curl -x http://$GW_ADDR:3128 http://open.test/"
printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 -x "http://$GW_ADDR:3128" http://open.test/ 2>&1)"
echo "  \$ gatewayd ctl refused web"
gw_ctl refused web | cut -c1-150 | sed 's/^/    /'
echo "  \$ gatewayd ctl allow web open.test --for 10m"
gw_ctl allow web open.test --for 10m 2>&1 | sed 's/^/    /'
echo "  web\$ dig +short open.test; curl -x http://$GW_ADDR:3128 http://open.test/"
printf '    %s\n' "$(in_ns "$TOPO-web" dig @$GW_ADDR +time=3 +tries=1 +short open.test A 2>&1)"
printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 -x "http://$GW_ADDR:3128" http://open.test/ 2>&1)"
echo "  (no child restarted: dnsd took web's new list alone, the proxy in place;"
echo "   the grant ends by itself in 10 minutes, or now:)"
echo "  \$ gatewayd ctl unallow web open.test"
gw_ctl unallow web open.test 2>&1 | sed 's/^/    /'
echo "  \$ gatewayd ctl names dev --as-allow   (what the open sandbox dev resolved)"
gw_ctl names dev --as-allow 2>&1 | sed 's/^/    /'
