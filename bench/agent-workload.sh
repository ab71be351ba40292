#!/usr/bin/env bash
# agent-workload.sh -- the agent-shaped benchmark: what coding agents in
# sandboxes do all day (HTTPS API calls with a key, some of them streamed,
# and package downloads), through moat, through mitmproxy doing the same
# injection, and with no proxy at all.  Everything runs in network
# namespaces this script creates and removes on every exit; each load stops
# by itself.  About 110 s a round.
#
#   bash bench/agent-workload.sh [ROUNDS]      (root; builds and installs what is missing)
#
# SANDBOXES (5) guest namespaces, AGENTS (50) agents spread over them (a
# sandbox is one guest address to moat: its agents are concurrent loops in
# it; SANDBOXES=50 gives each agent a guest and a sandbox of its own).  Each agent, bench/agent-client.c (one process, a thread per agent):
# POST /v1/messages to api.bound.test with a 2 KiB body and `Authorization:
# Bearer <token>`, answered with 10-50 KiB; every 10th call an SSE stream
# of 20 events; after every 25th call a 1 MiB download from other.test
# (the package host), each agent at its own place in these cycles; a
# connection is opened again after 100 requests.
# The API and package hosts are bench/bench-server.c in the internet
# namespace; the API server compares every Authorization with the real key
# and counts the calls that came without it.
#
# Rows (the same client, the same options; only the guest differs):
#   direct     guests on a second gateway's bridge, routed, no proxy; the
#              guest holds the real key, as it must without an injector;
#   moat       guests of moat's gateway: gatewayd with its policy, dnsd and
#              its pool of proxy workers; allowlist sandboxes (the two
#              hosts) holding the secret "api" bound to api.bound.test.  The
#              guest holds the placeholder; the proxy intercepts the API host
#              (tcp 443 redirected by the policy), injects the key, scrubs
#              the answers, and splices the package host;
#   moat-routed  the same, from sandboxes of their own on the same
#              gatewayd whose tcp 443 to the package host is routed past
#              the proxy (a bench-owned nat chain before moat's redirect;
#              the guest asks dnsd for the name before each run, so the
#              policy's allowlist set admits the address): the cost of
#              moat checking the package host by name, as a number;
#   haproxy    the second gateway's guests with their tcp 443 to the API
#              host redirected to HAProxy (Debian's), configured by
#              bench/haproxy-inject.cfg: terminate TLS, set the real key,
#              re-encrypt with verification and SNI, `http-reuse always`;
#              the package host is routed past it;
#   nginx      the same with nginx (bench/nginx-inject.conf: upstream
#              keep-alive, no buffering);
#   mitmproxy  the second gateway's guests with their tcp 443 redirected to
#              mitmdump (Debian's) in transparent mode, with
#              bench/mitm-inject.py putting the key in and streaming SSE;
#              the package host is passed through (--ignore-hosts).
# Each row runs twice per round: "load", each agent calling again as soon
# as it has its answer, SECS (10) s after 2 s of warm-up: requests per
# second and CPU per request (every HTTP request counts, downloads too);
# "paced", RATE (25) calls a second from all agents on a fixed schedule
# for PACED_SECS (20) s, meant to be below every row's capacity: latency,
# counted from when a call was due (a row that could not keep up is marked
# in the table).
# "gateway CPU" is the user and system time of every process in moat's
# gateway namespace (gatewayd and its children) or of the peer's
# processes (haproxy's, nginx's master and workers, mitmdump); the
# kernel's forwarding and the policy's packet work are not in it.  Rows are
# interleaved and their order rotates each round, so load from other jobs
# falls on all of them alike; the machine's load average and the share of
# CPU the bench's own processes did not use are printed with each run.
# BREAKDOWN=1 also prints each gateway process's CPU time for every run.
# PERF=DIR records each row's gateway processes with perf (Debian's
# linux-perf) during the load runs, into DIR/ROW-ROUND.data, and prints
# where their CPU went: by process, and the kernel's share against user
# space (perf report --sort comm,dso).
# ROWS="..." picks rows (default: all six).  HAProxy and nginx are
# installed from Debian's packages when missing (tests/deps.sh).
# REUSE (100): requests an agent makes on one connection before opening
# another; REUSE=1 makes every call a new connection and handshake.
# BENCH_SMOKE=1 (tests/integration/09-bench-smoke-*.sh): one round, one
# sandbox of 2 agents, 2 s runs, every row but direct.
set -u
cd "$(dirname "$0")/.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh
. bench/peers-lib.sh
ROUNDS=${1:-3}
SANDBOXES=${SANDBOXES:-5}
AGENTS=${AGENTS:-50}
SECS=${SECS:-10}
RATE=${RATE:-25}
PACED_SECS=${PACED_SECS:-20}
REUSE=${REUSE:-100}
ROWS=${ROWS:-"direct moat moat-routed haproxy nginx mitmproxy"}
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	ROUNDS=1 SANDBOXES=1 AGENTS=2 SECS=2 RATE=5 PACED_SECS=2
	ROWS="moat moat-routed haproxy nginx mitmproxy"
