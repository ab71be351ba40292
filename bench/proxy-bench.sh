#!/usr/bin/env bash
# proxy-bench.sh -- moat-proxy side by side with a direct connection and
# tinyproxy (CONNECT), against the same HTTPS server in the internet
# namespace of a test topology.  Every packet stays in this run's
# namespaces; loads are bounded and stop by themselves (about 1-2 minutes).
#
#   bash bench/proxy-bench.sh [REQUESTS] [ROUNDS]   (root; builds and installs what is missing)
#
# Server: bench/bench-server.c, built here (not by make): C, OpenSSL, a
# thread per connection, keep-alive, head and body in one TLS record, so a
# small request costs one round trip and no delayed ACK.
# Small requests: REQUESTS (default 2000) sequential GETs on one keep-alive
# connection with curl (one process, connection reused; the first request,
# which pays for the connection, is left out); per-request times are
# curl's time_total (on a reused connection: request sent to last byte),
# req/s is their reciprocal mean (curl's own overhead between requests is
# not counted, the same for every path).  Download: 100 MiB.  Idle: the proxy's RSS growth for 1,000
# open, idle CONNECT tunnels.  ROUNDS (default 3) interleaved rounds;
# bench/proxy-tables.py prints a table an area (tunnel, interception,
# download, plain HTTP) with the median and range of each number.
# Plain-HTTP rows (plain-*): the same server without TLS on port 80,
# absolute-URI GETs on one keep-alive connection to the proxy, against
# moat-proxy, tinyproxy and squid (Debian's, no cache, no logs).
# MODES="..." picks a subset of the rows.
# Peers of the tunnel rows: tinyproxy, and relay (bench/relay.c, built
# here: a thread a direction doing blocking read/write between the
# guest's TCP connection and one to the server, the simplest relay there
# is, so the floor any proxy in the middle stands on).  Peers of the
# intercepted row: HAProxy and nginx (Debian's; bench/haproxy-inject.cfg
# and bench/nginx-inject.conf: terminate TLS for the API host, set the
# real key, re-encrypt with verification and SNI, upstream keep-alive),
# installed when missing; and mitmproxy (mitmdump, Debian's), adding a
# request header the way moat-proxy injects one, when it is installed.
# Row sockmap: a second moat-proxy (the same build) whose tunnels the
# kernel carries, with the socket map gatewayd's parent would give it
# (bench/sockmap-run.c loads it); spliced is splice(2) in the worker.
# PX_BIN_B=FILE adds rows spliced-b and intercepted-b for a second build
# of moat-proxy, run side by side with the first (to compare builds under
# the same load).
# SYSCALLS=1 then counts system calls per small request for each proxy
# (strace -c -f on the proxy's process, N requests after the rounds; the
# first request, which pays for the connection, is in the count).
# PROFILE=MODE PROFILE_OUT=FILE: perf record (call graphs) of that row's
# proxy during N more small requests, into FILE.
# NICE=N (for example -5) runs the client, the servers and every proxy
# at that niceness, the same for every row, so that other work on a
# shared machine disturbs the rows less.
# PIN=1 pins the client (curl) to CPU 0 and the server and every proxy to
# CPU 1, the same placement for every row, so that a proxy competes with
# the server it relays for, never with the client; unset or PIN=0, the
# scheduler places all three.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one round of 20
# requests, a 1 MiB download and 50 idle tunnels, rows spliced (moat),
# sockmap, tinyproxy, intercepted (moat) and haproxy unless MODES says
# otherwise.
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. bench/peers-lib.sh
N=${1:-2000}
ROUNDS=${2:-3}
DL=104857600 IDLE_N=1000
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	N=20 ROUNDS=1 NI=20 DL=1048576 IDLE_N=50 MODES=${MODES:-"spliced sockmap tinyproxy intercepted haproxy"}
fi
# servers stop by themselves: long enough for slow rounds on a busy machine
LIFE=$((600 + ROUNDS * 180))
peers_need || exit 1
for t in tinyproxy squid haproxy nginx curl cc strace; do
	command -v $t >/dev/null || { echo "bench: needs $t"; exit 1; }
