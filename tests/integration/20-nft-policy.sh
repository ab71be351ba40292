#!/usr/bin/env bash
# nft-rules in the namespace topology: every rule of the policy proven by
# traffic that passes when allowed and is refused (ICMP admin-prohibited,
# seen by the client as EHOSTUNREACH) when not; counters; verify, flush,
# and that another program's tables are never touched.
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services || not_ok "services start"
topo_http "$NS_INET" $INET_ADDR 8080 "other internet server"
topo_banner "$NS_INET" 203.0.113.53 53 "dns-elsewhere"
topo_banner "$NS_INET" 203.0.113.53 853 "dot-elsewhere"
topo_bg "$NS_INET" udp-echo socat UDP4-RECVFROM:9999,bind=$INET_HTTP,fork SYSTEM:"echo pong"
udp_echo_up() { in_ns "$NS_INET" ss -Hlun "src $INET_HTTP:9999" | grep -q .; }
wait_for 30 udp_echo_up || not_ok "UDP echo server starts"
topo_banner "$NS_GW" 0.0.0.0 22 "SSH-2.0-gateway-host"
# The stand-ins for dnsd and the proxy run as their users: only those
# may answer a guest from ports 53 and 3128 (svcreply).
bash gatewayd/install-users.sh
as_user() {	# as_user USER -- a command prefix: that user, allowed ports below 1024
	echo setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --clear-groups \
	    --inh-caps=+net_bind_service --ambient-caps=+net_bind_service
}
topo_bg "$NS_GW" banner-dns $(as_user moat-dns) socat TCP-LISTEN:53,bind=$GW_ADDR,fork,reuseaddr SYSTEM:"echo gateway-dns"
topo_bg "$NS_GW" banner-proxy $(as_user moat-proxy) socat TCP-LISTEN:3128,bind=$GW_ADDR,fork,reuseaddr SYSTEM:"echo gateway-proxy"
topo_wait_port "$NS_GW" $GW_ADDR 53 || not_ok "dnsd's stand-in listens"
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "the proxy's stand-in listens"
topo_banner "$TOPO-web" 10.77.0.10 8080 "guest-web-service"
for i in $(seq 100); do	# the UDP echo server is bound
	in_ns "$NS_INET" ss -Hlun "sport = :9999" | grep -q . && break; sleep 0.1
done

CONF=$TOPO_TMP/moat.conf
cat >"$CONF" <<'EOF'
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "allowlist"; allow = [ "example.test" ]; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; },
  { name = "locked"; mac = "52:54:00:00:00:0c"; address = "10.77.0.12"; tap = "mt-locked";
    egress = "none"; }
);
EOF

# probe.py PROTO ADDR PORT -- one connection; prints "connected",
# "reply", or the errno name (EHOSTUNREACH for ICMP admin-prohibited).
cp tests/harness/probe.py "$TOPO_TMP/probe.py"
probe() {	# probe GUEST PROTO ADDR PORT [SOURCE]
	in_ns "$TOPO-$1" python3 "$TOPO_TMP/probe.py" "$2" "$3" "$4" ${5:-}
}
expect_probe() {	# expect_probe WANT GUEST PROTO ADDR PORT WHAT
	local want=$1 got; shift
	got=$(probe "$1" "$2" "$3" "$4")
	expect_eq "$1 -> $3:$4/$2 ($5): $want" "$want" "$got"
}
counter() {	# counter FAMILY NAME -- packets so far
	in_ns "$NS_GW" nft list counter "$1" moat "$2" 2>/dev/null |
	    awk '/packets/ {print $2}'
}
nftr() { in_ns "$NS_GW" "$NFTR" -c "$CONF" "$@"; }
web_timeout() {	# web_timeout ADDR -- the kernel's timeout (s) of ADDR in allow_web, or "none"
	in_ns "$NS_GW" nft -j list set inet moat allow_web | python3 -c '
import json, sys
for o in json.load(sys.stdin)["nftables"]:
    for e in o.get("set", {}).get("elem", []):
        e = e.get("elem", e) if isinstance(e, dict) else e
        if isinstance(e, dict) and e.get("val") == sys.argv[1]:
            print(e.get("timeout")); sys.exit()
print("none")' "$1"
}
web_gone() { [ "$(web_timeout "$1")" = none ]; }

