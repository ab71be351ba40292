# topology.sh -- the test topology in network namespaces (sourced).
#
#   guest nss (eth0 10.77.0.x) --veth "tap"--> [gw ns: bridge moat0 10.77.0.1/24]
#   gw ns up0 203.0.113.1/24  <---veth--->  inet ns eth0 203.0.113.2/24
#                                             (+ .10 http, .53 dns, ...;
#                                             lo: 9.9.9.9 1.1.1.1 8.8.8.8)
#   gw ns lan0 192.168.77.1/24 <---veth--->  lan ns eth0 192.168.77.2/24
#
# Every name carries a per-run prefix, every interface is created inside a
# namespace of ours, and topo_down (trapped on EXIT, INT, TERM) kills every
# process we started and deletes every namespace, pass or fail.  Nothing
# here ever sends a packet outside these namespaces.

set -u
. "$(dirname "${BASH_SOURCE[0]}")/host-guard.sh"
TOPO=${TOPO:-moat$$}
NS_GW=$TOPO-gw
NS_INET=$TOPO-inet
NS_LAN=$TOPO-lan
TOPO_NSES=()
TOPO_PIDS=()
TOPO_USERS=()
TOPO_TMP=$(mktemp -d /tmp/$TOPO.XXXXXX)
# What runs as another user (stand-in resolvers, members, QEMU's user)
# takes its files from here, never from the checkout: a checkout may sit
# in a folder only root can pass (/root is 0700), and $TOPO_TMP is 0700.
TOPO_PUB=$(mktemp -d /tmp/$TOPO-pub.XXXXXX) && chmod 755 "$TOPO_PUB"
GW_ADDR=10.77.0.1
INET_ADDR=203.0.113.2
INET_HTTP=203.0.113.10
LAN_HOST=192.168.77.2
# The public resolvers a guest might try to reach past the gateway: in the
# internet namespace, reached only through the gateway namespace's default
# route into it.  Their IPv6 addresses too: the uplink carries IPv6
# (2001:db8:203::/64, documentation space) with a default route, as a
# dual-stack ISP gives a homelab; what a guest could reach over IPv6 if the
# gateway forwarded it meets a real far end.
PUBLIC_RESOLVERS="9.9.9.9 1.1.1.1 8.8.8.8"
PUBLIC_RESOLVERS6="2620:fe::fe 2606:4700:4700::1111 2001:4860:4860::8888"
GW_UP6=2001:db8:203::1
INET_ADDR6=2001:db8:203::2

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

