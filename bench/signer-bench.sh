#!/usr/bin/env bash
# signer-bench.sh -- what signing new leaves costs a neighbour: the p50 and
# p99 of small keep-alive GETs from guest A through moat-proxy, first alone,
# then while guest B opens HOSTS new intercepted hosts (each needs a leaf
# from the signer).  In network namespaces this script creates and removes:
#
#   guest ns a, b --> gw ns: moat-proxy 10.77.0.1:3128 (one worker, its own
#   signer) --> inet ns: bench-server 203.0.113.30:443, *.wild.test
#
# Both sandboxes have inspect = true, so every host is intercepted.  The
# test DNS (203.0.113.53) answers a.wild.test and h1..hHOSTS.wild.test with
# the one server, which presents one wildcard certificate made here.
#
#   bash bench/signer-bench.sh [REQUESTS] [HOSTS]   (root, after make; curl, cc)
#   SIGNER_DUTY=10 bash bench/signer-bench.sh       a slow signer (below)
#   PX_BIN=/path/to/moat-proxy bash bench/...       another build
#
# REQUESTS (1000) GETs of /small on one keep-alive connection, the first
# (which pays for the connection and A's own leaf) left out; HOSTS (200)
# new hosts for B, 8 at a time.  SIGNER_DUTY (100) is the share, in
# percent, of every 50 ms the signer may run: below 100 it is stopped for
# the rest (SIGSTOP/SIGCONT), a stand-in for a signer starved of CPU.  Every transfer has a deadline; the whole
# run takes seconds; nothing leaves the namespaces; cleaned up on any exit.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): 20 requests, 8
# hosts.
cd "$(dirname "$0")/.."
. tests/harness/tap.sh		# wait_for
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
N=${1:-1000}
HOSTS=${2:-200}
[ "${BENCH_SMOKE:-0}" = 1 ] && N=20 HOSTS=8
DUTY=${SIGNER_DUTY:-100}
WILD=203.0.113.30
[ "$N" -ge 10 ] && [ "$N" -le 10000 ] || { echo "bench: REQUESTS 10..10000"; exit 2; }
[ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 1000 ] || { echo "bench: HOSTS 1..1000"; exit 2; }
[ "$DUTY" -ge 1 ] && [ "$DUTY" -le 100 ] || { echo "bench: SIGNER_DUTY 1..100"; exit 2; }
for t in curl cc openssl python3; do
	command -v $t >/dev/null || { echo "bench: needs $t"; exit 1; }
done
[ -x "$PX_BIN" ] || { echo "bench: build moat-proxy first (make)"; exit 1; }

topo_up || exit 1		# traps EXIT/INT/TERM: every process and namespace goes
topo_guest a 10.77.0.20 52:54:00:00:00:14 mt-a || exit 1
topo_guest b 10.77.0.21 52:54:00:00:00:15 mt-b || exit 1
ip -n "$NS_INET" addr add $WILD/24 dev eth0

# The test CA and one wildcard certificate signed by it, in this run's folder.
proxy_certs || { echo "bench: test certificates"; exit 1; }
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=*.wild.test" -keyout "$PX_DIR/wild.key" -out "$PX_DIR/wild.csr" 2>/dev/null &&
openssl x509 -req -in "$PX_DIR/wild.csr" -CA "$PX_DIR/testca.crt" -CAkey "$PX_DIR/testca.key" \
    -CAcreateserial -days 2 -out "$PX_DIR/wild.crt" 2>/dev/null \
    -extfile <(printf 'subjectAltName=DNS:*.wild.test\nbasicConstraints=CA:FALSE\n') ||
	{ echo "bench: wildcard certificate"; exit 1; }

