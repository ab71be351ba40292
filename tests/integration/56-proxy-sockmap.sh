#!/usr/bin/env bash
# Spliced tunnels through the kernel's socket map (--tunnels auto):
# gatewayd's parent loads the program and says so in ctl status and the
# metrics; a CONNECT tunnel's bytes then go from socket to socket without
# the proxy worker reading them (its read and write counters hold still
# over 2,000 round trips, where splice(2) copies them), intact both ways
# and in bulk; the tunnel's bytes are counted at its close; passed-through
# TLS (transparent, by SNI) goes the same way; and `ctl unallow` of the
# name stops the tunnel within a second.  Then by default (splice), the
# same tunnels go through the worker again, and a half-closed one gets
# all of its bytes back.  (Many half-closed tunnels through the kernel at
# once: 57-proxy-sockmap-halfclose.)
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
# -t 20: after the guest's end, echo what is left for up to 20 s (socat's
# default gives up after half a second); -b 4096: socat's own PIPE cannot
# deadlock it (57-proxy-sockmap-halfclose says how)
topo_bg "$NS_INET" echo socat -b 4096 -t 20 TCP4-LISTEN:7000,bind=$INET_HTTP,fork,reuseaddr PIPE
topo_wait_port "$NS_INET" $INET_HTTP 7000 || not_ok "echo server starts"
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
chmod 711 "$TOPO_TMP"
cat >"$GW_CONF" <<EOF2
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; workers = 1; };
  metrics: { textfile = "$TOPO_TMP/prom/moat.prom"; interval = 1; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "pypi.org" ]; }
);
EOF2

T=open.test:7000
load() { in_ns "$TOPO-web" timeout 60 python3 tests/harness/tunnel-load.py $GW_ADDR $T "$@" 2>&1; }
# io -- bytes the proxy worker has read and written through read(2) and
# write(2) so far (splice(2) and the kernel's own handover count in neither)
io() {
	local p=$(gw_child_pid proxy)
	awk '/^rchar|^wchar/ { n += $2 } END { print n }' /proc/$p/io
}
step() {	# step NAME K -- let flow NAME send once more, wait for its answer
	touch "$TOPO_TMP/go-$1-$2"
	for k in $(seq 150); do grep -q "after$2:" "$TOPO_TMP/res-$1" 2>/dev/null && break; sleep 0.05; done
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}
ms() { date +%s%3N; }

# --- the kernel's path --------------------------------------------------------
gw_start -v --tunnels auto; expect_eq "gatewayd starts with --tunnels auto" 0 $?
wait_for 30 test -n "$(gw_child_pid proxy)"
expect_match "ctl status: tunnels go through the socket map, verified size" \
	'^tunnels +sockmap \([0-9]+ instructions verified, [0-9]+ bytes JIT-compiled\)' \
	"$(gw_ctl status | grep '^tunnels')"
expect_match "ctl status --json says the same" '"tunnels":\{"path":"sockmap"' "$(gw_ctl status --json)"
wait_for 10 test -s "$TOPO_TMP/prom/moat.prom"
expect_match "the metrics say so" 'moat_tunnel_path\{path="sockmap"\} 1' "$(cat "$TOPO_TMP/prom/moat.prom")"
expect_match "allow web open.test --ports tcp/7000,tcp/443 --for 5m" '^web may reach open\.test' \
	"$(gw_ctl allow web open.test --ports tcp/7000,tcp/443 --for 5m 2>&1)"
expect_eq "web resolves open.test" "$INET_HTTP" "$(in_ns "$TOPO-web" dig +short +time=2 +tries=1 @$GW_ADDR open.test)"

expect_eq "3 tunnels at once echo 4 MiB each, intact" 3 "$(load echo 3 4194304)"
before=$(io)
pp=$(load pingpong 2000)
after=$(io)
expect_match "2,000 round trips of 99 bytes through one tunnel" '^ok ' "$pp"
expect_ok "...which the worker neither read nor wrote ($((after - before)) bytes through read/write)" \
	test $((after - before)) -lt 20000