done
bench_build "$PX_BIN" || exit 1

topo_up || exit 1
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
ip -n "$NS_INET" route add 10.77.0.0/24 via 203.0.113.1
SRV=$TOPO_TMP/bench-server
cc -O2 -o "$SRV" bench/bench-server.c -lssl -lcrypto -lpthread || exit 1
cc -O2 -o "$TOPO_TMP/relay" bench/relay.c -lpthread || exit 1
cc -O2 -o "$TOPO_TMP/sockmap-run" bench/sockmap-run.c -lbpf || exit 1
cc -O2 -o "$TOPO_TMP/tls-relay" bench/tls-relay.c -lssl -lcrypto -lpthread || exit 1
proxy_certs && proxy_conf "$TOPO_TMP/moat.conf" || exit 1
# Room for the idle tunnels' measurement: they all come from one sandbox,
# past the default per-sandbox cap of connections.
sed -i "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = true; per_sandbox = $((IDLE_N + 100)); };|" \
    "$TOPO_TMP/moat.conf"
ip -n "$NS_INET" addr add $PX_BOUND/24 dev eth0
ip -n "$NS_INET" addr add $PX_OTHER/24 dev eth0
topo_bg "$NS_INET" px-dns python3 tests/harness/cc-dns.py 203.0.113.53 \
    api.bound.test=$PX_BOUND other.test=$PX_OTHER --lifetime $LIFE
topo_bg "$NS_INET" srv-bound "$SRV" $PX_BOUND 443 "$PX_DIR/api.bound.test.crt" \
    "$PX_DIR/api.bound.test.key" $LIFE
topo_bg "$NS_INET" srv-other "$SRV" $PX_OTHER 443 "$PX_DIR/other.test.crt" \
    "$PX_DIR/other.test.key" $LIFE
topo_bg "$NS_INET" srv-plain "$SRV" $PX_OTHER 80 - - $LIFE
topo_wait_port "$NS_INET" $PX_BOUND 443 && topo_wait_port "$NS_INET" $PX_OTHER 443 || exit 1
topo_wait_port "$NS_INET" $PX_OTHER 80 || exit 1
# No -v: the proxy logs at its default level, as in production.
topo_bg "$NS_GW" moat-proxy "$PX_BIN" -d -c "$TOPO_TMP/moat.conf" \
    --upstream-ca "$PX_DIR/testca.crt"
topo_wait_port "$NS_GW" $GW_ADDR 3128 || exit 1
# the same configuration and CA on port 3148, tunnels in the kernel
cp -a "$PX_DIR/state" "$PX_DIR/state-k"
sed -e 's/port = 3128;/port = 3148;/' -e "s|state_dir = \"$PX_DIR/state\"|state_dir = \"$PX_DIR/state-k\"|" \
    "$TOPO_TMP/moat.conf" >"$TOPO_TMP/moat-k.conf"
topo_bg "$NS_GW" moat-proxy-k "$TOPO_TMP/sockmap-run" build/obj/gatewayd/bpf/tunnel.bpf.o \
    "$(realpath "$PX_BIN")" -d -c "$TOPO_TMP/moat-k.conf" --upstream-ca "$PX_DIR/testca.crt"
topo_wait_port "$NS_GW" $GW_ADDR 3148 || exit 1
if [ -n "${PX_BIN_B:-}" ]; then
	# the same configuration and CA on port 3138
	cp -a "$PX_DIR/state" "$PX_DIR/state-b"
	sed -e 's/port = 3128;/port = 3138;/' -e "s|state_dir = \"$PX_DIR/state\"|state_dir = \"$PX_DIR/state-b\"|" \
	    "$TOPO_TMP/moat.conf" >"$TOPO_TMP/moat-b.conf"
	topo_bg "$NS_GW" moat-proxy-b "$PX_BIN_B" -d -c "$TOPO_TMP/moat-b.conf" \
	    --upstream-ca "$PX_DIR/testca.crt"
	topo_wait_port "$NS_GW" $GW_ADDR 3138 || exit 1
