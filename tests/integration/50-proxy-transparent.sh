#!/usr/bin/env bash
# moat-proxy as a transparent proxy: the guests' tcp 80/443 is redirected
# to the proxy port by nftables in the gateway namespace of this run (the
# same redirect nft-rules installs), the name comes from the ClientHello's
# SNI or the Host header, the address from SO_ORIGINAL_DST.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
topo_banner "$NS_LAN" $LAN_HOST 443 "lan-https"
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
topo_http "$NS_GW" 0.0.0.0 80 "gateway-host-web" || not_ok "gateway host web server starts"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
# Only inside this run's gateway namespace.
in_ns "$NS_GW" nft -f - <<'NFT' || not_ok "redirect installed"
table ip moatpxtest {
	chain pre {
		type nat hook prerouting priority dstnat;
		iifname "moat0" tcp dport { 80, 443 } redirect to :3128
	}
}
NFT

tcurl() {	# tcurl GUEST NAME IP URL [args] -- direct, as if DNS said IP
	local g=$1 name=$2 ip=$3 url=$4; shift 4
	in_ns "$TOPO-$g" curl -sS --max-time 8 --cacert "$PX_DIR/bundle.crt" \
	    --resolve "$name:443:$ip" --resolve "$name:80:$ip" "$@" "$url"
}

out=$(tcurl agent api.bound.test $PX_BOUND https://api.bound.test/echo \
	-H "Authorization: Bearer $PX_PLACEHOLDER")
expect_match "transparent TLS: bound host receives the real secret" \
	"Bearer $PX_SECRET" "$(cat "$PX_DIR/bound.log" 2>/dev/null)"
expect_match "transparent TLS: guest sees the placeholder" "Bearer $PX_PLACEHOLDER" "$out"
expect_match "transparent connection was seen as redirected" \
	'"event":"inject".*"src":"10.77.0.10"' "$(cat "$TOPO_TMP/moat-proxy.log")"

code=$(tcurl agent api.bound.test $PX_BOUND https://api.bound.test/echo -o /dev/null \
	-w '%{http_code}' -H "Host: other.test")
expect_eq "transparent TLS: Host disagreeing with SNI gets 421" "421" "$code"

issuer=$(in_ns "$TOPO-agent" timeout 5 openssl s_client -connect $PX_OTHER:443 \
	-servername other.test </dev/null 2>/dev/null | sed -n 's/^issuer=//p')
expect_match "transparent TLS: a spliced host shows its own certificate" \
	"moat test upstream CA" "$issuer"

expect_eq "transparent HTTP: routed by the Host header" "200" \
	"$(tcurl agent other.test $PX_OTHER http://other.test/echo -o /dev/null -w '%{http_code}')"
expect_eq "transparent TLS without SNI (open mode) goes to the original address" "200" \
	"$(in_ns "$TOPO-agent" curl -sk --max-time 8 -o /dev/null -w '%{http_code}' \
	  https://$PX_OTHER/echo)"
expect_eq "transparent HTTP to the gateway's uplink address is refused" "403" \
	"$(in_ns "$TOPO-agent" curl -s --max-time 8 -o /dev/null -w '%{http_code}' http://203.0.113.1/)"
expect_eq "transparent HTTP to the gateway's LAN address is refused" "403" \
	"$(in_ns "$TOPO-agent" curl -s --max-time 8 -o /dev/null -w '%{http_code}' http://192.168.77.1/)"
expect_fail "transparent TLS naming a host that resolves into the LAN is refused" \
	tcurl agent lan.test $PX_OTHER https://lan.test/
expect_match "... with a TLS alert and an audit line" \
	'"event":"refuse".*"host":"lan.test"' "$(cat "$TOPO_TMP/moat-proxy.log")"
expect_fail "transparent TLS to a LAN address is refused" \
	in_ns "$TOPO-agent" curl -sk --max-time 5 https://$LAN_HOST/
expect_fail "allowlist: TLS without a name is refused" \
	in_ns "$TOPO-listed" curl -sk --max-time 5 https://$PX_OTHER/echo
expect_fail "allowlist: an unlisted SNI is refused" \
	tcurl listed other.test $PX_OTHER https://other.test/echo
expect_eq "allowlist: a listed SNI is served" "200" \
	"$(tcurl listed api.bound.test $PX_BOUND https://api.bound.test/echo -o /dev/null \
	  -w '%{http_code}')"
: >"$PX_DIR/bound.log"
tcurl plain api.bound.test $PX_BOUND https://api.bound.test/echo \
	-H "Authorization: Bearer $PX_PLACEHOLDER" >/dev/null 2>&1
expect_fail "a guest not entitled gets no injection" grep -q "$PX_SECRET" "$PX_DIR/bound.log"
expect_fail "the real value never appears in the proxy's log" \
	grep -q "$PX_SECRET" "$TOPO_TMP/moat-proxy.log"
tap_done
