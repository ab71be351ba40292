# 30-dnsd.sh -- demo part (sourced by tests/demo.sh; gatewayd runs dnsd
# on 10.77.0.1:53, forwarding to the test upstream on 203.0.113.53).
bold "7. dnsd: per-sandbox DNS that opens the firewall only for what it resolved"
dnsd_show() {	# dnsd_show GUEST NAME [TYPE]
	local out rc ans ede
	out=$(in_ns "$TOPO-$1" dig @$GW_ADDR +time=3 +tries=1 "$2" ${3:-A} 2>&1)
	rc=$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out")
	ans=$(awk '!/^;/ && NF >= 5 && ($4 == "A" || $4 == "CNAME") {printf "%s ", $5}' <<<"$out")
	ede=$(sed -n 's/^; EDE: \(.*\)/  [EDE \1]/p' <<<"$out")
	printf '  %-7s %-22s %-9s %s%s\n' "$1" "$2${3:+ $3}" "$rc" "${ans:--}" "$ede"
}
echo "  guest   name                   answer"
dnsd_show web pypi.org
dnsd_show web www.github.test
dnsd_show web denied.test
dnsd_show web github.test
dnsd_show dev denied.test
dnsd_show dev rebind.test
dnsd_show locked pypi.org
dnsd_show web pypi.org AAAA
echo
echo "  web's set right after the answers (nft list set inet moat allow_web):"
in_ns "$NS_GW" nft list set inet moat allow_web 2>&1 |
	sed -n '/elements/,/}/p' | tr -d '\t' | tr ',' '\n' | sed 's/^ *//; /^$/d; s/^/    /'
echo
echo "  web\$ curl http://203.0.113.10/   (pypi.org's address, opened by the answer)"
printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 http://$INET_HTTP/ 2>&1 || echo refused)"
echo "  web\$ curl http://203.0.113.99/   (never resolved for web)"
printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 http://203.0.113.99/ >/dev/null 2>&1 && echo connected || echo 'refused (not in allow_web)')"
echo "  dnsd's refusals in the audit log:"
grep '"event":"dns-refused"' "$GW_AUDIT" | tail -n 3 | cut -c1-160 | sed 's/^/    /'