# Another program's tables, including one named "moat" in a family that
# is not ours: they must come out of apply, reapply and flush untouched.
in_ns "$NS_GW" nft -f - <<'EOF'
table inet other {
	set keep {
		type ipv4_addr
		elements = { 192.0.2.1 }
	}
	chain c {
		type filter hook forward priority 10; policy accept;
		ip daddr @keep accept
	}
}
table ip moat {
	chain c {
		type filter hook input priority 5; policy accept;
	}
}
EOF
others() { in_ns "$NS_GW" nft -j list table inet other; in_ns "$NS_GW" nft -j list table ip moat; }
before=$(others)

# A bad config changes nothing in the kernel.
printf 'gateway: { uplink = "up0"; network = "10.77.0.0/24"; };\nsandboxes = ( { name = "x"; } );\n' >"$TOPO_TMP/bad.conf"
rs_before=$(in_ns "$NS_GW" nft list ruleset)
in_ns "$NS_GW" "$NFTR" -c "$TOPO_TMP/bad.conf" apply >/dev/null 2>&1; st=$?
expect_eq "apply of a bad config exits 1" 1 "$st"
expect_eq "apply of a bad config changes nothing" "$rs_before" "$(in_ns "$NS_GW" nft list ruleset)"

# --- before the policy: the topology lets everything through ----------
expect_probe connected dev tcp $LAN_HOST 22 "LAN ssh, no policy yet"

expect_ok "check validates the config" nftr check
expect_ok "probe: the kernel takes every part of the policy" nftr probe
expect_ok "apply succeeds" nftr apply
expect_ok "verify after apply: no drift" nftr verify
expect_eq "other tables untouched by apply" "$before" "$(others)"
t1=$(in_ns "$NS_GW" nft -s list table inet moat; in_ns "$NS_GW" nft -s list table bridge moat)
expect_ok "apply again succeeds" nftr apply
t2=$(in_ns "$NS_GW" nft -s list table inet moat; in_ns "$NS_GW" nft -s list table bridge moat)
expect_eq "applying twice changes nothing" "$t1" "$t2"
expect_eq "other tables untouched by reapply" "$before" "$(others)"

# --- LAN and private ranges: refused from every mode ---------------------
for g in web dev locked; do
	expect_probe EHOSTUNREACH $g tcp $LAN_HOST 22 "LAN ssh"
	expect_probe EHOSTUNREACH $g tcp $LAN_HOST 80 "LAN http"
done
expect_probe EHOSTUNREACH dev tcp 169.254.169.254 80 "cloud metadata"
c0=$(counter inet private)
probe dev tcp $LAN_HOST 22 >/dev/null
expect_eq "a refusal to the LAN increments counter private" $((c0 + 1)) "$(counter inet private)"

# --- refusals stay immediate at any rate -----------------------------------
# The kernel rate-limits ICMP errors per destination (1 s, burst 6) and per
# namespace; apply lifts the first and sets the second from moat.conf, so a
# guest's hundredth refusal in a second is as immediate as its first.  A
# refusal dropped by the kernel shows as a SYN retransmitted after 1 s, so
# the counter must grow by exactly one per connection.
cat >"$TOPO_TMP/burst.py" <<'PYEOF'
import errno, socket, sys, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen, slow = {}, 0
for _ in range(n):
    s = socket.socket()
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect((addr, port))
        r = "connected"
    except socket.timeout:
        r = "timeout"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    if time.monotonic() - t >= 0.9:   # the first SYN retransmission is at 1 s
        slow += 1
    seen[r] = seen.get(r, 0) + 1
    s.close()
