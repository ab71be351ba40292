# cc-lib.sh -- shared set-up for the containment-check tests (sourced after
# tap.sh and topology.sh).  The scanner only ever runs inside a guest
# namespace of this run: cc_scan is the one way the tests start it.

CC_BIN=${CC_BIN:-build/containment-check}
CC_OUT=
CC_RC=

# cc_topo -- the namespace topology with two guests, its services (with the
# public resolvers' stand-ins on 9.9.9.9, 1.1.1.1 and 8.8.8.8 for the
# bypass probes to find), a stub of the gateway's resolver (10.77.0.1:53)
# and the gateway's upstream on the internet side (203.0.113.53:53).
cc_topo() {
	topo_up || return 1
	topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web || return 1
	topo_guest g2 10.77.0.11 52:54:00:00:00:0b mt-g2 || return 1
	topo_services || return 1
	topo_bg "$NS_GW" cc-dns-gw $(as_dns_user) python3 $(topo_pub tests/harness/cc-dns.py) $GW_ADDR \
		allowed.test=$INET_HTTP rebind.test=$LAN_HOST --refuse denied.test
	topo_bg "$NS_INET" cc-dns-inet python3 tests/harness/cc-dns.py \
		203.0.113.53 denied.test=$INET_HTTP allowed.test=$INET_HTTP
	topo_wait_port "$NS_GW" $GW_ADDR 53 &&
		topo_wait_port "$NS_INET" 203.0.113.53 53 &&
		topo_wait_dad "$NS_GW" moat0 &&
		topo_wait_dad "$TOPO-web" eth0 &&
		topo_wait_dad "$TOPO-g2" eth0
}

# The options every test scan uses: the test LAN host as a target,
# TEST-NET-3 public.  The bypass probes go to the built-in public
# resolvers, whose IPv4 addresses are the internet namespace's stand-ins
# (topo_resolvers) and whose IPv6 ones have no route from a guest: no
# packet is ever addressed outside this run's namespaces.
CC_ARGS=(--internet $INET_HTTP:80 --target $LAN_HOST
	--treat-as-public 203.0.113.0/24
	--allow-name allowed.test --deny-name denied.test
	--rebind-name safe.test)

# cc_scan GUEST [args...] -- run the scanner in guest namespace $TOPO-GUEST
# with --json; sets CC_OUT (the report) and CC_RC (its exit code).
cc_scan() {
	local g=$1; shift
	CC_OUT=$(ip netns exec "$TOPO-$g" timeout 60 "$CC_BIN" --json \
		"${CC_ARGS[@]}" "$@" 2>&1)
	CC_RC=$?
}

# cc_q PYTHON-EXPR -- evaluate an expression over the JSON report r and its
# result list rs (non-ok probes), printing the result.
cc_q() {
	printf '%s' "$CC_OUT" | python3 -c '
import json, sys
r = json.load(sys.stdin); rs = r["results"]
print(eval(sys.argv[1]))' "$1" 2>&1
}

# cc_breach CLASS TARGET-REGEX -- is there a breach of CLASS at TARGET?
cc_breach() {
	cc_q "any(x['outcome']=='BREACH' and x['class']=='$1' and __import__('re').search(r'$2', x['target']) for x in rs)"
}