topo_down() {
	local pid ns
	host_guard_report || HOST_GUARD_BAD=1
	for pid in "${TOPO_USERS[@]}"; do userdel "$pid" 2>/dev/null; done
	TOPO_USERS=()
	for pid in "${TOPO_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for ns in "${TOPO_NSES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
	done
	# Also any namespace of this run that a subshell created.
	for ns in "${TOPO_NSES[@]}" $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$TOPO-"); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
	TOPO_NSES=()
	# A test's own mounts (a FUSE filesystem) go before its files do.
	awk -v d="$TOPO_TMP/" 'index($2, d) == 1 { print $2 }' /proc/mounts 2>/dev/null |
		while read -r m; do umount -l "$m"; done
	rm -rf "$TOPO_TMP" "$TOPO_PUB"
}

topo_trap() {
	trap 'rc=$?; topo_down; [ "${HOST_GUARD_BAD:-0}" = 0 ] || rc=1; exit $rc' EXIT
	trap 'topo_down; exit 130' INT
	trap 'topo_down; exit 143' TERM
}

# topo_members USER... -- members of group moat (no home, no shell) for a
# team test, after moat's own users; topo_down removes them.
topo_members() {
	local u
	bash gatewayd/install-users.sh
	for u in "$@"; do
		useradd -M -N -G moat -s /usr/sbin/nologin "$u" || return 1
		TOPO_USERS+=("$u")
	done
}

topo_ns() {	# topo_ns NAME -- create an empty namespace with lo up
	ip netns add "$1" || return 1
	TOPO_NSES+=("$1")
	ip -n "$1" link set lo up
}

# Remove namespaces left by earlier runs whose process is gone.
topo_reap_stale() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^moat[0-9]+-'); do
		pid=${ns#moat}; pid=${pid%%-*}
		kill -0 "$pid" 2>/dev/null && continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
}

topo_link() {	# topo_link NS_A IF_A NS_B IF_B -- veth between two namespaces
	ip -n "$1" link add "$2" type veth peer name "$4" netns "$3" || return 1
	ip -n "$1" link set "$2" up
	ip -n "$3" link set "$4" up
}

topo_up() {
	topo_trap
	topo_reap_stale
	topo_ns "$NS_GW" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" || return 1
	in_ns "$NS_GW" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$NS_GW" link add moat0 type bridge
	ip -n "$NS_GW" addr add $GW_ADDR/24 dev moat0
	ip -n "$NS_GW" link set moat0 up
	topo_link "$NS_GW" up0 "$NS_INET" eth0
	ip -n "$NS_GW" addr add 203.0.113.1/24 dev up0
	ip -n "$NS_INET" addr add $INET_ADDR/24 dev eth0
	ip -n "$NS_INET" addr add $INET_HTTP/24 dev eth0
	ip -n "$NS_INET" addr add 203.0.113.53/24 dev eth0
	topo_link "$NS_GW" lan0 "$NS_LAN" eth0
	ip -n "$NS_GW" addr add 192.168.77.1/24 dev lan0
	ip -n "$NS_LAN" addr add $LAN_HOST/24 dev eth0
	ip -n "$NS_LAN" route add default via 192.168.77.1
	ip -n "$NS_GW" route add default via $INET_ADDR
	ip -n "$NS_GW" addr add $GW_UP6/64 dev up0 nodad
	ip -n "$NS_INET" addr add $INET_ADDR6/64 dev eth0 nodad
	ip -n "$NS_GW" -6 route add default via $INET_ADDR6
}

# topo_guest NAME ADDR MAC TAP -- a guest namespace $TOPO-NAME whose eth0
# has ADDR/24 and MAC, attached to moat0 by a veth named TAP on the gateway
# side (standing in for a QEMU tap), with bridge port isolation on.
# Call it directly (not in $(...)) so the namespace is recorded for cleanup.
topo_guest() {
	local ns=$TOPO-$1
	topo_ns "$ns" || return 1
	topo_link "$NS_GW" "$4" "$ns" eth0 || return 1
	ip -n "$ns" link set eth0 down
	ip -n "$ns" link set eth0 address "$3"
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$2"/24 dev eth0
	ip -n "$ns" route add default via $GW_ADDR
	ip -n "$NS_GW" link set "$4" master moat0
	ip -n "$NS_GW" link set "$4" type bridge_slave isolated on
}

# as_dns_user -- words to put before a stand-in for dnsd on the gateway
# (topo_bg NS NAME $(as_dns_user) cmd...): it runs as dnsd's user where
# installed, since the policy lets only that uid answer guests from port
# 53; it may still bind the port.
as_dns_user() {
	getent passwd moat-dns >/dev/null || return 0
	echo setpriv --reuid moat-dns --regid moat-dns --clear-groups \
		--inh-caps +net_bind_service --ambient-caps +net_bind_service \
		env PATH=/usr/sbin:/usr/bin:/sbin:/bin
}

# topo_pub FILE... -- copy FILEs (scripts, build/ programs) into the run's
# world-readable folder and print their new paths, one a line:
#   topo_bg "$NS_GW" dns $(as_dns_user) python3 $(topo_pub tests/harness/cc-dns.py)
#   runuser -u alice -- "$(topo_pub build/provision)" ...
# A copy keeps its name and is made again on every call.
topo_pub() {
	local f
	for f; do
		install -m 0755 "$f" "$TOPO_PUB/" || return 1
		echo "$TOPO_PUB/${f##*/}"
	done
}

topo_bg() {	# topo_bg NS LOGNAME cmd... -- background process, reaped by topo_down
	local ns=$1 name=$2; shift 2
	host_guard_cmd "$@" || return 1
	ip netns exec "$ns" "$@" >"$TOPO_TMP/$name.log" 2>&1 &
	TOPO_PIDS+=($!)
}

topo_listening() { # topo_listening NS ADDR PORT -- a TCP listener is there
	local a=$2
	case $a in *:*) a="[$a]" ;; esac
	in_ns "$1" ss -Hltn "src $a:$3" 2>/dev/null | grep -q .
}
topo_wait_port() { # topo_wait_port NS ADDR PORT -- wait up to 30 s for a listener
	wait_for 30 topo_listening "$@"
}

