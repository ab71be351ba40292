# 50-proxy.sh -- demo part (sourced by tests/demo.sh with the topology up):
# guest "web" calls an API with a placeholder; moat-proxy puts the real key
# on the wire for the bound host only, and the guest never sees it.
. tests/harness/proxy-lib.sh

bold "5b. moat-proxy: secrets injected on the wire, never in the guest"
px_demo() {
	local conf=$TOPO_TMP/proxy-demo.conf
	proxy_certs && proxy_conf "$conf" || return 1
	# The demo's own guests; web holds the placeholder of "api".
	cat >"$conf" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$PX_DIR/state";
};
secrets = (
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; } );
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "api.bound.test", "other.test", "lan.test", "pypi.org", "*.github.test" ];
    secrets = [ "api" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; },
  { name = "locked"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12"; tap = "mt-locked";
    egress = "none"; } );
CONF
	proxy_servers && proxy_start "$conf" || return 1
	echo "  secret \"api\": bound to api.bound.test; real value only in a root-only file"
	echo "  guest web holds only the placeholder $PX_PLACEHOLDER"
	echo
	echo "  web\$ curl -x http://$GW_ADDR:3128 https://api.bound.test/echo -H 'Authorization: Bearer $PX_PLACEHOLDER'"
	seen=$(px_curl web https://api.bound.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" |
		grep -i '^authorization')
	got=$(grep -i '^authorization' "$PX_DIR/bound.log" | tail -1)
	echo "    api.bound.test received : $got"
	echo "    the guest read back     : $seen"
	echo
	echo "  web\$ curl ... https://other.test/echo -H 'Authorization: Bearer $PX_PLACEHOLDER'   (not bound)"
	px_curl web https://other.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER" >/dev/null
	echo "    other.test received     : $(grep -i '^authorization' "$PX_DIR/other.log" | tail -1)  (placeholder only, spliced)"
	echo
	echo "  web\$ curl ... https://lan.test/   (a name that resolves into the LAN)"
	echo "    $(px_curl web https://lan.test/ 2>&1 | tail -1)"
	echo
	echo "  audit (gatewayd receives these over IPC; values never appear):"
	grep -o '{"source":"proxy".*}' "$TOPO_TMP/moat-proxy.log" | sed 's/^/    /' | head -5
}
px_demo || echo "  (moat-proxy demo could not start: see $TOPO_TMP/moat-proxy.log)"