fi
NS_PEER=$TOPO-peer
PEER_ADDR=10.78.0.1
[ "$SANDBOXES" -ge 1 ] && [ "$SANDBOXES" -le 50 ] || { echo "bench: 1-50 sandboxes"; exit 2; }
peers_need || exit 1
for t in mitmdump haproxy nginx cc nft curl dig; do
	command -v $t >/dev/null || { echo "bench: needs $t"; exit 1; }
done
bench_build build/gatewayd build/moat-proxy build/dnsd || exit 1
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

topo_up >/dev/null || exit 1
SRV=$TOPO_TMP/bench-server CLIENT=$TOPO_TMP/agent-client
cc -O2 -o "$SRV" bench/bench-server.c -lssl -lcrypto -lpthread &&
cc -O2 -o "$CLIENT" bench/agent-client.c -lssl -lcrypto -lpthread || exit 1

# moat's sandboxes: one guest namespace each on the gateway's bridge
extra=
for i in $(seq 0 $((SANDBOXES - 1))); do
	mac=$(printf '52:54:00:00:02:%02x' "$i")
	topo_guest "w$i" 10.77.0.$((100 + i)) "$mac" "mt-w$i" || exit 1
	extra="$extra,
  { name = \"w$i\"; mac = \"$mac\"; address = \"10.77.0.$((100 + i))\"; tap = \"mt-w$i\";
    egress = \"allowlist\"; allow = [ \"api.bound.test\", \"other.test\" ]; secrets = [ \"api\" ]; }"
done
# moat-routed's sandboxes: the same, at .150 and up
for i in $(seq 0 $((SANDBOXES - 1))); do
	mac=$(printf '52:54:00:00:04:%02x' "$i")
	topo_guest "r$i" 10.77.0.$((150 + i)) "$mac" "mt-r$i" || exit 1
	extra="$extra,
  { name = \"r$i\"; mac = \"$mac\"; address = \"10.77.0.$((150 + i))\"; tap = \"mt-r$i\";
    egress = \"allowlist\"; allow = [ \"api.bound.test\", \"other.test\" ]; secrets = [ \"api\" ]; }"
done
proxy_certs && proxy_conf "$GW_CONF" "$extra" || exit 1
# gatewayd's proxy trusts the test CA for the upstream TLS
sed -i "s|intercept = true; }|intercept = true; upstream_ca = \"$PX_DIR/testca.crt\"; }|" "$GW_CONF"

# The second gateway, for the rows without moat: the same bridge, veths
# and guests (topo_guest with this gateway's namespace and address), an
# uplink of its own into the internet namespace, no firewall.
topo_ns "$NS_PEER" || exit 1
in_ns "$NS_PEER" sysctl -qw net.ipv4.ip_forward=1
ip -n "$NS_PEER" link add moat0 type bridge
ip -n "$NS_PEER" addr add $PEER_ADDR/24 dev moat0
ip -n "$NS_PEER" link set moat0 up
topo_link "$NS_PEER" up0 "$NS_INET" eth1 || exit 1
ip -n "$NS_PEER" addr add 198.51.100.1/24 dev up0
ip -n "$NS_INET" addr add 198.51.100.2/24 dev eth1
ip -n "$NS_PEER" route add default via 198.51.100.2
ip -n "$NS_INET" route add 10.78.0.0/24 via 198.51.100.1
for i in $(seq 0 $((SANDBOXES - 1))); do
	NS_GW=$NS_PEER GW_ADDR=$PEER_ADDR topo_guest "p$i" 10.78.0.$((100 + i)) \
	    "$(printf '52:54:00:00:03:%02x' "$i")" "mt-p$i" || exit 1
done
in_ns "$NS_PEER" nft -f - <<'NFT' || exit 1
table ip mitm {
	chain pre { type nat hook prerouting priority dstnat; policy accept; }
}
NFT
peer_redirect() {	# ROW: the peer guests' tcp 443 to that row's proxy
	in_ns "$NS_PEER" nft flush chain ip mitm pre
	case $1 in
	mitmproxy) in_ns "$NS_PEER" nft add rule ip mitm pre \
	    iifname moat0 tcp dport 443 redirect to :8080 ;;
	# only the API host: the package host is routed
	haproxy) in_ns "$NS_PEER" nft add rule ip mitm pre \
	    iifname moat0 ip daddr $PX_BOUND tcp dport 443 redirect to :8443 ;;
	nginx) in_ns "$NS_PEER" nft add rule ip mitm pre \
	    iifname moat0 ip daddr $PX_BOUND tcp dport 443 redirect to :8444 ;;
	esac
}

