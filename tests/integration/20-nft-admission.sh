#!/usr/bin/env bash
# nft-rules: exceptions hold only for the sandboxes they apply to (never
# egress "none", by default only open sandboxes), an allowlisted address
# opens only allow_ports, and the output chain holds the proxy's and
# dnsd's users to what a guest may reach.  Real traffic in the topology.
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services || not_ok "services start"
topo_banner "$NS_LAN" $LAN_HOST 8081 "lan-other"
topo_http "$NS_INET" $INET_ADDR 8443 "another site on a shared address"
topo_banner "$NS_INET" 203.0.113.53 53 "upstream-dns"
topo_bg "$NS_INET" udp-echo socat UDP4-RECVFROM:443,bind=$INET_HTTP,fork SYSTEM:"echo quic"
topo_banner "$NS_GW" 0.0.0.0 2222 "gateway-host-service"
topo_banner "$TOPO-web" 10.77.0.10 8080 "guest-web-service"

PROXY_UID=$(id -u nobody)
DNS_UID=$(id -u daemon)
CONF=$TOPO_TMP/moat.conf
cat >"$CONF" <<'EOF'
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = (
    { to = "192.168.77.2/32"; proto = "tcp"; ports = [ 22 ]; },
    { to = "192.168.77.2/32"; proto = "tcp"; ports = [ 80 ]; sandboxes = [ "web" ]; }
  );
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

# A copy in our own folder: the proxy user must be able to read it.
cp tests/harness/probe.py "$TOPO_TMP/probe.py"
chmod 0755 "$TOPO_TMP"; chmod 0644 "$TOPO_TMP/probe.py"
probe() { in_ns "$TOPO-$1" python3 "$TOPO_TMP/probe.py" "$2" "$3" "$4"; }
expect_probe() {	# expect_probe WANT GUEST PROTO ADDR PORT WHAT
	local want=$1 got; shift
	got=$(probe "$1" "$2" "$3" "$4")
	expect_eq "$1 -> $3:$4/$2 ($5): $want" "$want" "$got"
}
# as_user UID PROTO ADDR PORT -- a probe from the gateway itself, as uid
as_user() {
	in_ns "$NS_GW" setpriv --reuid="$1" --regid=65534 --clear-groups \
	    /usr/bin/python3 "$TOPO_TMP/probe.py" "$2" "$3" "$4"
}
expect_user() {	# expect_user WANT WHO UID PROTO ADDR PORT WHAT
	local got
	got=$(as_user "$3" "$4" "$5" "$6")
	expect_eq "$2 -> $5:$6/$4 ($7): $1" "$1" "$got"
}
nftr() { in_ns "$NS_GW" "$NFTR" -c "$CONF" --proxy-user "$PROXY_UID" --dns-user "$DNS_UID" "$@"; }

expect_ok "apply with exceptions by sandbox and an output chain" nftr apply
expect_ok "verify: the kernel holds what was built" nftr verify

# --- exceptions apply only to the sandboxes they name --------------------
expect_probe connected dev tcp $LAN_HOST 22 "exception, default: every open sandbox"
expect_probe EHOSTUNREACH locked tcp $LAN_HOST 22 "egress none: no exception applies"
expect_probe EHOSTUNREACH web tcp $LAN_HOST 22 "allowlist not named: the default does not apply"
expect_probe connected web tcp $LAN_HOST 80 "allowlist named by the exception"
expect_probe EHOSTUNREACH dev tcp $LAN_HOST 80 "open, but not named by that exception"
expect_probe EHOSTUNREACH locked tcp $LAN_HOST 80 "egress none, whatever an exception says"

# --- an allowlisted address opens only allow_ports ------------------------
in_ns "$NS_GW" "$NFTR" -c "$CONF" add web 60000 $INET_HTTP $INET_ADDR >/dev/null
expect_probe connected web tcp $INET_HTTP 80 "allowlisted address, tcp/80"
expect_probe EHOSTUNREACH web tcp $INET_ADDR 8443 "allowlisted address, tcp/8443 (not in allow_ports)"
expect_probe EHOSTUNREACH web udp $INET_HTTP 443 "allowlisted address, udp/443 (QUIC is opt-in)"
sed -i 's|egress = "allowlist"; allow = \[ "example.test" \]; },|egress = "allowlist"; allow = [ "example.test" ];\n    allow_ports = [ "tcp/80", "tcp/443", "udp/443" ]; },|' "$CONF"
expect_ok "reapply with udp/443 in allow_ports" nftr apply
expect_probe reply web udp $INET_HTTP 443 "udp/443 once opted in"
expect_probe EHOSTUNREACH web tcp $INET_ADDR 8443 "tcp/8443 still not"

# --- the proxy's and dnsd's own packets ------------------------------------
expect_user connected root 0 tcp 203.0.113.1 2222 "root is not held (control)"
expect_user EHOSTUNREACH proxy-user "$PROXY_UID" tcp 203.0.113.1 2222 "the gateway's uplink address"
expect_user EHOSTUNREACH proxy-user "$PROXY_UID" tcp 192.168.77.1 2222 "the gateway's LAN address"
expect_user EHOSTUNREACH proxy-user "$PROXY_UID" tcp 127.0.0.1 2222 "loopback"
expect_user EHOSTUNREACH proxy-user "$PROXY_UID" tcp 10.77.0.10 8080 "a guest"
expect_user EHOSTUNREACH proxy-user "$PROXY_UID" tcp $LAN_HOST 8081 "the LAN"
expect_user connected proxy-user "$PROXY_UID" tcp $LAN_HOST 22 "an exception that applies to a sandbox"
expect_user connected proxy-user "$PROXY_UID" tcp $INET_HTTP 80 "the internet"
expect_user connected proxy-user "$PROXY_UID" tcp 203.0.113.53 53 "its upstream resolver"
expect_user connected dns-user "$DNS_UID" tcp 203.0.113.53 53 "its upstream resolver"
expect_user EHOSTUNREACH dns-user "$DNS_UID" tcp $INET_HTTP 80 "anything but the upstreams on 53"
expect_user EHOSTUNREACH dns-user "$DNS_UID" tcp $LAN_HOST 22 "the LAN"
c=$(in_ns "$NS_GW" nft list counter inet moat egress | awk '/packets/ {print $2}')
[ "${c:-0}" -ge 7 ] && ok "refusals of the proxy and dnsd count under egress ($c)" ||
	not_ok "refusals of the proxy and dnsd count under egress" "got ${c:-none}"

expect_ok "flush" nftr flush
tap_done