# topo_wait_dad NS IF -- wait (up to 30 s) until IF has an IPv6 link-local
# address that is past duplicate address detection: a tentative address
# cannot be used, so an IPv6 probe started earlier would find nothing.
topo_wait_dad() {
	local deadline=$((SECONDS + 30)) out
	while [ $SECONDS -lt $deadline ]; do
		out=$(ip -n "$1" -6 addr show dev "$2" scope link 2>/dev/null)
		case $out in
		*tentative*|*dadfailed*|"") ;;
		*inet6*) return 0 ;;
		esac
		sleep 0.1
	done
	echo "topo_wait_dad: $1 $2 has no usable link-local address: $out" >&2
	return 1
}

# topo_http NS ADDR PORT BODY -- an HTTP/1.0 server answering BODY.
topo_http() {
	local dir=$TOPO_TMP/www-$2-$3
	mkdir -p "$dir"; printf '%s\n' "$4" >"$dir/index.html"
	topo_bg "$1" "http-$2-$3" python3 -m http.server --bind "$2" --directory "$dir" "$3"
	topo_wait_port "$1" "$2" "$3"
}

# topo_banner NS ADDR PORT TEXT -- a TCP service that sends TEXT and closes.
topo_banner() {
	topo_bg "$1" "banner-$2-$3" socat TCP-LISTEN:"$3",bind="$2",fork,reuseaddr \
	    SYSTEM:"echo $4"
	topo_wait_port "$1" "$2" "$3"
}

# topo_resolvers -- stand-ins for the public resolvers on their own
# addresses in the internet namespace: DNS on udp/tcp 53, DoT on 853 and a
# DoH responder on 443, with a self-signed certificate of their own
# ($TOPO_TMP/resolver.crt), so that a probe past the gateway meets a real
# far end.  The addresses exist only inside the namespaces of this run.
topo_resolvers() {
	local a
	for a in $PUBLIC_RESOLVERS; do
		ip -n "$NS_INET" addr add "$a"/32 dev lo || return 1
	done
	for a in $PUBLIC_RESOLVERS6; do
		ip -n "$NS_INET" addr add "$a"/128 dev lo nodad || return 1
	done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes 		-subj /CN=public-resolver.test -days 2 		-keyout "$TOPO_TMP/resolver.key" -out "$TOPO_TMP/resolver.crt" 		>/dev/null 2>&1 || return 1
	topo_bg "$NS_INET" public-resolvers python3 tests/harness/public-resolver.py 		--cert "$TOPO_TMP/resolver.crt" --key "$TOPO_TMP/resolver.key" 		--lifetime 1800 $PUBLIC_RESOLVERS $PUBLIC_RESOLVERS6
	for a in $PUBLIC_RESOLVERS $PUBLIC_RESOLVERS6; do
		topo_wait_port "$NS_INET" "$a" 443 || return 1
	done
}

# topo_services -- the standard servers: HTTP on the internet, the public
# resolvers' stand-ins, SSH-like and HTTP services on the LAN host that
# must stay unreachable from guests.
topo_services() {
	topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet" || return 1
	topo_resolvers || return 1
	topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-moat-lan-host" || return 1
	topo_banner "$NS_LAN" $LAN_HOST 80 "lan-http" || return 1
}
