#!/usr/bin/env bash
# gateway.host_access: the host's own users and guests' services.  With
# the default ("owners") a new connection from the gateway host to a guest
# passes from root and from the guest's owner (to their own guest only);
# any other uid, such as 12345 with no account and no group moat, is
# refused at once (ICMP admin-prohibited: EHOSTUNREACH) and counted under
# hostuser.  Replies to a guest's own connections pass whoever answers.
# "root" lets only root through, "all" everyone (the old behaviour).
. "$(dirname "$0")/../harness/tap.sh"
. "$(dirname "$0")/../harness/topology.sh"
cd "$(dirname "$0")/../.."
NFTR=$PWD/build/nft-rules

UA=mtha$$ UB=mthb$$
users_cleanup() {
	userdel "$UA" 2>/dev/null
	userdel "$UB" 2>/dev/null
}
topo_up || { not_ok "topology comes up"; exit 1; }
trap 'rc=$?; users_cleanup; topo_down; exit $rc' EXIT
trap 'users_cleanup; topo_down; exit 130' INT
trap 'users_cleanup; topo_down; exit 143' TERM
for u in $UA $UB; do
	useradd -M -N -s /usr/sbin/nologin "$u" || { not_ok "useradd $u"; exit 1; }
done

topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_banner "$TOPO-web" 10.77.0.10 8888 "web-guest-service"
topo_banner "$TOPO-dev" 10.77.0.11 8888 "dev-guest-service"

CONF=$TOPO_TMP/moat.conf
conf() {	# conf [HOST_ACCESS]
	cat >"$CONF" <<EOF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  ${1:+host_access = \"$1\";}
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
    egress = "open"; owner = "$UA"; },
  { name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev";
    egress = "open"; owner = "$UB"; }
);
EOF
}
cp tests/harness/probe.py "$TOPO_TMP/probe.py"
chmod 755 "$TOPO_TMP"; chmod 644 "$TOPO_TMP/probe.py"
as() {	# as USER|UID cmd... -- on the gateway host, as that uid, no groups
	in_ns "$NS_GW" setpriv --reuid="$1" --regid=65534 --clear-groups "${@:2}"
}
from_host() {	# from_host USER|UID GUEST_ADDR -- one TCP connection to port 8888
	as "$1" /usr/bin/python3 "$TOPO_TMP/probe.py" tcp "$2" 8888
}
expect_host() {	# expect_host WANT USER|UID GUEST_ADDR WHAT
	expect_eq "$4: $1" "$1" "$(from_host "$2" "$3")"
}
counter() {
	in_ns "$NS_GW" nft list counter inet moat hostuser 2>/dev/null |
	    awk '/packets/ {print $2}'
}
apply() { in_ns "$NS_GW" "$NFTR" -c "$CONF" apply; }

# --- before the policy: every local user reaches every guest ------------
expect_host connected 12345 10.77.0.11 "no policy yet: uid 12345 -> dev's port"
ping_before=$(as 12345 ping -c1 -W2 10.77.0.10 >/dev/null 2>&1 && echo yes)

# --- default "owners" --------------------------------------------------
conf
expect_ok "apply with the default host_access" apply
expect_host EHOSTUNREACH 12345 10.77.0.10 "uid 12345 (no account, not in moat) -> web"
expect_host EHOSTUNREACH 12345 10.77.0.11 "uid 12345 -> dev"
expect_host connected "$UA" 10.77.0.10 "web's owner -> web"
expect_host EHOSTUNREACH "$UA" 10.77.0.11 "web's owner -> dev (another member's guest)"
expect_host connected "$UB" 10.77.0.11 "dev's owner -> dev"
expect_host EHOSTUNREACH "$UB" 10.77.0.10 "dev's owner -> web"
expect_eq "root -> web and dev: connected" "connected connected" \
	"$(in_ns "$NS_GW" python3 "$TOPO_TMP/probe.py" tcp 10.77.0.10 8888) $(in_ns "$NS_GW" python3 "$TOPO_TMP/probe.py" tcp 10.77.0.11 8888)"
c0=$(counter)
from_host 12345 10.77.0.10 >/dev/null
expect_eq "a refused host user is counted under hostuser" $((c0 + 1)) "$(counter)"
if [ "$ping_before" = yes ]; then
	ping_out=$(as 12345 ping -c1 -W2 10.77.0.10 2>&1); st=$?
	[ $st -ne 0 ] && ok "uid 12345 pinged a guest before the policy, not now" ||
		not_ok "uid 12345 cannot ping a guest" "$ping_out"
