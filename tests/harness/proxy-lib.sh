# proxy-lib.sh -- shared set-up for the moat-proxy tests, benchmarks and
# demo (sourced after topology.sh).  Everything lives in $TOPO_TMP and in
# the namespaces of this run.
#
#   proxy_certs                 test CA + server certs for the inet hosts
#   proxy_conf FILE             moat.conf with two secrets and four guests
#   proxy_servers               HTTPS echo servers + DNS in the inet ns
#   proxy_start [args]          moat-proxy in the gateway ns
#
# Hosts (DNS served by cc-dns.py on 203.0.113.53):
#   api.bound.test  203.0.113.20  the secret "api" is bound here
#   other.test      203.0.113.21  echoes too, bound to nothing
#   lan.test        192.168.77.2  a name that resolves into the LAN
#   mixed.test      203.0.113.21 and 192.168.77.2
PX_BIN=${PX_BIN:-build/moat-proxy}
PX_DIR=$TOPO_TMP/px
PX_SECRET="sk-real-4f9c2e7a1b8d"
PX_PLACEHOLDER="moat-api-PLACEHOLDER"
PX_BOUND=203.0.113.20
PX_OTHER=203.0.113.21

px_cert() {	# px_cert NAME -- server cert for NAME signed by the test CA
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=$1" -keyout "$PX_DIR/$1.key" -out "$PX_DIR/$1.csr" 2>/dev/null &&
	openssl x509 -req -in "$PX_DIR/$1.csr" -CA "$PX_DIR/testca.crt" \
	    -CAkey "$PX_DIR/testca.key" -CAcreateserial -days 2 \
	    -extfile <(printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\n' "$1") \
	    -out "$PX_DIR/$1.crt" 2>/dev/null
}

proxy_certs() {
	mkdir -p "$PX_DIR" && chmod 0755 "$PX_DIR" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=moat test upstream CA" -days 2 \
	    -keyout "$PX_DIR/testca.key" -out "$PX_DIR/testca.crt" 2>/dev/null || return 1
	px_cert api.bound.test && px_cert other.test
}

proxy_conf() {	# proxy_conf FILE [EXTRA_SANDBOXES]
	mkdir -p "$PX_DIR/secrets" && chmod 0700 "$PX_DIR/secrets"
	printf '%s\n' "$PX_SECRET" >"$PX_DIR/secrets/api"
	chmod 0600 "$PX_DIR/secrets/api"
	printf 'ghp-real-value-77\n' >"$PX_DIR/secrets/gh"
	chmod 0600 "$PX_DIR/secrets/gh"
	cat >"$1" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$PX_DIR/state";
};
secrets = (
  { name = "api"; file = "$PX_DIR/secrets/api"; hosts = [ "api.bound.test" ];
    header = "Authorization"; placeholder = "$PX_PLACEHOLDER"; },
  { name = "gh"; file = "$PX_DIR/secrets/gh"; hosts = [ "gh.bound.test" ];
    header = "Authorization"; placeholder = "moat-gh-PLACEHOLDER"; }
);
sandboxes = (
  { name = "agent"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-agent";
    egress = "open"; secrets = [ "api" ]; },
  { name = "plain"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-plain";
    egress = "open"; },
  { name = "listed"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12"; tap = "mt-listed";
    egress = "allowlist"; allow = [ "api.bound.test", "*.lan.test", "lan.test", "mixed.test" ];
    secrets = [ "api" ]; },
  { name = "inspect"; mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-inspect";
    egress = "open"; inspect = true; }${2:-}
);
CONF
}

proxy_servers() {
	ip -n "$NS_INET" addr add $PX_BOUND/24 dev eth0
	ip -n "$NS_INET" addr add $PX_OTHER/24 dev eth0
	# PX_NO_DNS=1: the caller runs its own upstream on 203.0.113.53.
	[ -n "${PX_NO_DNS:-}" ] || topo_bg "$NS_INET" px-dns python3 tests/harness/cc-dns.py 203.0.113.53 \
	    api.bound.test=$PX_BOUND other.test=$PX_OTHER lan.test=192.168.77.2 \
	    mixed.test=$PX_OTHER mixed.test=192.168.77.2 gh.bound.test=$PX_OTHER \
	    --lifetime 900
	topo_bg "$NS_INET" px-bound python3 tests/harness/proxy-server.py $PX_BOUND 443 \
	    --cert "$PX_DIR/api.bound.test.crt" --key "$PX_DIR/api.bound.test.key" \
	    --log "$PX_DIR/bound.log" --leak "$PX_DIR/secrets/api" --lifetime 900
	topo_bg "$NS_INET" px-other python3 tests/harness/proxy-server.py $PX_OTHER 443 \
	    --cert "$PX_DIR/other.test.crt" --key "$PX_DIR/other.test.key" \
	    --log "$PX_DIR/other.log" --lifetime 900
	topo_bg "$NS_INET" px-plain80 python3 tests/harness/proxy-server.py $PX_OTHER 80 \
	    --log "$PX_DIR/plain80.log" --lifetime 900
	topo_wait_port "$NS_INET" $PX_BOUND 443 && topo_wait_port "$NS_INET" $PX_OTHER 443 &&
	topo_wait_port "$NS_INET" $PX_OTHER 80
}

proxy_start() {	# proxy_start CONF [extra args]
	local conf=$1; shift
	topo_bg "$NS_GW" moat-proxy "$PX_BIN" -d -v -v -c "$conf" \
	    --upstream-ca "$PX_DIR/testca.crt" "$@"
	topo_wait_port "$NS_GW" $GW_ADDR 3128 || return 1
	cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
}

# px_curl GUEST URL [curl args] -- through the explicit proxy, trusting
# the gateway CA and the test CA (each test says which one it expects).
px_curl() {
	local g=$1 url=$2; shift 2
	in_ns "$TOPO-$g" curl -sS --max-time 8 -x http://$GW_ADDR:3128 \
	    --cacert "$PX_DIR/bundle.crt" "$@" "$url"
}