fi
topo_bg "$NS_GW" relay "$TOPO_TMP/relay" $GW_ADDR 9000 $PX_OTHER 443 $LIFE
topo_wait_port "$NS_GW" $GW_ADDR 9000 || exit 1
topo_bg "$NS_GW" tls-relay "$TOPO_TMP/tls-relay" $GW_ADDR 9443 $PX_BOUND 443 \
    "$PX_DIR/api.bound.test.crt" "$PX_DIR/api.bound.test.key" "$PX_DIR/testca.crt" $LIFE
topo_wait_port "$NS_GW" $GW_ADDR 9443 || exit 1
MITM=
if command -v mitmdump >/dev/null; then
	MITM=mitmproxy
	mkdir -p "$TOPO_TMP/mitm"
	# its own way of injecting: a header set on every request
	topo_bg "$NS_GW" mitmdump mitmdump -q --listen-host $GW_ADDR --listen-port 8080 \
	    --set confdir="$TOPO_TMP/mitm" \
	    --set ssl_verify_upstream_trusted_ca="$PX_DIR/testca.crt" \
	    --set modify_headers="/~q/Authorization/Bearer $PX_SECRET" \
	    --set stream_large_bodies=1m
	topo_wait_port "$NS_GW" $GW_ADDR 8080 || exit 1
fi
# The C injectors a user would build instead (bench/peers-lib.sh)
haproxy_start "$NS_GW" $GW_ADDR:8443 $PX_BOUND:443 api.bound.test \
    "$PX_DIR/api.bound.test.crt" "$PX_DIR/api.bound.test.key" "$PX_DIR/testca.crt" "Bearer $PX_SECRET"
nginx_start "$NS_GW" $GW_ADDR:8444 $PX_BOUND:443 api.bound.test \
    "$PX_DIR/api.bound.test.crt" "$PX_DIR/api.bound.test.key" "$PX_DIR/testca.crt" "Bearer $PX_SECRET"
topo_wait_port "$NS_GW" $GW_ADDR 8443 || { cat "$TOPO_TMP/haproxy.log"; exit 1; }
topo_wait_port "$NS_GW" $GW_ADDR 8444 || { cat "$TOPO_TMP/nginx.log" "$TOPO_TMP/nginx-error.log"; exit 1; }
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" ${MITM:+"$TOPO_TMP/mitm/mitmproxy-ca-cert.pem"} \
    >"$PX_DIR/bundle.crt"
cat >"$TOPO_TMP/tinyproxy.conf" <<EOF
Port 8888
Listen $GW_ADDR
Timeout 600
MaxClients 2000
Allow 10.77.0.0/24
ConnectPort 443
LogLevel Critical
EOF
topo_bg "$NS_GW" tinyproxy tinyproxy -d -c "$TOPO_TMP/tinyproxy.conf"
topo_wait_port "$NS_GW" $GW_ADDR 8888 || exit 1
# squid: a forward proxy with no cache and no logs, one worker (its
# default), as a peer for plain-HTTP keep-alive requests.
mkdir -p "$TOPO_TMP/squid" && chmod 0777 "$TOPO_TMP/squid"
cat >"$TOPO_TMP/squid.conf" <<EOF
http_port $GW_ADDR:3129
acl guests src 10.77.0.0/24
http_access allow guests
http_access deny all
cache deny all
access_log none
cache_log $TOPO_TMP/squid/cache.log
pid_filename $TOPO_TMP/squid/squid.pid
coredump_dir $TOPO_TMP/squid
shutdown_lifetime 1 seconds
dns_nameservers 203.0.113.53
max_filedescriptors 16384
EOF
topo_bg "$NS_GW" squid squid -N -f "$TOPO_TMP/squid.conf"
topo_wait_port "$NS_GW" $GW_ADDR 3129 || exit 1

