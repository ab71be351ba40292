# peers-lib.sh -- sourced by bench/agent-workload.sh and bench/proxy-bench.sh
# (after tests/harness/topology.sh): HAProxy and nginx as the key injectors
# a user would build instead of moat, with the configurations in
# bench/haproxy-inject.cfg and bench/nginx-inject.conf.
#
#   peers_need                  install haproxy and nginx-light if missing
#   bench_build FILE...         make the programs unless every FILE exists
#   haproxy_start NS BIND UPSTREAM NAME CRT KEY CA AUTH
#   nginx_start   NS BIND UPSTREAM NAME CRT KEY CA AUTH
#	start the injector in namespace NS, listening on BIND (addr:port),
#	terminating TLS with CRT/KEY for NAME and re-encrypting to UPSTREAM
#	(addr:port) verified against CA, setting Authorization to AUTH; a
#	background process of this run (topo_bg), its log in
#	$TOPO_TMP/haproxy.log or nginx.log.  Nothing is written outside
#	$TOPO_TMP.

peers_need() {
	command -v haproxy >/dev/null && command -v nginx >/dev/null && return 0
	echo "bench: installing the C peers (haproxy, nginx-light) from Debian" >&2
	bash tests/deps.sh >&2
}

bench_build() {	# FILE...: build/ programs the bench runs
	local f
	for f in "$@"; do
		[ -x "$f" ] && continue
		echo "bench: building the programs (make programs)" >&2
		make -j"$(nproc)" programs >&2 || { echo "bench: make failed" >&2; return 1; }
		return 0
	done
}

haproxy_start() {	# NS BIND UPSTREAM NAME CRT KEY CA AUTH
	local pem=$TOPO_TMP/haproxy.pem
	( umask 077; cat "$5" "$6" >"$pem" ) || return 1
	topo_bg "$1" haproxy env HA_BIND="$2" HA_PEM="$pem" HA_UPSTREAM="$3" \
	    HA_NAME="$4" HA_CA="$7" HA_AUTH="$8" \
	    haproxy -db -f bench/haproxy-inject.cfg
}

nginx_start() {	# NS BIND UPSTREAM NAME CRT KEY CA AUTH
	local conf=$TOPO_TMP/nginx.conf
	mkdir -p "$TOPO_TMP/nginx-tmp" || return 1
	( umask 077
	  sed -e "s|@DIR@|$TOPO_TMP|g" -e "s|@BIND@|$2|g" -e "s|@UPSTREAM@|$3|g" \
	      -e "s|@NAME@|$4|g" -e "s|@CRT@|$5|g" -e "s|@KEY@|$6|g" \
	      -e "s|@CA@|$7|g" -e "s|@AUTH@|$8|g" bench/nginx-inject.conf >"$conf" ) || return 1
	topo_bg "$1" nginx nginx -p "$TOPO_TMP" -e "$TOPO_TMP/nginx-error.log" -c "$conf"
}