# The internet: DNS for the proxies, the API host (checking the key) and
# the package host.
LIFE=$((ROUNDS * 200 + 600))
ip -n "$NS_INET" addr add $PX_BOUND/24 dev eth0
ip -n "$NS_INET" addr add $PX_OTHER/24 dev eth0
topo_bg "$NS_INET" px-dns python3 tests/harness/cc-dns.py 203.0.113.53 \
    api.bound.test=$PX_BOUND other.test=$PX_OTHER --lifetime $LIFE
topo_bg "$NS_INET" srv-api "$SRV" $PX_BOUND 443 "$PX_DIR/api.bound.test.crt" \
    "$PX_DIR/api.bound.test.key" $LIFE "$PX_DIR/secrets/api" "$PX_PLACEHOLDER"
topo_bg "$NS_INET" srv-pkg "$SRV" $PX_OTHER 443 "$PX_DIR/other.test.crt" \
    "$PX_DIR/other.test.key" $LIFE
topo_wait_port "$NS_INET" $PX_BOUND 443 && topo_wait_port "$NS_INET" $PX_OTHER 443 || exit 1

chmod 711 "$TOPO_TMP"
gw_start >&2 || exit 1
wait_for 60 gw_proxy_new "" && topo_wait_port "$NS_GW" $GW_ADDR 3128 || exit 1
mkdir -p "$TOPO_TMP/mitm"
topo_bg "$NS_PEER" mitmdump env INJECT_HOST=api.bound.test \
    INJECT_PLACEHOLDER="$PX_PLACEHOLDER" INJECT_KEY_FILE="$PX_DIR/secrets/api" \
    mitmdump -q --mode transparent --listen-host $PEER_ADDR --listen-port 8080 \
    --set confdir="$TOPO_TMP/mitm" \
    --set ssl_verify_upstream_trusted_ca="$PX_DIR/testca.crt" \
    --ignore-hosts 'other\.test|203\.0\.113\.21' -s bench/mitm-inject.py
topo_wait_port "$NS_PEER" $PEER_ADDR 8080 || { cat "$TOPO_TMP/mitmdump.log"; exit 1; }
REAL="Bearer $(head -1 "$PX_DIR/secrets/api")"
haproxy_start "$NS_PEER" $PEER_ADDR:8443 $PX_BOUND:443 api.bound.test \
    "$PX_DIR/api.bound.test.crt" "$PX_DIR/api.bound.test.key" "$PX_DIR/testca.crt" "$REAL"