# curl_args MODE -- how the client reaches the server in each mode
curl_args() {
	case $1 in
	direct)      echo "--resolve other.test:443:$PX_OTHER https://other.test" ;;
	spliced)     echo "-x http://$GW_ADDR:3128 https://other.test" ;;
	intercepted) echo "-x http://$GW_ADDR:3128 https://api.bound.test" ;;
	spliced-b)     echo "-x http://$GW_ADDR:3138 https://other.test" ;;
	sockmap)     echo "-x http://$GW_ADDR:3148 https://other.test" ;;
	intercepted-b) echo "-x http://$GW_ADDR:3138 https://api.bound.test" ;;
	relay)       echo "--connect-to other.test:443:$GW_ADDR:9000 https://other.test" ;;
	tls-relay)   echo "--connect-to api.bound.test:443:$GW_ADDR:9443 https://api.bound.test" ;;
	haproxy)     echo "--connect-to api.bound.test:443:$GW_ADDR:8443 https://api.bound.test" ;;
	nginx)       echo "--connect-to api.bound.test:443:$GW_ADDR:8444 https://api.bound.test" ;;
	# mitmproxy resolves with the system resolver, as tinyproxy does
	mitmproxy)   echo "-x http://$GW_ADDR:8080 --connect-to api.bound.test:443:$PX_BOUND:443 https://api.bound.test" ;;
	# tinyproxy resolves names with the system resolver, which knows no
	# test names: it is asked to CONNECT to the address (TLS still says
	# other.test), so it does no DNS at all; moat-proxy resolves once per
	# tunnel through the test resolver.
	tinyproxy)   echo "-x http://$GW_ADDR:8888 --connect-to other.test:443:$PX_OTHER:443 https://other.test" ;;
	plain-direct)    echo "http://$PX_OTHER" ;;
	plain-moat)      echo "-x http://$GW_ADDR:3128 http://$PX_OTHER" ;;
	plain-tinyproxy) echo "-x http://$GW_ADDR:8888 http://$PX_OTHER" ;;
	plain-squid)     echo "-x http://$GW_ADDR:3129 http://$PX_OTHER" ;;
	esac
}
# Every path runs from the guest; "direct" is routed by the gateway
# namespace (no NAT, no filter, no proxy), so the proxy is the only
# difference between it and the proxied paths.
where() { echo "$TOPO-agent"; }
small() {	# small MODE -> "rps p50_ms p99_ms"
	local a urls=() i base
	read -r -a a <<<"$(curl_args "$1")"
	base=${a[-1]}; unset 'a[-1]'
	# Intercepted paths get NI (200) requests, so that a round stays within
	# seconds even where interception is slow.
	for i in $(seq "$(case $1 in intercepted*|mitmproxy|tls-relay|haproxy|nginx) echo "${NI:-200}" ;; *) echo "$N" ;; esac)"); do
		urls+=(-o /dev/null "$base/small")
	done
	in_ns "$(where "$1")" $CPIN curl -s --max-time 30 --cacert "$PX_DIR/bundle.crt" \
	    "${a[@]}" -w '%{time_total}\n' \
	    "${urls[@]}" | awk 'NR > 1 { printf "%.4f\n", $1 * 1000 }' |
	    tee -a "$TOPO_TMP/times-$1" |
	    sort -n | awk '{ t[n++] = $1; sum += $1 }
	    END { if (n == 0) { print "0 0 0 0"; exit }
	          printf "%.0f %.3f %.3f %d\n", 1000 * n / sum, t[int(n * 0.5)], t[int(n * 0.99)], n }'
}
download() {	# download MODE -> MiB/s for DL bytes (100 MiB)
	local a base
	read -r -a a <<<"$(curl_args "$1")"
	base=${a[-1]}; unset 'a[-1]'
	in_ns "$(where "$1")" $CPIN curl -s --max-time 60 --cacert "$PX_DIR/bundle.crt" "${a[@]}" -o /dev/null \
	    -w '%{size_download} %{speed_download}\n' "$base/big?n=$DL" |
	    awk -v dl=$DL '$1 == dl { printf "%.0f\n", $2 / 1048576; next } { print 0 }'
}
cpu_ms() {	# user+system CPU of processes PID,... (all their threads), in ms
	local p
	for p in ${1//,/ }; do cat /proc/"$p"/stat; done |
	    awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); t += $12 + $13 } END { print int(t * 1000 / hz) }'
}
cpu_ns() {	# on-CPU time of a process's threads, in ns
	# the relays' threads end with their connection: each keeps the count
	if [ "$1" = "$rlpid" ] || [ "$1" = "$tlpid" ]; then
		sleep 0.2; awk '/^cpu_ns/ { n = $2 } END { printf "%.0f", n }' \
		    "$TOPO_TMP/$([ "$1" = "$rlpid" ] && echo relay || echo tls-relay).log"
		return
	fi
	local p
	for p in ${1//,/ }; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{ s += $1 } END { printf "%.0f", s }'
}
pid_of() { case $1 in spliced|intercepted|plain-moat) echo "$pxpid" ;; spliced-b|intercepted-b) echo "$pxbpid" ;; sockmap) echo "$pxkpid" ;;
	tinyproxy|plain-tinyproxy) echo "$tppid" ;; plain-squid) echo "$sqpid" ;; relay) echo "$rlpid" ;; tls-relay) echo "$tlpid" ;; mitmproxy) echo "$mipid" ;;
	haproxy) echo "$hapid" ;; nginx) echo "$ngxpids" ;; esac; }
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/"$1"/status; }
idle() {	# idle PORT PID HOST -> RSS growth in KiB for IDLE_N (1,000) idle tunnels
	local before after py
	before=$(rss_kb "$2")
	in_ns "$TOPO-agent" timeout 30 python3 - "$1" "$3" "$IDLE_N" <<'PY' &
import socket, sys, time
ss = []
for _ in range(int(sys.argv[3])):
    s = socket.create_connection(("10.77.0.1", int(sys.argv[1])))
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % ((sys.argv[2].encode(),) * 2))
    ss.append(s)
