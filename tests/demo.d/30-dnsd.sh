# 30-dnsd.sh -- demo part (sourced by tests/demo.sh with the topology up
# and, from 20-nft-rules.sh, moat's policy applied): dnsd answers the
# guests by their sandbox's policy and opens web's set before answering.
bold "6. dnsd: per-sandbox DNS that opens the firewall only for what it resolved"
dnsd_demo() {
	local user=moat-dns up
	id "$user" >/dev/null 2>&1 || user=nobody
	topo_bg "$NS_INET" dnsd-demo-upstream python3 tests/harness/dns-upstream.py \
		--addr 203.0.113.53 --log "$TOPO_TMP/dnsd-demo-upstream.queries"
	up=${TOPO_PIDS[-1]}
	topo_bg "$NS_GW" dnsd $BIN/dnsd -c "$DEMO_CONF" -d -v -u "$user"
	local i
	for i in $(seq 50); do
		in_ns "$NS_GW" ss -Hlun "src $GW_ADDR:53" | grep -q . &&
		in_ns "$NS_INET" ss -Hlun "src 203.0.113.53:53" | grep -q . && break
		sleep 0.1
	done
	echo "  dnsd on $GW_ADDR:53 (resolver as $user, seccomp), upstream 203.0.113.53 (test server)"
	show() {	# show GUEST NAME [TYPE]
		local out rc ans ede
		out=$(in_ns "$TOPO-$1" dig @$GW_ADDR +time=3 +tries=1 "$2" ${3:-A} 2>&1)
		rc=$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out")
		ans=$(awk '!/^;/ && NF >= 5 && ($4 == "A" || $4 == "CNAME") {printf "%s ", $5}' <<<"$out")
		ede=$(sed -n 's/^; EDE: \(.*\)/  [EDE \1]/p' <<<"$out")
		printf '  %-7s %-22s %-9s %s%s\n' "$1" "$2${3:+ $3}" "$rc" "${ans:--}" "$ede"
	}
	echo
	echo "  guest   name                   answer"
	show web pypi.org
	show web www.github.test
	show web denied.test
	show web github.test
	show dev denied.test
	show dev rebind.test
	show locked pypi.org
	show web pypi.org AAAA
	echo
	echo "  web's set right after the answers (nft list set inet moat allow_web):"
	in_ns "$NS_GW" nft list set inet moat allow_web 2>&1 |
		sed -n '/elements/,/}/p' | tr -d '\t' | tr ',' '\n' | sed 's/^ *//; /^$/d; s/^/    /'
	echo
	echo "  web\$ dig +short www.github.test && curl http://203.0.113.30/  (first connect after the answer)"
	ip -n "$NS_INET" addr add 203.0.113.30/24 dev eth0 2>/dev/null
	topo_http "$NS_INET" 203.0.113.30 80 "hello from the CDN" >/dev/null 2>&1
	printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 http://203.0.113.30/ 2>&1 || echo refused)"
	echo "  web\$ curl http://203.0.113.20/  (denied.test's address, never resolved for web)"
	printf '    %s\n' "$(in_ns "$TOPO-web" curl -s --max-time 3 http://203.0.113.20/ >/dev/null 2>&1 && echo connected || echo 'refused (not in allow_web)')"
	echo
	echo "  dnsd's log:"
	grep -E 'refused|rebinding' "$TOPO_TMP/dnsd.log" | sed 's/^/    /'
	# The later parts bring their own upstream on 203.0.113.53; dnsd
	# stays and forwards to it.
	kill "$up" 2>/dev/null
}
dnsd_demo || echo "  (dnsd demo could not start: see $TOPO_TMP/dnsd.log)"