nginx_start "$NS_PEER" $PEER_ADDR:8444 $PX_BOUND:443 api.bound.test \
    "$PX_DIR/api.bound.test.crt" "$PX_DIR/api.bound.test.key" "$PX_DIR/testca.crt" "$REAL"
topo_wait_port "$NS_PEER" $PEER_ADDR 8443 || { cat "$TOPO_TMP/haproxy.log"; exit 1; }
topo_wait_port "$NS_PEER" $PEER_ADDR 8444 || { cat "$TOPO_TMP/nginx.log" "$TOPO_TMP/nginx-error.log"; exit 1; }
# moat-routed: the routed sandboxes' tcp 443 to the package host takes a
# nat binding of its own before moat's redirect (priority dstnat - 50), so
# the kernel forwards it under moat's policy and the proxy never sees it.
in_ns "$NS_GW" nft -f - <<NFT || exit 1
table ip bench_route {
	chain pre {
		type nat hook prerouting priority -150; policy accept;
		ip saddr 10.77.0.150-10.77.0.199 ip daddr $PX_OTHER tcp dport 443 dnat to $PX_OTHER
	}
}
NFT
# One trust bundle for every row: the test CA, moat's and mitmproxy's.
cat "$PX_DIR/testca.crt" "$PX_DIR/state/proxy-ca.crt" \
    "$TOPO_TMP/mitm/mitmproxy-ca-cert.pem" >"$PX_DIR/bundle.crt" || exit 1