for s in ss:
    s.recv(100)
time.sleep(5)
PY
	py=$!
	sleep 4
	after=$(rss_kb "$2")
	wait $py
	echo $((after - before))
}
med() { sort -n | awk '{ v[n++] = $1 } END { print v[int((n - 1) / 2)] }'; }
pxpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
tppid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:8888" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
sqpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3129" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
lpid() { in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
pxbpid=$(lpid 3138); pxkpid=$(lpid 3148); rlpid=$(lpid 9000); tlpid=$(lpid 9443); mipid=$(lpid 8080)
hapid=$(lpid 8443)
# nginx: its master and workers, comma-separated
ngxpids=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:8444" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u | paste -sd,)
ulimit -n 8192
CPIN=
if [ "${PIN:-0}" = 1 ]; then
	CPIN="taskset -c 0"
	for p in $pxpid $pxbpid $pxkpid $tppid $sqpid $rlpid $tlpid $mipid $hapid ${ngxpids//,/ } $(in_ns "$NS_INET" ss -Hltnp | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
		taskset -a -p -c 1 "$p" >/dev/null
	done
	echo "# pinned: curl on CPU 0; servers and proxies on CPU 1" >&2
fi

if [ -n "${NICE:-}" ]; then
	for p in $pxpid $pxbpid $pxkpid $tppid $sqpid $rlpid $tlpid $mipid $hapid ${ngxpids//,/ } $(in_ns "$NS_INET" ss -Hltnp | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
		for t in /proc/"$p"/task/*; do renice -n "$NICE" -p "${t##*/}" >/dev/null; done
	done
	CPIN="nice -n $NICE $CPIN"
	echo "# niceness $NICE: client, servers and proxies" >&2
fi

MODES=${MODES:-"direct spliced${PX_BIN_B:+ spliced-b} sockmap tinyproxy relay intercepted${PX_BIN_B:+ intercepted-b} tls-relay haproxy nginx${MITM:+ $MITM} plain-direct plain-moat plain-tinyproxy plain-squid"}
R=$TOPO_TMP/results
t0=$(date +%s)
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		p=$(pid_of $m); s0=$([ -n "$p" ] && cpu_ns "$p")
		sm=$(small $m)
		# proxy CPU per small request, in µs (schedstat: ns resolution)
		spr=$([ -n "$p" ] && awk -v d=$(( $(cpu_ns "$p") - s0 )) -v n="$(echo $sm | cut -d' ' -f4)" \
		    'BEGIN { printf "%.1f", (n > 0 ? d / n / 1000 : 0) }' || echo —)
		c0=$([ -n "$p" ] && cpu_ms "$p")
		dl=$(download $m)
		cpu=$([ -n "$p" ] && echo $(( $(cpu_ms "$p") - c0 )) || echo —)
		echo "$m $sm $dl $cpu $spr $r $(cut -d' ' -f1 /proc/loadavg)" >>"$R"
	done
	echo "# round $r done ($(( $(date +%s) - t0 )) s), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
# System calls per small request: strace -c on each proxy's process (all
# its threads) while N requests pass.
if [ "${SYSCALLS:-0}" = 1 ]; then
	for m in $MODES; do
		p=$(pid_of $m); [ -n "$p" ] || continue
		case $m in plain-*) continue ;; esac
		strace -c -f -q -p "$p" -o "$TOPO_TMP/strace-$m" &
		st=$!
		sleep 1
		n=$(small $m | cut -d' ' -f4)
		sleep 0.5
		kill -INT $st; wait $st 2>/dev/null
		awk -v m=$m -v n=$n '$NF != "total" && $4 ~ /^[0-9]+$/ { c[$NF] = $4; t += $4 }
		    END { printf "%s %.2f", m, t / (n + 1)
		          for (k in c) if (c[k] / (n + 1) >= 0.5) printf " %s=%.2f", k, c[k] / (n + 1)
		          printf "\n" }' "$TOPO_TMP/strace-$m" >>"$TOPO_TMP/syscalls"
	done
fi
mem_px=$(idle 3128 "$pxpid" other.test)
mem_tp=$(idle 8888 "$tppid" $PX_OTHER)
echo "# total $(( $(date +%s) - t0 )) s, $N small requests x $ROUNDS rounds per path" >&2

DL_MIB=$((DL / 1048576)) python3 bench/proxy-tables.py "$R" "$TOPO_TMP/syscalls"
echo
echo "RSS per $IDLE_N idle tunnels: moat-proxy $mem_px KiB, tinyproxy $mem_tp KiB"
echo
[ -n "${KEEP_TIMES:-}" ] && cp "$TOPO_TMP"/times-* "$KEEP_TIMES"/ 2>/dev/null
echo "raw rounds (path rps p50_ms p99_ms requests MiB/s cpu_ms cpu_us_per_request round load1):"
cat "$R"
if [ -n "${PROFILE:-}" ] && p=$(pid_of "$PROFILE") && [ -n "$p" ]; then
	perf record -q -F 4999 -g -p "$p" -o "${PROFILE_OUT:-$TOPO_TMP/perf.data}" 2>/dev/null &
	st=$!
	sleep 1
	small "$PROFILE" >/dev/null
	kill -INT $st; wait $st 2>/dev/null
fi
if [ -s "$TOPO_TMP/syscalls" ]; then
	echo
	echo "system calls per small request (strace -c -f, $N requests; those at 0.5 or more a request):"
	cat "$TOPO_TMP/syscalls"
fi
