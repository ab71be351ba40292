# 50-proxy.sh -- demo part (sourced by tests/demo.sh; gatewayd runs the
# proxy on 10.77.0.1:3128): guest "web" calls an API with a placeholder;
# the real key goes on the wire for the bound host only, and the guest
# never sees it.
bold "8. The proxy: secrets injected on the wire, never in the guest"
px_demo() {
	local seen got
	# The guest trusts the gateway's CA (provision installs it in real
	# guests); the test CA signs the "internet" servers.
	cat "$DEMO_STATE/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt" || return 1
	echo "  secret \"api\": bound to api.bound.test; its value is only in a root-only file"
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
	echo "    other.test received     : $(grep -i '^authorization' "$PX_DIR/other.log" | tail -1)  (placeholder only)"
	echo
	echo "  web\$ curl ... https://lan.test/   (a name that resolves into the LAN)"
	echo "    $(px_curl web https://lan.test/ 2>&1 | tail -1)"
	echo
	echo "  the proxy's audit events (secret names only, never values):"
	grep '"source":"proxy"' "$GW_AUDIT" | tail -n 4 | cut -c1-200 | sed 's/^/    /'
	if grep -q "$PX_SECRET" "$GW_AUDIT" "$GW_LOG"; then
		echo "    !! the real value appears in a log"
	else
		echo "    the real value appears in no log"
	fi
}
px_demo || echo "  (proxy demo failed: see $GW_LOG)"