expect_match "the worker says the tunnel went to the kernel" 'tunnel in the kernel' "$(cat "$GW_LOG")"
set -- $pp
want_out=$(( $2 + 2000 * 99 ))
expect_match "its bytes are counted at its close: $want_out out (head included), 198000 in" \
	"open.test:7000: tunnel closed \\(kernel\\): $want_out bytes out, 198000 in" "$(cat "$GW_LOG")"

# TLS to open.test:443 redirected to the proxy (no secret is bound to it, so
# passed through on its SNI) goes through the kernel too: an openssl
# s_server that answers each line reversed.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=open.test \
    -days 2 -keyout "$TOPO_TMP/open.key" -out "$TOPO_TMP/open.crt" 2>/dev/null
topo_bg "$NS_INET" tls openssl s_server -quiet -rev -accept $INET_HTTP:443 \
    -cert "$TOPO_TMP/open.crt" -key "$TOPO_TMP/open.key"
topo_wait_port "$NS_INET" $INET_HTTP 443 || not_ok "TLS server starts"
n0=$(grep -c 'open.test:443: tunnel in the kernel' "$GW_LOG")
rev=$( (printf 'through the kernel\n'; sleep 2) | in_ns "$TOPO-web" timeout 20 \
    openssl s_client -quiet -connect $INET_HTTP:443 -servername open.test 2>/dev/null)
expect_eq "a guest's TLS to open.test:443, redirected and passed through, is answered" \
	"lenrek eht hguorht" "$rev"
wait_for 10 grep -q 'open.test:443: tunnel closed (kernel)' "$GW_LOG"
expect_eq "...by a tunnel in the kernel" 1 $(( $(grep -c 'open.test:443: tunnel in the kernel' "$GW_LOG") - n0 ))

# --- a cut by policy ----------------------------------------------------------
ip netns exec $TOPO-web python3 tests/harness/echo-flow.py $GW_ADDR 3128 "$TOPO_TMP/res-cut" \
    --connect $T "$TOPO_TMP/go-cut-0" "$TOPO_TMP/go-cut-1" &
flowpid=$!
for k in $(seq 100); do grep -q before: "$TOPO_TMP/res-cut" 2>/dev/null && break; sleep 0.1; done
expect_eq "a tunnel open under the grant" "before:200 one" "$(cat "$TOPO_TMP/res-cut" 2>/dev/null)"
expect_eq "...echoes" step0 "$(step cut 0)"
t0=$(ms)
expect_match "unallow web open.test" 'web no longer reaches open\.test' "$(gw_ctl unallow web open.test 2>&1)"
got=$(step cut 1)
t=$(( $(ms) - t0 ))
expect_match "the tunnel carries no more bytes: it is closed, not stalled" '^(closed|error (ConnectionResetError|BrokenPipeError))' "$got"
expect_ok "...within a second of the unallow ($t ms)" test $t -lt 1000
wait $flowpid 2>/dev/null
expect_eq "no child crashed or was refused a system call" "" \
	"$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"

# --- splice(2), the default ---------------------------------------------------
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
gw_start -v; expect_eq "gatewayd starts with the default --tunnels splice" 0 $?
wait_for 30 test -n "$(gw_child_pid proxy)"
expect_eq "ctl status: tunnels go through splice(2)" \
	"tunnels    splice (--tunnels splice; --tunnels auto for the kernel's socket map)" \
	"$(gw_ctl status | grep '^tunnels')"
gw_ctl allow web open.test --ports tcp/7000 --for 5m >/dev/null 2>&1
in_ns "$TOPO-web" dig +short +time=2 +tries=1 @$GW_ADDR open.test >/dev/null
expect_eq "3 tunnels at once echo 4 MiB each, intact" 3 "$(load echo 3 4194304)"
before=$(io)
pp=$(load pingpong 2000)
after=$(io)
expect_match "2,000 round trips" '^ok ' "$pp"
expect_ok "...which the worker copied ($((after - before)) bytes through read/write)" \
	test $((after - before)) -ge 198000
expect_eq "a half-closed tunnel gets all of its 1 MiB back" intact "$(load halfclose 1048576)"
expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
tap_done
