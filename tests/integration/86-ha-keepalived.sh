#!/usr/bin/env bash
# Two gateway boxes under real keepalived (Debian's), as docs/ha.md sets
# them up with examples/keepalived.conf and its scripts:
#
#   guest ns: br0 10.77.0.11 (MAC of "dev") -- ga --> box A mt-dev (moat0)
#                                           -- gb --> box B mt-dev (moat0)
#   A up0 203.0.113.1  <-> inet eth0     B up0 198.51.100.1 <-> inet eth1
#   A peer0 192.168.200.1 <----- VRRP -----> B peer0 192.168.200.2
#
# A (priority 150) becomes master, B backup; the guest resolves through
# the gateway address on A.  A's gatewayd is killed (-9): its track script
# fails, A gives up the address, B becomes master and answers DNS on it.
# A restarted gatewayd gets its role back from keepalived's state.  A box
# that is neither master nor backup forwards nothing, probed from the guest.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
. tests/harness/dns-lib.sh

command -v keepalived >/dev/null || { not_ok "keepalived is installed (make deps)"; tap_done; exit 1; }
NS_A=$NS_GW
NS_B=$TOPO-gwb
G=$TOPO-dev
topo_up || { not_ok "topology"; exit 1; }
# The gateway address is keepalived's to give.
ip -n "$NS_A" addr del $GW_ADDR/24 dev moat0
topo_ns "$NS_B" || { not_ok "box B"; exit 1; }
in_ns "$NS_B" sysctl -qw net.ipv4.ip_forward=1
ip -n "$NS_B" link add moat0 type bridge
ip -n "$NS_B" link set moat0 up
topo_link "$NS_B" up0 "$NS_INET" eth1
ip -n "$NS_B" addr add 198.51.100.1/24 dev up0
ip -n "$NS_INET" addr add 198.51.100.2/24 dev eth1
ip -n "$NS_B" route add default via 198.51.100.2
topo_link "$NS_A" peer0 "$NS_B" peer0
ip -n "$NS_A" addr add 192.168.200.1/24 dev peer0
ip -n "$NS_B" addr add 192.168.200.2/24 dev peer0
# One guest on both boxes: a bridge in its namespace with the sandbox's MAC.
topo_ns "$G"
topo_link "$NS_A" mt-dev "$G" ga
topo_link "$NS_B" mt-dev "$G" gb
ip -n "$G" link add br0 type bridge
ip -n "$G" link set br0 address 52:54:00:00:00:0b
ip -n "$G" link set ga master br0
ip -n "$G" link set gb master br0
ip -n "$G" link set br0 up
ip -n "$G" addr add 10.77.0.11/24 dev br0
ip -n "$G" route add default via $GW_ADDR
for ns in "$NS_A" "$NS_B"; do
	ip -n "$ns" link set mt-dev master moat0
	ip -n "$ns" link set mt-dev type bridge_slave isolated on
done
topo_services || { not_ok "services"; exit 1; }
dns_upstream 203.0.113.53 || { not_ok "dns upstream"; exit 1; }
topo_banner "$NS_INET" $INET_ADDR 2222 "far-end" || { not_ok "banner"; exit 1; }

# --- the two gatewayds, same configuration, own state ------------------
bash gatewayd/install-users.sh
declare -A PID SOCK
box_conf() {	# box_conf X -- the shared config with X's state folder
	sed "s|^gateway: {|gateway: { state_dir = \"$TOPO_TMP/state-$1\";\n  ha: { enabled = true; };|" \
	    examples/demo.conf >"$TOPO_TMP/$1.conf"
}
box_start() {	# box_start X NS
	SOCK[$1]=$TOPO_TMP/$1.sock
	box_conf "$1"
	moat_daemon "$2" build/gatewayd -d -c "$TOPO_TMP/$1.conf" -s "${SOCK[$1]}" \
	    -a "$TOPO_TMP/$1-audit.log" >>"$TOPO_TMP/$1-gatewayd.log" 2>&1 &
	PID[$1]=$!
	TOPO_PIDS+=("${PID[$1]}")
	wait_for 30 build/gatewayd ctl -s "${SOCK[$1]}" status >/dev/null 2>&1
}
ctl() { local x=$1; shift; build/gatewayd ctl -s "${SOCK[$x]}" "$@"; }
role() { ctl "$1" status 2>/dev/null | awk '$1 == "ha" {print $2}'; }
box_start A "$NS_A"; expect_eq "box A's gatewayd starts" 0 $?
box_start B "$NS_B"; expect_eq "box B's gatewayd starts" 0 $?
expect_eq "A starts with no role" unknown "$(role A)"
expect_eq "B starts with no role" unknown "$(role B)"
expect_match "neither box put the gateway address on its bridge" "left to keepalived" \
	"$(ctl A status | grep 'address 10.77.0.1')"
fwd() { tcp_probe "$G" $INET_ADDR 2222; }