print(" ".join("%s %d" % kv for kv in sorted(seen.items())), "slow", slow)
PYEOF
expect_eq "apply lifts the per-host ICMP limit" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"
expect_eq "apply sets the global ICMP cap from moat.conf" "100000 10000" \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_msgs_per_sec net.ipv4.icmp_msgs_burst | tr '\n' ' ' | sed 's/ $//')"
c0=$(counter inet private)
expect_eq "100 refused connections in a row: 100 immediate EHOSTUNREACH" \
	"EHOSTUNREACH 100 slow 0" \
	"$(in_ns "$TOPO-dev" python3 "$TOPO_TMP/burst.py" $LAN_HOST 22 100)"
expect_eq "... each counted once: no SYN was retransmitted" $((c0 + 100)) \
	"$(counter inet private)"
# ... but the host's own ICMP errors to anywhere else keep the kernel's
# default limits: 3,000 datagrams to closed ports of the gateway's uplink
# address (a flood whose source could be spoofed) draw a handful of port
# unreachables, not 3,000, while a guest's refusals stay immediate.
cat >"$TOPO_TMP/udp-flood.py" <<'PYEOF'
import socket, sys, time
def unreach():
    lines = [l.split() for l in open("/proc/net/snmp") if l.startswith("Icmp:")]
    return int(dict(zip(lines[0], lines[1]))["InDestUnreachs"])
addr, n = sys.argv[1], int(sys.argv[2])
before = unreach()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(n):
    s.sendto(b"x", (addr, 40000 + i % 1000))
time.sleep(2)
print(unreach() - before)
PYEOF
got=$(in_ns "$NS_INET" python3 "$TOPO_TMP/udp-flood.py" 203.0.113.1 3000)
if [ "${got:-9999}" -le 12 ]; then ok "3000 datagrams to closed ports on the uplink: $got ICMP errors back (kernel default: about 6)"
else not_ok "3000 datagrams to closed ports on the uplink draw at most 12 ICMP errors" "got ${got:-none}"; fi
c0=$(counter inet private)
expect_eq "... while a guest's 100 refusals in a row stay immediate" \
	"EHOSTUNREACH 100 slow 0" \
	"$(in_ns "$TOPO-dev" python3 "$TOPO_TMP/burst.py" $LAN_HOST 22 100)"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=1000
out=$(nftr verify 2>&1); st=$?
expect_eq "verify: the kernel's ICMP limit put back is drift (exit 1)" 1 "$st"
expect_match "verify says what and how to repair" \
	"icmp_ratelimit is 1000 ms.*repair: nft-rules apply" "$out"
expect_ok "apply repairs it" nftr apply
expect_eq "... the per-host ICMP limit is lifted again" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"

# --- the gateway host: DNS and proxy only, on every address --------------
for g in web dev locked; do
	expect_probe connected $g tcp $GW_ADDR 53 "gateway DNS"
	expect_probe connected $g tcp $GW_ADDR 3128 "gateway proxy"
	expect_probe EHOSTUNREACH $g tcp $GW_ADDR 22 "gateway ssh"
done
expect_probe EHOSTUNREACH dev tcp 192.168.77.1 22 "gateway's LAN address"
expect_probe EHOSTUNREACH dev tcp 203.0.113.1 22 "gateway's uplink address"
expect_probe EHOSTUNREACH dev tcp 192.168.77.1 53 "DNS on the gateway's LAN address"
c0=$(counter inet host)
probe dev tcp $GW_ADDR 22 >/dev/null
expect_eq "a refusal to the host increments counter host" $((c0 + 1)) "$(counter inet host)"

# --- guests never reach each other ----------------------------------------
# gatewayd has the bridge answer a guest's ARP for another guest with the
# gateway's MAC (proxy_arp_pvlan, proxy_delay 0; 25-gatewayd-ipv4-refusals):
# set here by hand, as nft-rules alone does not.  The connection then
# meets the policy, which refuses it at once.
in_ns "$NS_GW" sysctl -qw net.ipv4.conf.moat0.proxy_arp_pvlan=1 net.ipv4.neigh.moat0.proxy_delay=0
c0=$(counter inet guest)
expect_probe EHOSTUNREACH dev tcp 10.77.0.10 8080 "another guest on the bridge"
expect_eq "... counted as another guest" $((c0 + 1)) "$(counter inet guest)"
# Routed back through the host (hairpin): refused at layer 3 too.
in_ns "$TOPO-dev" ip route add 10.77.0.10/32 via $GW_ADDR
c0=$(counter inet guest)
expect_probe EHOSTUNREACH dev tcp 10.77.0.10 8080 "another guest via the gateway"
expect_eq "the hairpin refusal increments counter guest" $((c0 + 1)) "$(counter inet guest)"
in_ns "$TOPO-dev" ip route del 10.77.0.10/32 via $GW_ADDR

