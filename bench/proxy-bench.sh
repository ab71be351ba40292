#!/usr/bin/env bash
# proxy-bench.sh -- moat-proxy side by side with a direct connection and
# tinyproxy (CONNECT), against the same HTTPS server in the internet
# namespace of a test topology.  Every packet stays in this run's
# namespaces; loads are bounded and stop by themselves.
#
#   bash bench/proxy-bench.sh [REQUESTS]      (needs root, tinyproxy)
#
# Small requests: REQUESTS (default 500) sequential GETs on one keep-alive
# connection with curl (one process, connection reused), per-request
# times from curl's -w.  Download: 100 MiB.  Idle: proxy RSS growth for
# 1,000 open, idle CONNECT tunnels.
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
N=${1:-500}
command -v tinyproxy >/dev/null || { echo "bench: needs tinyproxy (apt-get install tinyproxy)"; exit 1; }

topo_up || exit 1
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
proxy_certs && proxy_conf "$TOPO_TMP/moat.conf" && proxy_servers || exit 1
proxy_start "$TOPO_TMP/moat.conf" || exit 1
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

# curl_args MODE -- how the guest reaches the server in each mode
curl_args() {
	case $1 in
	direct)      echo "--resolve other.test:443:$PX_OTHER https://other.test" ;;	# from the gateway ns
	spliced)     echo "-x http://$GW_ADDR:3128 https://other.test" ;;
	intercepted) echo "-x http://$GW_ADDR:3128 https://api.bound.test" ;;
	tinyproxy)   echo "-x http://$GW_ADDR:8888 https://other.test" ;;
	esac
}
# "direct" runs from the gateway namespace, which reaches the internet
# namespace without NAT; the proxied paths run from the guest.
where() { [ "$1" = direct ] && echo "$NS_GW" || echo "$TOPO-agent"; }
small() {	# small MODE -> "rps p50_ms p99_ms"
	local a urls=() i base
	read -r -a a <<<"$(curl_args "$1")"
	base=${a[-1]}; unset 'a[-1]'
	for i in $(seq "$N"); do urls+=(-o /dev/null "$base/small"); done
	# the first request pays for the connection and is left out
	in_ns "$(where "$1")" curl -s --max-time 120 --cacert "$PX_DIR/bundle.crt" \
	    "${a[@]}" -w '%{time_total} %{time_pretransfer}\n' \
	    "${urls[@]}" | awk 'NR > 1 { printf "%.3f\n", ($1 - $2) * 1000 }' |
	    sort -n | awk '{ t[n++] = $1; sum += $1 }
	    END { printf "%.0f %.2f %.2f\n", 1000 * n / sum, t[int(n * 0.5)], t[int(n * 0.99)] }'
}
download() {	# download MODE -> MiB/s for 100 MiB
	local a base
	read -r -a a <<<"$(curl_args "$1")"
	base=${a[-1]}; unset 'a[-1]'
	in_ns "$(where "$1")" curl -s --max-time 120 --cacert "$PX_DIR/bundle.crt" "${a[@]}" -o /dev/null \
	    -w '%{speed_download}\n' "$base/big?n=104857600" |
	    awk '{ printf "%.0f\n", $1 / 1048576 }'
}
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/"$1"/status; }
idle() {	# idle PORT PID -> RSS growth in KiB for 1,000 idle tunnels
	local before after
	before=$(rss_kb "$2")
	in_ns "$TOPO-agent" python3 - "$1" <<'PY' &
import socket, sys, time
ss = []
for _ in range(1000):
    s = socket.create_connection(("10.77.0.1", int(sys.argv[1])))
    s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
    ss.append(s)
for s in ss:
    s.recv(100)
time.sleep(6)
PY
	local py=$!
	sleep 4
	after=$(rss_kb "$2")
	wait $py
	echo $((after - before))
}
pxpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
tppid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:8888" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
ulimit -n 8192

printf '\n| path | small req/s | p50 ms | p99 ms | 100 MiB download MiB/s | RSS per 1,000 idle tunnels |\n'
printf '|---|---|---|---|---|---|\n'
for m in direct spliced intercepted tinyproxy; do
	read -r rps p50 p99 <<<"$(small $m)"
	dl=$(download $m)
	case $m in
	spliced) mem="$(idle 3128 "$pxpid") KiB" ;;
	tinyproxy) mem="$(idle 8888 "$tppid") KiB" ;;
	*) mem="—" ;;
	esac
	printf '| %s | %s | %s | %s | %s | %s |\n' $m "$rps" "$p50" "$p99" "$dl" "$mem"
done