# --- keepalived, from the examples -------------------------------------
# Without conntrackd and without the uplink's address (87-ha-pair has both).
ka_start() {	# ka_start X NS PRIO SRC PEER
	local d=$TOPO_TMP/ka-$1
	mkdir -p "$d"
	for s in moat-ha-notify.sh moat-ha-check.sh; do
		sed "s|/usr/local/sbin/gatewayd|$PWD/build/gatewayd|" examples/$s >"$d/$s"
		chmod 755 "$d/$s"
	done
	sed -e "s|/usr/local/lib/moat/|$d/|g" -e "s|/run/moat/gatewayd.sock|${SOCK[$1]}|g" \
	    -e "s|/run/moat/ha-role|$d/ha-role|g" -e "s|priority 150|priority $3|" \
	    -e "s|unicast_src_ip 192.168.200.1|unicast_src_ip $4|" \
	    -e "s|^\t\t192.168.200.2|\t\t$5|" -e "s| /etc/conntrackd/conntrackd.conf||" \
	    -e "/dev eth0\$/d" examples/keepalived.conf >"$d/keepalived.conf"
	topo_bg "$2" "keepalived-$1" keepalived -n -l -D -P -f "$d/keepalived.conf" \
	    -p "$d/k.pid" -r "$d/v.pid" -c "$d/c.pid"
	KA_PID[$1]=${TOPO_PIDS[-1]}
}
declare -A KA_PID
ka_start A "$NS_A" 150 192.168.200.1 192.168.200.2
ka_start B "$NS_B" 100 192.168.200.2 192.168.200.1
is_role() { [ "$(role "$1")" = "$2" ]; }
expect_ok "A becomes master (ctl status says so)" wait_for 30 is_role A master
expect_ok "B becomes backup" wait_for 30 is_role B backup
has_vip() { ip -n "$1" -4 addr show dev moat0 | grep -q "inet $GW_ADDR/"; }
expect_ok "A holds the gateway address" has_vip "$NS_A"
expect_fail "B does not" has_vip "$NS_B"
# dnsd and the proxy on B listen on the address B does not hold yet.
served() { ctl B status --json | python3 -c "import json,sys
c = [x for x in json.load(sys.stdin)['children'] if x['name'] in ('dnsd', 'proxy')]
print(' '.join(sorted('%s:%s' % (x['name'], 'up' if x['pid'] > 0 and x['restarts'] == 0 else 'restarting') for x in c)))"; }
expect_match "the backup's dnsd and proxy run, never restarted" '^dnsd:up( proxy:up)+$' "$(served)"
resolves() { in_ns "$G" dig @$GW_ADDR +time=2 +tries=1 +short pypi.org A 2>/dev/null |
	grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'; }
expect_ok "the guest resolves through the master" wait_for 10 resolves
expect_eq "and its connections are forwarded" connected "$(fwd)"
web() { in_ns "$G" curl -s --max-time 6 http://$INET_HTTP/ 2>/dev/null; }
expect_eq "and the master's proxy fetches for it" "hello from the internet" "$(web)"
expect_match "A's audit log has the role from keepalived" '"event":"ha-role".*"role":"master"' \
	"$(grep ha-role "$TOPO_TMP/A-audit.log")"

# --- a box in fault forwards nothing -----------------------------------
# A holds the address and is told fault (as keepalived's notify would):
# the guest's connection through it goes nowhere; master again, it goes.
ctl A ha fault >/dev/null
expect_eq "A in fault forwards nothing (probe from the guest)" timeout "$(fwd)"
expect_fail "nor answers DNS" resolves
ctl A ha master >/dev/null
expect_eq "A as master forwards again" connected "$(fwd)"

# --- A's gatewayd dies -------------------------------------------------
kill -9 "${PID[A]}"
t0=$(date +%s%N)
expect_ok "B becomes master" wait_for 30 is_role B master
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ok "B took over ${ms} ms after A's gatewayd died"
expect_ok "B holds the gateway address" wait_for 10 has_vip "$NS_B"
expect_fail "A gave it up" has_vip "$NS_A"
expect_ok "B answers DNS on the gateway address" wait_for 10 resolves
expect_eq "and B forwards the guest's connections" connected "$(fwd)"
expect_eq "and B's proxy fetches for it" "hello from the internet" "$(web)"

# --- A's gatewayd comes back -------------------------------------------
box_start A "$NS_A"; expect_eq "A's gatewayd starts again" 0 $?
not_unknown() { r=$(role A); [ -n "$r" ] && [ "$r" != unknown ]; }
expect_ok "keepalived gives the restarted gatewayd a role" wait_for 20 not_unknown
expect_ok "A comes back as master by priority" wait_for 30 is_role A master
expect_ok "and B goes back to backup" wait_for 30 is_role B backup
expect_ok "the guest resolves through A again" wait_for 10 resolves
expect_eq "and is forwarded" connected "$(fwd)"
tap_done
