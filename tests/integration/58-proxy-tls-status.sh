#!/usr/bin/env bash
# gatewayd shows the proxy's upstream TLS handshakes, resumed and in full,
# and whether the kernel carries TLS records, in `ctl status` (text and
# --json) and in the metrics.  Three intercepted requests of one guest to
# the host its secret is bound to, each on a new connection: the first
# upstream handshake is in full, the next two resume its session (the
# echo server issues TLS 1.3 tickets), and every request carries the real
# value.  Without TLS in the kernel (this test's kernel may have none),
# the status says "not available (fallback: user space)".  A reload that
# keeps the workers makes them forget their sessions.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs || not_ok "test certificates"
proxy_servers || not_ok "test servers start"

mkdir -p "$PX_DIR/state" "$PX_DIR/secrets" "$TOPO_TMP/prom" && chmod 0700 "$PX_DIR/secrets"
chmod 0755 "$TOPO_TMP/prom"
printf '%s\n' "$PX_SECRET" >"$PX_DIR/secrets/api"
chmod 0600 "$PX_DIR/secrets/api"
sed -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = false; upstream_ca = \"$PX_DIR/testca.crt\"; };\n  metrics: { textfile = \"$TOPO_TMP/prom/moat.prom\"; interval = 1; };|" \
    -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$PX_DIR/state\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "api" ]; }
);
CONF
gw_start -v; expect_eq "gatewayd starts" 0 $?
proxy_up() { [ -n "$(gw_child_pid proxy)" ] && topo_listening "$NS_GW" $GW_ADDR 3128; }
wait_for 30 proxy_up || not_ok "the proxy listens"
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
: >"$PX_DIR/bound.log"

for i in 1 2 3; do
	code=$(px_curl agent https://api.bound.test/echo -o /dev/null -w '%{http_code}' \
		-H "Authorization: Bearer $PX_PLACEHOLDER")
	expect_eq "request $i on a new connection is answered (200)" 200 "$code"
done
expect_eq "... each went up with the real value" 3 \
	"$(grep -c "^Authorization: Bearer $PX_SECRET" "$PX_DIR/bound.log")"

# The workers report once a second.
counted() { gw_ctl status | grep -q '^tls        2 upstream handshake(s) resumed, 1 in full$'; }
wait_for 10 counted
expect_match "ctl status: 2 upstream handshakes resumed, 1 in full" \
	'tls        2 upstream handshake\(s\) resumed, 1 in full' "$(gw_ctl status)"
json=$(gw_ctl status --json | python3 -c "import json,sys
t = json.load(sys.stdin)['tls']
print(t['upstream_resumed'], t['upstream_full'], t['kernel_tls'], t['connections'])")
if in_ns "$NS_GW" test -e /proc/net/tls_stat; then
	expect_match "the kernel has TLS: ctl status says kernel TLS is in use" \
		'ktls       kernel TLS: in use' "$(gw_ctl status)"
	expect_match "... and --json" '^2 1 in use [0-9]+$' "$json"
else
	expect_match "no TLS in this kernel: ctl status shows the fallback" \
		'ktls       kernel TLS: not available \(fallback: user space\) \(0 of 6 TLS sides' \
		"$(gw_ctl status)"
	expect_eq "... and --json" "2 1 unavailable 6" "$json"
fi
prom_ok() { grep -q '^moat_proxy_upstream_tls_resumed_total 2$' "$TOPO_TMP/prom/moat.prom" 2>/dev/null; }
wait_for 10 prom_ok
expect_match "the metrics count the resumed handshakes" \
	'moat_proxy_upstream_tls_resumed_total 2' "$(cat "$TOPO_TMP/prom/moat.prom")"
expect_match "... and those in full" \
	'moat_proxy_upstream_tls_full_total 1' "$(cat "$TOPO_TMP/prom/moat.prom")"

# A reload forgets the kept sessions: the next connection's handshake is
# in full (a sandbox added: the workers stay).
topo_guest more 10.77.0.14 52:54:00:00:00:0e mt-more
P1=$(gw_proxy_pids)
sed -i 's|^sandboxes = (|sandboxes = (\n  { name = "more"; mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-more"; egress = "open"; },|' "$GW_CONF"
expect_ok "reload with a sandbox added" gw_ctl reload
expect_eq "... the proxy workers stay" "$P1" "$(gw_proxy_pids)"
code=$(px_curl agent https://api.bound.test/echo -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer $PX_PLACEHOLDER")
expect_eq "a request after the reload is answered (200)" 200 "$code"
counted() { gw_ctl status | grep -q '^tls        2 upstream handshake(s) resumed, 2 in full$'; }
wait_for 10 counted
expect_match "... its upstream handshake was in full" \
	'tls        2 upstream handshake\(s\) resumed, 2 in full' "$(gw_ctl status)"
expect_fail "the value is in no log" grep -qF "$PX_SECRET" "$GW_LOG" "$GW_AUDIT"
tap_done
