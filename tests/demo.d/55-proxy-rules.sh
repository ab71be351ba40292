# 55-proxy-rules.sh -- demo part (sourced by tests/demo.sh after
# 50-proxy.sh): secret "gh" may be used only for the requests its rules
# name, within its budget.  One allowed call, one refused, one over
# budget, each in `gatewayd ctl log`.
bold "8b. The proxy: a secret used only for the requests it is meant for"
rules_demo() {
	local code i
	gh() {	# gh METHOD PATH -- status and the proxy's reason, if any
		px_curl web "https://api.bound.test$2" --path-as-is -X "$1" \
		    -H "Authorization: Bearer moat-gh-PLACEHOLDER" -o "$TOPO_TMP/gh.body" \
		    -w '%{http_code}'
	}
	echo '  secret "gh": requests = [ "GET /repos/acme/*", "POST /repos/acme/*/issues/*/comments" ];'
	echo '               budget = { requests_per_minute = 2; requests_per_day = 2000; };'
	echo
	echo "  web\$ curl ... -X GET    https://api.bound.test/repos/acme/widgets"
	echo "    $(gh GET /repos/acme/widgets)  (the real value injected)"
	echo "  web\$ curl ... -X DELETE https://api.bound.test/repos/acme/widgets"
	echo "    $(gh DELETE /repos/acme/widgets)  $(cat "$TOPO_TMP/gh.body")"
	echo "  web\$ curl ... -X GET    https://api.bound.test/repos/acme/../other/secrets"
	echo "    $(gh GET /repos/acme/../other/secrets)  $(cut -c1-60 "$TOPO_TMP/gh.body")..."
	# Two a minute: a call or two more spends it, whatever is left of it.
	for i in 1 2 3; do
		code=$(gh GET /repos/acme/gadgets)
		echo "  web\$ curl ... -X GET    https://api.bound.test/repos/acme/gadgets"
		echo "    $code  $([ "$code" = 429 ] && cat "$TOPO_TMP/gh.body")"
		[ "$code" = 429 ] && break
	done
	echo
	echo "  \$ gatewayd ctl secret list"
	gw_ctl secret list | sed 's/^/    /'
	echo "  \$ gatewayd ctl log   (these requests)"
	gw_ctl log | grep -E '"event":"request(-refused|-over-budget)?"' | grep '"secret":"gh"' |
		cut -c1-230 | sed 's/^/    /'
}
rules_demo || echo "  (request rules demo failed: see $GW_LOG)"