fi
# UDP: a datagram from uid 12345 never reaches the guest's listener.
topo_bg "$TOPO-web" udp-sink socat -u UDP4-RECV:9999,bind=10.77.0.10 OPEN:"$TOPO_TMP/udp-got",creat,append
wait_for 30 in_ns "$TOPO-web" sh -c "ss -Hlun 'sport = :9999' | grep -q ." || not_ok "UDP sink starts"
as 12345 sh -c 'echo from-12345 | socat -u - UDP4-SENDTO:10.77.0.10:9999' 2>/dev/null
echo from-root | in_ns "$NS_GW" socat -u - UDP4-SENDTO:10.77.0.10:9999
wait_for 10 grep -q from-root "$TOPO_TMP/udp-got" 2>/dev/null
expect_eq "UDP: root's datagram arrives, uid 12345's does not" "from-root" \
	"$(cat "$TOPO_TMP/udp-got" 2>/dev/null)"

# IPv6: the bridge drops what a guest sends, so neighbour discovery fails
# and the host has no way to a guest's link-local address; with one put
# in by hand (root), uid 12345 still gets nothing through.
topo_wait_dad "$TOPO-web" eth0 && topo_wait_dad "$NS_GW" moat0
ll=$(ip -n "$TOPO-web" -6 addr show dev eth0 scope link | awk '/inet6/ {sub("/.*", "", $2); print $2; exit}')
ip -n "$NS_GW" -6 neigh replace "$ll" dev moat0 lladdr 52:54:00:00:00:0a nud permanent
topo_bg "$TOPO-web" udp6-sink socat -u UDP6-RECV:9998 OPEN:"$TOPO_TMP/udp6-got",creat,append
wait_for 30 in_ns "$TOPO-web" sh -c "ss -Hlun 'sport = :9998' | grep -q ." || not_ok "UDP6 sink starts"
as 12345 sh -c "echo from-12345 | socat -u - UDP6-SENDTO:[$ll%moat0]:9998" 2>/dev/null
echo from-root | in_ns "$NS_GW" socat -u - "UDP6-SENDTO:[$ll%moat0]:9998"
wait_for 10 grep -q from-root "$TOPO_TMP/udp6-got" 2>/dev/null
expect_eq "IPv6 to a guest's link-local address: root's datagram arrives, uid 12345's does not" \
	"from-root" "$(cat "$TOPO_TMP/udp6-got" 2>/dev/null)"

# The only services a guest reaches on the host are the proxy and dnsd:
# a host user who binds the proxy's port (while gatewayd is down, or
# before it starts) does not get to answer the guests' proxy connections,
# only the proxy's user does (the same rule keeps TCP port 53 for dnsd's).
topo_bg "$NS_GW" user-svc setpriv --reuid=12345 --regid=65534 --clear-groups \
	socat TCP-LISTEN:3128,bind=$GW_ADDR,fork,reuseaddr SYSTEM:"echo hijacked-by-12345"
topo_wait_port "$NS_GW" $GW_ADDR 3128 || not_ok "uid 12345's listener starts"
svc0=$(in_ns "$NS_GW" nft list counter inet moat svcreply | grep -o 'packets [0-9]*')
out=$(in_ns "$TOPO-web" timeout 10 socat -T3 - TCP:$GW_ADDR:3128 </dev/null 2>&1)
expect_fail "a host user on the proxy's port answers no guest" grep -q hijacked <<<"$out"
expect_match "... the refusal counted as svcreply" 'packets [1-9]' \
	"$(in_ns "$NS_GW" nft list counter inet moat svcreply)"
[ "$svc0" != "$(in_ns "$NS_GW" nft list counter inet moat svcreply | grep -o 'packets [0-9]*')" ] ||
	not_ok "the svcreply counter moved"
# The gateway's own sandbox-side address is the host, not a guest.
expect_eq "uid 12345 -> the gateway's own sandbox-side address: connected" connected \
	"$(as 12345 /usr/bin/python3 "$TOPO_TMP/probe.py" tcp $GW_ADDR 3128)"

# --- "root": owners too are refused ------------------------------------
conf root
expect_ok "apply with host_access = root" apply
expect_host EHOSTUNREACH "$UA" 10.77.0.10 "root only: web's owner -> web"
expect_eq "root only: root -> web" connected \
	"$(in_ns "$NS_GW" python3 "$TOPO_TMP/probe.py" tcp 10.77.0.10 8888)"

# --- "all": no check --------------------------------------------------------
conf all
expect_ok "apply with host_access = all" apply
expect_host connected 12345 10.77.0.11 "all: uid 12345 -> dev"

# --- a bad value: file:line, nothing changes -----------------------------
conf members
rs_before=$(in_ns "$NS_GW" nft list ruleset)
out=$(in_ns "$NS_GW" "$NFTR" -c "$CONF" apply 2>&1); st=$?
expect_eq "a bad host_access: exit 1" 1 "$st"
expect_match "... names file:line and the choices" \
	"moat.conf:[0-9]+: gateway: host_access: expected \"owners\", \"root\" or \"all\", got \"members\"" "$out"
expect_eq "... and changes nothing" "$rs_before" "$(in_ns "$NS_GW" nft list ruleset)"

tap_done