listen_pids() {	# NS PORT -> pids listening on PORT, comma-separated
	in_ns "$1" ss -Hltnp "sport = :$2" | grep -o 'pid=[0-9]*' | cut -d= -f2 |
	    sort -u | paste -sd,
}
SRV_PIDS=$(listen_pids "$NS_INET" 443)
MITM_PIDS=$(listen_pids "$NS_PEER" 8080)
HA_PIDS=$(listen_pids "$NS_PEER" 8443)
NGX_PIDS=$(listen_pids "$NS_PEER" 8444)
nses() {	# PREFIX -> the row's guest namespaces, comma-separated
	seq 0 $((SANDBOXES - 1)) | sed "s/^/$TOPO-$1/" | paste -sd,
}
auth_counts() {	# the API server's counts: real placeholder none other
	in_ns "$NS_INET" curl -s --max-time 5 --cacert "$PX_DIR/testca.crt" \
	    --resolve api.bound.test:443:$PX_BOUND https://api.bound.test/stats |
	    sed 's/[a-z]*=//g'
}
ticks() {	# PID,... -> "pid comm user+system-ticks" a line each
	local p
	for p in ${1//,/ }; do
		[ -r /proc/$p/stat ] || continue
		echo "$p $(cat /proc/$p/comm) $(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f12-13 | tr ' ' +)"
	done
}
breakdown() {	# BEFORE AFTER -> each gateway process's CPU in the run
	join <(sort "$1") <(sort "$2") | awk -v hz="$(getconf CLK_TCK)" \
	    '{ split($3, a, "+"); split($5, b, "+"); printf "#   %s %s: %.2f s\n", $2, $1, (b[1] + b[2] - a[1] - a[2]) / hz }'
}
resolve_pkg() {	# each routed guest asks dnsd for the package host
	local i a
	for i in $(seq 0 $((SANDBOXES - 1))); do
		a=$(in_ns "$TOPO-r$i" dig +short +time=2 +tries=3 @$GW_ADDR other.test A)
		[ "$a" = "$PX_OTHER" ] || { echo "bench: r$i: other.test is '$a'" >&2; return 1; }
	done
}
run() {	# run ROW PHASE -- the client's key=value line in $TOPO_TMP/run.out
	local ns auth gw rate=()
	case $1 in
	direct)    ns=$(nses p) auth=$REAL gw= ;;
	moat)      ns=$(nses w) auth="Bearer $PX_PLACEHOLDER"
	           gw=$(ip netns pids "$NS_GW" | paste -sd,) ;;
	moat-routed) ns=$(nses r) auth="Bearer $PX_PLACEHOLDER"
	           gw=$(ip netns pids "$NS_GW" | paste -sd,)
	           resolve_pkg || return 1 ;;
	haproxy)   ns=$(nses p) auth="Bearer $PX_PLACEHOLDER" gw=$HA_PIDS ;;
	nginx)     ns=$(nses p) auth="Bearer $PX_PLACEHOLDER" gw=$NGX_PIDS ;;
	mitmproxy) ns=$(nses p) auth="Bearer $PX_PLACEHOLDER" gw=$MITM_PIDS ;;
	esac
	peer_redirect "$1"
	local secs=$SECS
	[ "$2" = paced ] && rate=(--rate "$RATE") secs=$PACED_SECS
	# In the background, so that topo_down can end it: its threads live
	# in the guests' namespaces, its main thread in ours.
	local cpid
	"$CLIENT" --ns "$ns" --ca "$PX_DIR/bundle.crt" --auth "$auth" \
	    --api $PX_BOUND:api.bound.test --pkg $PX_OTHER:other.test \
	    --agents "$AGENTS" --secs "$secs" --warmup 2 "${rate[@]}" --reuse "$REUSE" \
	    ${gw:+--gw "$gw"} --srv "$SRV_PIDS" >"$TOPO_TMP/run.out" &
	cpid=$!
	TOPO_PIDS+=($cpid)
	[ -n "${BREAKDOWN:-}" ] && ticks "$gw" >"$TOPO_TMP/cpu0"
	local perf= data
	if [ -n "${PERF:-}" ] && [ -n "$gw" ] && [ "$2" = load ]; then
		data=$PERF/$1-$r.data
		sleep 2	# the client's warm-up
		perf record -q -F 997 -g -p "$gw" -o "$data" -- sleep "$SECS" 2>/dev/null &
		perf=$!
	fi
	wait $cpid
	if [ -n "$perf" ]; then
		wait "$perf"
		echo "# $1: the gateway's CPU by process and object (perf, $SECS s)" >&2
		perf report -i "$data" --no-children --sort comm,dso --stdio 2>/dev/null |
		    grep -E '^ +[0-9.]+%' | head -25 | sed 's/^/#   /' >&2
	fi
	if [ -n "${BREAKDOWN:-}" ] && [ -n "$gw" ]; then
		ticks "$gw" >"$TOPO_TMP/cpu1"
		echo "# $1 $2: CPU of each gateway process, warm-up included" >&2
		breakdown "$TOPO_TMP/cpu0" "$TOPO_TMP/cpu1" >&2
	fi
}

