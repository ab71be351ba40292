# 90-containment.sh -- demo part (sourced by tests/demo.sh): containment-
# check scans outward from inside guest "web" (10.77.0.10, gateway
# 10.77.0.1) and prints its report.  It runs only inside $TOPO-web.

bold "10. containment-check inside guest web (10.77.0.10)"
if ! in_ns "$NS_GW" ss -Hlun "sport = :53" 2>/dev/null | grep -q .; then
	echo "  (no resolver listens on the gateway yet: starting the test stub)"
	topo_bg "$NS_GW" cc-demo-dns $(as_dns_user) python3 $(topo_pub tests/harness/cc-dns.py) $GW_ADDR \
		--lifetime 120
	topo_wait_port "$NS_GW" $GW_ADDR 53
fi
# With interception on (the default) a guest's tcp 80/443 to the internet
# meets the gateway's proxy, which lets web (allowlist) fetch only by an
# allowed name: the positive control is pypi.org, which the demo's
# upstream resolves to the internet web server.  The bypass probes go to
# the public resolvers' stand-ins on 9.9.9.9, 1.1.1.1 and 8.8.8.8.
echo "  \$ ip netns exec $TOPO-web containment-check --expect allowlist \\"
echo "      --internet pypi.org:80 --allow-name pypi.org --target $LAN_HOST \\"
echo "      --treat-as-public 203.0.113.0/24"
in_ns "$TOPO-web" $BIN/containment-check --expect allowlist \
	--internet pypi.org:80 --allow-name pypi.org --target $LAN_HOST \
	--treat-as-public 203.0.113.0/24 2>&1 | sed 's/^/  /'
cc_demo_rc=${PIPESTATUS[0]}
case $cc_demo_rc in
0) echo "  exit 0: contained, every control passed" ;;
1) echo "  exit 1: a breach or a failed control (see above)" ;;
*) echo "  exit $cc_demo_rc: usage or system error" ;;
esac
