# dns-lib.sh -- shared set-up for dnsd's integration tests (sourced after
# tap.sh and topology.sh).  Three guests, as in examples/demo.conf:
#   web    10.77.0.10  allowlist [pypi.org, *.github.test]
#   dev    10.77.0.11  open
#   locked 10.77.0.12  none
# The upstream is tests/harness/dns-upstream.py on 203.0.113.53 in the
# internet namespace; everything stays inside this run's namespaces.

DNSD=${DNSD:-build/dnsd}
DNS_UP=tests/harness/dns-upstream.py
DNS_CONF=$TOPO_TMP/moat.conf
DNS_UPLOG=$TOPO_TMP/upstream.log

dns_conf() {	# dns_conf [UPSTREAM...] -- write $DNS_CONF
	local ups=${*:-203.0.113.53} list="" u
	for u in $ups; do list="$list${list:+, }\"$u\""; done
	cat >"$DNS_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ $list ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org", "*.github.test" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; },
  { name = "locked"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12"; tap = "mt-locked";
    egress = "none"; }
);
CONF
}

dns_topology() {	# the namespaces and the three guests
	topo_up || return 1
	topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web || return 1
	topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev || return 1
	topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked || return 1
}

dns_udp_listening() { in_ns "$1" ss -Hlun "src $2:53" 2>/dev/null | grep -q .; }
dns_wait_udp() {	# dns_wait_udp NS ADDR -- wait up to 30 s for a UDP listener on :53
	wait_for 30 dns_udp_listening "$@"
}

dns_upstream() {	# dns_upstream ADDR [BASE] -- a test upstream in the inet ns
	topo_bg "$NS_INET" "upstream-$1" python3 "$DNS_UP" --addr "$1" \
	    --log "$DNS_UPLOG" --base "${2:-10}"
	dns_wait_udp "$NS_INET" "$1"
}

# dnsd's own user where installed (make check installs it): the policy
# knows dnsd's answers by that uid and drops other UDP from port 53.
DNS_USER=$(getent passwd moat-dns >/dev/null && echo moat-dns || echo nobody)
dns_start() {	# dns_start [dnsd args...] -- dnsd in the gateway namespace
	topo_bg "$NS_GW" dnsd "$DNSD" -c "$DNS_CONF" -d -v -u "$DNS_USER" "$@"
	DNSD_PID=${TOPO_PIDS[-1]}
	dns_wait_udp "$NS_GW" "$GW_ADDR"
}

dns_log() { cat "$TOPO_TMP/dnsd.log"; }

qdig() {	# qdig GUEST dig-args... -- dig from a guest at the gateway
	local g=$1; shift
	in_ns "$TOPO-$g" dig @"$GW_ADDR" +time=8 +tries=1 "$@" 2>&1
}

rcode_of() { sed -n 's/.*status: \([A-Z]*\).*/\1/p' | head -1; }
answers_of() { awk '!/^;/ && NF >= 5 && $4 == "A" {print $5}' | sort | tr '\n' ' ' | sed 's/ $//'; }
upstream_count() {	# upstream_count NAME -- queries the upstream saw
	grep -c "^$1 " "$DNS_UPLOG" 2>/dev/null || true
}