R=$TOPO_TMP/results
echo "# $SANDBOXES sandboxes, $AGENTS agents, ${SECS} s per run, paced at $RATE calls/s for $PACED_SECS s; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
read -r -a rows <<<"$ROWS"
t0=$(date +%s)
for r in $(seq "$ROUNDS"); do
	for j in "${!rows[@]}"; do
		row=${rows[$(((j + r - 1) % ${#rows[@]}))]}
		a0=$(auth_counts)
		for phase in load paced; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			run "$row" $phase
			out=$(cat "$TOPO_TMP/run.out")
			echo "round=$r row=$row phase=$phase load=$load $out" | tee -a "$R" >&2
		done
		a1=$(auth_counts)
		echo "round=$r row=$row auth_before=\"$a0\" auth_after=\"$a1\"" >>"$R.auth"
	done
	echo "# round $r done ($(( $(date +%s) - t0 )) s)" >&2
done
[ -n "${KEEP:-}" ] && cp "$R" "$R.auth" "$KEEP"/
python3 - "$R" "$R.auth" "$RATE" <<'PY'
import re, statistics, sys

runs = [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', l)) for l in open(sys.argv[1])]
auth = [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', l)) for l in open(sys.argv[2])]
rows = list(dict.fromkeys(r["row"] for r in runs))


def vals(row, phase, key):
    return [float(r[key]) for r in runs if r["row"] == row and r["phase"] == phase]


def mr(v, fmt="%.0f"):
    if not v:
        return "—"
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(v), min(v), max(v))


def by_round(row, phase, key):
    return {r["round"]: float(r[key]) for r in runs if r["row"] == row and r["phase"] == phase}


def added(row, key):
    d, x = by_round("direct", "paced", key), by_round(row, "paced", key)
    return [x[k] - d[k] for k in x if k in d]


def ratio(row):
    d, x = by_round("direct", "load", "rps"), by_round(row, "load", "rps")
    return [x[k] / d[k] for k in x if k in d and d[k] > 0]


def wrong(row):
    """API calls that reached the server without the real key, of all"""
    n = total = 0
    for a in auth:
        if a["row"] != row:
            continue
        b = [int(v) for v in a["auth_before"].strip('"').split()]
        e = [int(v) for v in a["auth_after"].strip('"').split()]
        n += sum(e[1:]) - sum(b[1:])
        total += sum(e) - sum(b)
    return "%d of %d" % (n, total)


def behind(row):
    """a mark where the paced run fell behind its schedule"""
    paced = [(float(r["api"]) + float(r["sse"])) / float(r["secs"]) for r in runs
             if r["row"] == row and r["phase"] == "paced"]
    rate = float(sys.argv[3])
    return " (kept up with %.0f of %.0f calls/s)" % (min(paced), rate) \
        if paced and min(paced) < 0.95 * rate else ""


loads = [float(r["load"]) for r in runs]
print("\nload average during the runs: %.1f–%.1f; rounds: %d\n" % (min(loads), max(loads), len(set(r["round"] for r in runs))))
print("| path | req/s | of direct | gateway CPU µs per request | p50 ms | p99 ms | added p50 ms | added p99 ms | SSE p50 ms | package MiB/s (load) | errors | API calls without the real key | client CPU µs per request | CPU not the bench's (%) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for row in rows:
    gw = "—" if row == "direct" else mr(vals(row, "load", "gw_cpu_us"))
    rel = "—" if row == "direct" else mr(ratio(row), "%.2f")
    a50 = "—" if row == "direct" else mr(added(row, "api_p50_ms"), "%.3f")
    a99 = "—" if row == "direct" else mr(added(row, "api_p99_ms"), "%.3f")
    err = int(sum(vals(row, "load", "errors") + vals(row, "paced", "errors")))
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |" % (
        row, mr(vals(row, "load", "rps")), rel, gw,
        mr(vals(row, "paced", "api_p50_ms"), "%.2f") + behind(row), mr(vals(row, "paced", "api_p99_ms"), "%.2f"),
        a50, a99, mr(vals(row, "paced", "sse_p50_ms"), "%.2f"),
        mr(vals(row, "load", "pkg_mib_s")), err, wrong(row),
        mr(vals(row, "load", "client_cpu_us")), mr(vals(row, "load", "rest_cpu_pct"))))
def per_round(key, a, b):
    x, y = by_round(a, "load", key), by_round(b, "load", key)
    return [x[k] / y[k] for k in x if k in y and y[k] > 0]


def diff_round(key, a, b):
    x, y = by_round(a, "load", key), by_round(b, "load", key)
    return [x[k] - y[k] for k in x if k in y]


print("\nRound by round (median, range):")
for m in ("moat", "moat-routed"):
    for peer in ("haproxy", "nginx", "mitmproxy"):
        if m in rows and peer in rows:
            print("- %s against %s: %s× its requests per second at %s× its gateway CPU per request" % (
                m, peer, mr(per_round("rps", m, peer), "%.2f"),
                mr(per_round("gw_cpu_us", m, peer), "%.2f")))
if "moat" in rows and "moat-routed" in rows:
    print("- checking the package host by name (moat less moat-routed): %s µs of gateway CPU per request, "
          "%s× the requests per second" % (
              mr(diff_round("gw_cpu_us", "moat", "moat-routed"), "%.1f"),
              mr(per_round("rps", "moat", "moat-routed"), "%.2f")))
PY