# --- DNS and DoT only via the gateway ------------------------------------
expect_probe EHOSTUNREACH dev tcp 203.0.113.53 53 "DNS/tcp elsewhere"
expect_probe EHOSTUNREACH dev udp 203.0.113.53 53 "DNS/udp elsewhere"
expect_probe EHOSTUNREACH dev tcp 203.0.113.53 853 "DoT elsewhere"
c0=$(counter inet dns)
probe dev udp 203.0.113.53 53 >/dev/null
expect_eq "a DNS refusal increments counter dns" $((c0 + 1)) "$(counter inet dns)"

# --- egress modes ----------------------------------------------------------
body=$(in_ns "$TOPO-dev" curl -s --max-time 3 http://$INET_HTTP/)
expect_eq "open: internet HTTP reachable" "hello from the internet" "$body"
expect_probe reply dev udp $INET_HTTP 9999 "open: internet UDP"
expect_probe EHOSTUNREACH locked tcp $INET_HTTP 80 "none: internet HTTP"
c0=$(counter inet none)
probe locked tcp $INET_HTTP 80 >/dev/null
expect_eq "a none-mode refusal increments counter none" $((c0 + 1)) "$(counter inet none)"

expect_probe EHOSTUNREACH web tcp $INET_HTTP 80 "allowlist: address not in the set"
expect_ok "add an address to web's allowlist set" nftr add web 30000 $INET_HTTP
expect_probe connected web tcp $INET_HTTP 80 "allowlist: address in the set"
expect_probe EHOSTUNREACH web udp $INET_HTTP 9999 "allowlist: UDP to an address in the set, not in allow_ports"
expect_probe EHOSTUNREACH web tcp $INET_HTTP 8443 "allowlist: another TCP port of an address in the set"
expect_probe EHOSTUNREACH web tcp $INET_ADDR 8080 "allowlist: another address"
c0=$(counter inet allowlist)
probe web tcp $INET_ADDR 8080 >/dev/null
expect_eq "an allowlist refusal increments counter allowlist" $((c0 + 1)) "$(counter inet allowlist)"
# Re-adding an element replaces its timeout (the kernel's own view of the
# element proves it, not the clock): shorter here...
expect_eq "the element's timeout is 30 s" 30 "$(web_timeout $INET_HTTP)"
expect_ok "re-add the address with a shorter timeout" nftr add web 2000 $INET_HTTP
expect_eq "re-add replaced the timeout (30 s -> 2 s)" 2 "$(web_timeout $INET_HTTP)"
wait_for 30 web_gone $INET_HTTP
expect_probe EHOSTUNREACH web tcp $INET_HTTP 80 "allowlist: element gone after its (updated) timeout"
# ...and longer here, so it must outlive the first.
expect_ok "add it again for 3 s" nftr add web 3000 $INET_HTTP
expect_ok "re-add it for 60 s" nftr add web 60000 $INET_HTTP
expect_eq "re-add replaced the timeout (3 s -> 60 s)" 60 "$(web_timeout $INET_HTTP)"
sleep 3.5	# the first timeout runs out: that is what is tested
expect_probe connected web tcp $INET_HTTP 80 "allowlist: refreshed element still there after the first timeout"
expect_ok "reapply keeps allowlist elements" nftr apply
in_ns "$NS_GW" nft list set inet moat allow_web | sed -n 's/^/# /;/elements/p'
expect_probe connected web tcp $INET_HTTP 80 "allowlist: element survives a reapply"
expect_ok "re-add it for 1 s" nftr add web 1000 $INET_HTTP
wait_for 30 web_gone $INET_HTTP
expect_probe EHOSTUNREACH web tcp $INET_HTTP 80 "allowlist: element gone after its timeout"

# --- anti-spoofing ---------------------------------------------------------
c0=$(counter bridge spoof)
# Extra addresses as /32 so the guest's routes stay as they are; the
# probe binds to them as its source.
in_ns "$TOPO-dev" ip addr add 10.77.0.99/32 dev eth0
got=$(probe dev tcp $INET_HTTP 80 10.77.0.99)
expect_eq "dev -> $INET_HTTP:80 from a changed IPv4 address: nothing" timeout "$got"
in_ns "$TOPO-dev" ip addr add 10.77.0.10/32 dev eth0
got=$(probe dev tcp $INET_HTTP 80 10.77.0.10)
expect_eq "dev -> $INET_HTTP:80 from another guest's IPv4 address: nothing" timeout "$got"
in_ns "$TOPO-dev" ip addr del 10.77.0.99/32 dev eth0
in_ns "$TOPO-dev" ip addr del 10.77.0.10/32 dev eth0
in_ns "$TOPO-dev" ip link set eth0 address 52:54:00:00:00:99
expect_probe timeout dev tcp $INET_HTTP 80 "with a changed MAC"
in_ns "$TOPO-dev" ip link set eth0 address 52:54:00:00:00:0b
expect_probe connected dev tcp $INET_HTTP 80 "with its own MAC and address again"
c1=$(counter bridge spoof)
expect_match "spoofed frames increment counter spoof" "^[0-9]+$" "$c1"
[ "${c1:-0}" -gt "${c0:-0}" ] && ok "spoof counter grew ($c0 -> $c1)" || not_ok "spoof counter grew" "$c0 -> $c1"

# --- verify notices drift; render is what nft would build ----------------
in_ns "$NS_GW" nft insert rule inet moat guest_fwd accept
out=$(nftr verify 2>&1); st=$?
expect_eq "verify exits 1 on drift" 1 "$st"
expect_match "verify shows the extra rule in nft syntax, with its handle" \
	'^\+rule inet moat guest_fwd #0: accept \(handle [0-9]+\)$' "$out"
expect_eq "verify shows that rule alone: the policy's rules after it are in their order" \
	1 "$(grep -c '^[-+]' <<<"$out")"
expect_fail "verify prints no raw bytecode for rules the policy makes" \
	grep -qE '^[-+]rule .*\[ (immediate|payload|cmp) ' <<<"$out"
expect_match "verify names the command that repairs the drift" \
	"to repair: nft-rules -c $CONF apply" "$out"
expect_ok "apply repairs drift" nftr apply
expect_ok "verify clean after repair" nftr verify
nftr render >"$TOPO_TMP/policy.nft"
# nft(8) cannot load over our tables: it resets their flags, which the
# kernel refuses for persist tables.  Load into a flushed namespace.
nftr flush
expect_ok "nft -f loads the rendered policy" in_ns "$NS_GW" nft -f "$TOPO_TMP/policy.nft"
out=$(nftr verify 2>&1)
expect_eq "rendered text compiles to the same bytecode (only the netlink-only table flags differ)" \
	"$(printf -- '+table bridge moat\n-table bridge moat { flags persist }\n+table inet moat\n-table inet moat { flags persist }')" \
	"$(printf '%s\n' "$out" | grep -v '^nft-rules:')"

# --- flush -----------------------------------------------------------------
expect_ok "flush succeeds" nftr flush
expect_eq "flush removes moat's tables only" "table inet other
table ip moat" "$(in_ns "$NS_GW" nft list tables | sort)"
expect_eq "other tables untouched by flush" "$before" "$(others)"
expect_probe connected dev tcp $LAN_HOST 22 "LAN ssh once the policy is flushed"
expect_ok "flush with nothing to flush succeeds" nftr flush
tap_done