proxy_conf "$TOPO_TMP/moat.conf" ",
  { name = \"a\"; mac = \"52:54:00:00:00:14\"; address = \"10.77.0.20\"; tap = \"mt-a\";
    egress = \"open\"; inspect = true; },
  { name = \"b\"; mac = \"52:54:00:00:00:15\"; address = \"10.77.0.21\"; tap = \"mt-b\";
    egress = \"open\"; inspect = true; }"

names=(a.wild.test=$WILD)
for i in $(seq "$HOSTS"); do names+=("h$i.wild.test=$WILD"); done
topo_bg "$NS_INET" dns python3 tests/harness/cc-dns.py 203.0.113.53 "${names[@]}" --lifetime 300
SRV=$TOPO_TMP/bench-server
cc -O2 -o "$SRV" bench/bench-server.c -lssl -lcrypto -lpthread || exit 1
topo_bg "$NS_INET" server "$SRV" $WILD 443 "$PX_DIR/wild.crt" "$PX_DIR/wild.key" 300
topo_wait_port "$NS_INET" $WILD 443 || { echo "bench: the server did not start"; exit 1; }
# No -v: the proxy logs at its default level, as in production.
topo_bg "$NS_GW" moat-proxy "$PX_BIN" -d -c "$TOPO_TMP/moat.conf" --upstream-ca "$PX_DIR/testca.crt"
topo_wait_port "$NS_GW" $GW_ADDR 3128 || { echo "bench: moat-proxy did not start"; exit 1; }
if [ "$DUTY" -lt 100 ]; then
	pxpid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
	signer=$(pgrep -P "$pxpid" | head -1)
	[ -n "$signer" ] || { echo "bench: no signer under moat-proxy $pxpid"; exit 1; }
	# Runs DUTY% of every 50 ms; let go (SIGCONT) when this run ends.
	python3 -c 'import os, signal, sys, time
pid, run = int(sys.argv[1]), 0.05 * int(sys.argv[2]) / 100
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
try:
    while True:
        os.kill(pid, signal.SIGCONT); time.sleep(run)
        os.kill(pid, signal.SIGSTOP); time.sleep(0.05 - run)
except (ProcessLookupError, SystemExit):
    pass
finally:
    try: os.kill(pid, signal.SIGCONT)
    except ProcessLookupError: pass' "$signer" "$DUTY" &
	TOPO_PIDS+=($!)
fi
# The guests trust the gateway's CA only: a leaf of the test CA (a tunnel
# that was not intercepted) would fail, so every 200 below was intercepted.
GWCA=$PX_DIR/state/proxy-ca.crt

ms() { date +%s%3N; }
run_a() {	# run_a FILE -- REQUESTS keep-alive GETs from A, one time (ms) a line
	local urls=() i
	for i in $(seq $((N + 1))); do urls+=(-o /dev/null https://a.wild.test/small); done
	in_ns "$TOPO-a" curl -s --max-time 60 -x http://$GW_ADDR:3128 --cacert "$GWCA" \
	    -w '%{http_code} %{time_total}\n' "${urls[@]}" |
	    awk 'NR > 1 && $1 == 200 { printf "%.4f\n", $2 * 1000 }' >"$1"
}
run_b() {	# run_b FILE -- HOSTS new hosts from B, 8 at a time, one status a line
	local urls=() i
	for i in $(seq "$HOSTS"); do urls+=(-o /dev/null "https://h$i.wild.test/small"); done
	in_ns "$TOPO-b" curl -s --no-progress-meter --max-time 30 --parallel --parallel-max 8 \
	    -x http://$GW_ADDR:3128 --cacert "$GWCA" -w '%{http_code}\n' "${urls[@]}" \
	    >"$1" 2>"$1.err"
}
stats() {	# stats FILE -> "count p50 p99"
	sort -n "$1" | awk '{ t[n++] = $1 } END {
	    if (n == 0) { print "0 - -"; exit }
	    printf "%d %.3f %.3f\n", n, t[int(n * 0.5)], t[int(n * 0.99)] }'
}

# A warm-up that also proves the path: A's own leaf is signed here.
code=$(in_ns "$TOPO-a" curl -s --max-time 10 -x http://$GW_ADDR:3128 --cacert "$GWCA" \
    -o /dev/null -w '%{http_code}' https://a.wild.test/small)
[ "$code" = 200 ] || { echo "bench: A's intercepted request failed ($code)"; cat "$TOPO_TMP/moat-proxy.log"; exit 1; }

run_a "$TOPO_TMP/alone"
read -r n0 p50a p99a <<<"$(stats "$TOPO_TMP/alone")"

tb0=$(ms)
( run_b "$TOPO_TMP/b"; ms >"$TOPO_TMP/b.end" ) &
bpid=$!
sleep 0.05		# B's first handshakes are under way
ta0=$(ms); run_a "$TOPO_TMP/busy"; ta1=$(ms)
wait $bpid
tb1=$(cat "$TOPO_TMP/b.end")
read -r n1 p50b p99b <<<"$(stats "$TOPO_TMP/busy")"
bok=$(grep -c '^200$' "$TOPO_TMP/b")
# Of A's run, the share that lay inside B's: the measurement counts only if
# most of A's requests met B's signing.
overlap=$(awk -v a0=$ta0 -v a1=$ta1 -v b0=$tb0 -v b1=$tb1 'BEGIN {
    s = (b1 < a1 ? b1 : a1) - (a0 > b0 ? a0 : b0); d = a1 - a0
    printf "%.0f", (d > 0 ? 100 * (s > 0 ? s : 0) / d : 0) }')

echo "| guest A's small requests | requests | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|"
echo "| alone | $n0 | $p50a | $p99a |"
echo "| while B opens $HOSTS new intercepted hosts | $n1 | $p50b | $p99b |"
echo
echo "B: $bok of $HOSTS new hosts answered 200 in $((tb1 - tb0)) ms;" \
    "A's run took $((ta1 - ta0)) ms, ${overlap}% of it inside B's."
[ "$DUTY" -lt 100 ] && echo "The signer ran $DUTY% of every 50 ms."
echo "# $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M') UTC"
[ "$bok" = "$HOSTS" ] && [ "$n0" = "$N" ] && [ "$n1" = "$N" ] ||
	{ echo "bench: some requests failed (see above)"; exit 1; }
