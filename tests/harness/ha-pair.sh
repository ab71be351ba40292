# ha-pair.sh -- an active/standby pair of gateway boxes in network
# namespaces, under real keepalived and conntrackd (sourced, after tap.sh,
# topology.sh, gw.sh and dns-lib.sh):
#
#   guest ns $TOPO-dev: eth0 10.77.0.11 (MAC of "dev") -- the sandbox-side
#     segment (bridge sw0 in $TOPO-seg, a switch) -- A mt-dev (on moat0)
#                                                 -- B mt-dev (on moat0)
#   uplink segment: bridge upbr in $NS_INET (203.0.113.2, .10 http,
#     .20 stream, .53 dns; 198.51.100.2) with a port to A up0
#     (198.51.100.11) and B up0 (198.51.100.12); the uplink address the
#     guests are masqueraded to, 203.0.113.1, is keepalived's
#   LAN segment: bridge lanbr in $NS_LAN (192.168.77.2) with a port to
#     A lan0 (192.168.77.1) and B lan0 (192.168.77.3)
#   peer link: A peer0 192.168.200.1 <--> B peer0 192.168.200.2 (VRRP,
#     conntrackd)
#
# Both boxes run gatewayd with examples/demo.conf plus gateway.ha, and
# keepalived and conntrackd with the examples (examples/keepalived.conf,
# examples/conntrackd.conf, the notify and check scripts), their paths
# moved into $TOPO_TMP.  Every process and namespace is removed by
# topo_down (trapped), pass or fail.

NS_A=$TOPO-gwa
NS_B=$TOPO-gwb
G=$TOPO-dev
SEG=$TOPO-seg
STREAM_ADDR=203.0.113.20
UP_VIP=203.0.113.1
declare -A PID SOCK KA_PID CTD_PID PAIR_NS=([A]=$NS_A [B]=$NS_B)
declare -A PAIR_OWN=([A]=198.51.100.11 [B]=198.51.100.12)
declare -A PAIR_LAN=([A]=192.168.77.1 [B]=192.168.77.3)
declare -A PAIR_PEER=([A]=192.168.200.1 [B]=192.168.200.2)
declare -A PAIR_OTHER=([A]=B [B]=A)
declare -A PAIR_PRIO=([A]=150 [B]=100)

pair_up() {
	local x ns
	topo_trap
	topo_reap_stale
	topo_ns "$NS_A" && topo_ns "$NS_B" && topo_ns "$NS_INET" && topo_ns "$NS_LAN" &&
		topo_ns "$G" && topo_ns "$SEG" || return 1
	ip -n "$NS_INET" link add upbr type bridge
	ip -n "$NS_INET" link set upbr up
	ip -n "$NS_LAN" link add lanbr type bridge
	ip -n "$NS_LAN" link set lanbr up
	# The switch is not a host: no address of its own, not even IPv6's.
	in_ns "$SEG" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$SEG" link add sw0 type bridge
	ip -n "$SEG" link set sw0 up
	topo_link "$G" eth0 "$SEG" sg || return 1
	ip -n "$SEG" link set sg master sw0
	ip -n "$G" link set eth0 down
	ip -n "$G" link set eth0 address 52:54:00:00:00:0b
	ip -n "$G" link set eth0 up
	for x in A B; do
		ns=${PAIR_NS[$x]}
		in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1
		ip -n "$ns" link add moat0 type bridge
		ip -n "$ns" link set moat0 up
		topo_link "$ns" up0 "$NS_INET" "u$x" || return 1
		ip -n "$NS_INET" link set "u$x" master upbr
		ip -n "$ns" addr add "${PAIR_OWN[$x]}"/24 dev up0
		ip -n "$ns" route add default via $INET_ADDR dev up0 onlink
		topo_link "$ns" lan0 "$NS_LAN" "l$x" || return 1
		ip -n "$NS_LAN" link set "l$x" master lanbr
		ip -n "$ns" addr add "${PAIR_LAN[$x]}"/24 dev lan0
		topo_link "$ns" mt-dev "$SEG" "s${x,,}" || return 1
		ip -n "$SEG" link set "s${x,,}" master sw0
		ip -n "$ns" link set mt-dev master moat0
		ip -n "$ns" link set mt-dev type bridge_slave isolated on
	done
	topo_link "$NS_A" peer0 "$NS_B" peer0 || return 1
	ip -n "$NS_A" addr add 192.168.200.1/24 dev peer0
	ip -n "$NS_B" addr add 192.168.200.2/24 dev peer0
	for a in $INET_ADDR $INET_HTTP $STREAM_ADDR 203.0.113.53; do
		ip -n "$NS_INET" addr add $a/24 dev upbr
	done
	ip -n "$NS_INET" addr add 198.51.100.2/24 dev upbr
	ip -n "$NS_LAN" addr add $LAN_HOST/24 dev lanbr
	# The LAN would answer a guest (so a probe that got through shows),
	# and counts every packet from the sandbox network that reaches it.
	ip -n "$NS_LAN" route add 10.77.0.0/24 via 192.168.77.1
	in_ns "$NS_LAN" nft -f - <<-'NFT' || return 1
	table inet lanwatch {
		counter from_guests { }
		chain in { type filter hook input priority 0; ip saddr 10.77.0.0/24 counter name from_guests; }
	}
	NFT
	ip -n "$G" addr add 10.77.0.11/24 dev eth0
	ip -n "$G" route add default via $GW_ADDR
	topo_http "$NS_INET" $INET_HTTP 80 "hello from the internet" || return 1
	topo_bg "$NS_INET" stream-80 python3 tests/harness/ha-stream.py $STREAM_ADDR 80 300
	topo_bg "$NS_INET" stream-5001 python3 tests/harness/ha-stream.py $STREAM_ADDR 5001 300
	topo_wait_port "$NS_INET" $STREAM_ADDR 80 && topo_wait_port "$NS_INET" $STREAM_ADDR 5001 || return 1
	dns_upstream 203.0.113.53 || return 1
	topo_banner "$NS_LAN" $LAN_HOST 22 "SSH-2.0-moat-lan-host" || return 1
	# A service on each box itself, which guests must never reach.
	for x in A B; do
		topo_banner "${PAIR_NS[$x]}" 0.0.0.0 2200 "box-$x" || return 1
	done
}

# How many packets from the sandbox network reached the LAN host.
pair_lan_count() {
	in_ns "$NS_LAN" nft list counter inet lanwatch from_guests |
		awk '$1 == "packets" {print $2}'
}

pair_box_start() {	# pair_box_start X -- X's gatewayd, same config, own state
	local x=$1
	SOCK[$x]=$TOPO_TMP/$x.sock
	sed "s|^gateway: {|gateway: { state_dir = \"$TOPO_TMP/state-$x\";\n  ha: { enabled = true; uplink_address = \"$UP_VIP\"; };\n  metrics: { textfile = \"$TOPO_TMP/$x.prom\"; interval = 1; };|" \
	    examples/demo.conf >"$TOPO_TMP/$x.conf"
	moat_daemon "${PAIR_NS[$x]}" build/gatewayd -d -c "$TOPO_TMP/$x.conf" -s "${SOCK[$x]}" \
	    -a "$TOPO_TMP/$x-audit.log" >>"$TOPO_TMP/$x-gatewayd.log" 2>&1 &
	PID[$x]=$!
	TOPO_PIDS+=("${PID[$x]}")
	wait_for 30 build/gatewayd ctl -s "${SOCK[$x]}" status >/dev/null 2>&1
}
pair_ctl() { local x=$1; shift; build/gatewayd ctl -s "${SOCK[$x]}" "$@"; }
pair_role() { pair_ctl "$1" status 2>/dev/null | awk '$1 == "ha" {print $2}'; }
pair_is_role() { [ "$(pair_role "$1")" = "$2" ]; }
pair_has_vip() { ip -n "${PAIR_NS[$1]}" -4 addr show dev moat0 | grep -q "inet $GW_ADDR/"; }

pair_ctd_start() {	# pair_ctd_start X -- X's conntrackd, from the example
	local x=$1 o=${PAIR_OTHER[$1]} d=$TOPO_TMP/ctd-$1
	mkdir -p "$d"
	sed -e "s|IPv4_address 192.168.200.1\t\t# this|IPv4_address ${PAIR_PEER[$x]}\t\t# this|" \
	    -e "s|IPv4_Destination_Address 192.168.200.2|IPv4_Destination_Address ${PAIR_PEER[$o]}|" \
	    -e "s|Systemd on|Systemd off|" -e "s|Syslog on|Syslog off|" \
	    -e "s|LogFile off|LogFile $d/conntrackd.log|" \
	    -e "s|/var/lock/conntrackd.lock|$d/lock|" -e "s|/var/run/conntrackd.ctl|$d/ctl|" \
	    examples/conntrackd.conf >"$d/conntrackd.conf"
	rm -f "$d/lock" "$d/ctl"
	topo_bg "${PAIR_NS[$x]}" "conntrackd-$x" conntrackd -C "$d/conntrackd.conf"
	CTD_PID[$x]=${TOPO_PIDS[-1]}
	wait_for 10 test -S "$d/ctl"
}
pair_ctd() { local x=$1; shift; conntrackd -C "$TOPO_TMP/ctd-$x/conntrackd.conf" "$@"; }

# pair_ka_start X [ADVERT_INT [FALL]] -- X's keepalived, from the example;
# an advert interval under a second is VRRP version 3's (centiseconds).
pair_ka_start() {
	local x=$1 o=${PAIR_OTHER[$1]} d=$TOPO_TMP/ka-$1
	mkdir -p "$d"
	for s in moat-ha-notify.sh moat-ha-check.sh; do
		sed "s|/usr/local/sbin/gatewayd|$PWD/build/gatewayd|" examples/$s >"$d/$s"
		chmod 755 "$d/$s"
	done
	sed -e "s|/usr/local/lib/moat/|$d/|g" -e "s|/run/moat/gatewayd.sock|${SOCK[$x]}|g" \
	    -e "s|/run/moat/ha-role|$d/ha-role|g" -e "s|priority 150|priority ${PAIR_PRIO[$x]}|" \
	    -e "s|unicast_src_ip 192.168.200.1|unicast_src_ip ${PAIR_PEER[$x]}|" \
	    -e "s|^\t\t192.168.200.2|\t\t${PAIR_PEER[$o]}|" \
	    -e "s|/etc/conntrackd/conntrackd.conf|$TOPO_TMP/ctd-$x/conntrackd.conf|" \
	    -e "s|$UP_VIP/24 dev eth0|$UP_VIP/24 dev up0|" \
	    -e "s|advert_int 1|advert_int ${2:-1}|" -e "s|fall 2|fall ${3:-2}|" \
	    examples/keepalived.conf >"$d/keepalived.conf"
	case ${2:-1} in
	0.*) sed -i "s|^\tadvert_int .*|&\n\tversion 3|" "$d/keepalived.conf" ;;
	esac
	topo_bg "${PAIR_NS[$x]}" "keepalived-$x" keepalived -n -l -D -P -f "$d/keepalived.conf" \
	    -p "$d/k.pid" -r "$d/v.pid" -c "$d/c.pid"
	KA_PID[$x]=${TOPO_PIDS[-1]}
}

# pair_start [ADVERT_INT [FALL]] -- both gatewayds, conntrackds and keepalived;
# A master, B backup.
pair_start() {
	bash gatewayd/install-users.sh
	pair_box_start A && pair_box_start B || return 1
	pair_ctd_start A && pair_ctd_start B || return 1
	pair_ka_start A "$@"
	pair_ka_start B "$@"
	wait_for 30 pair_is_role A master && wait_for 30 pair_is_role B backup
}

# pair_links X up|down -- all of box X's links (its power cord).  The
# peer link first: a box that loses another link first goes to FAULT and
# tells the other at once (a priority 0 advert), which a dead box cannot.
pair_links() {
	local i
	for i in peer0 up0 lan0 mt-dev; do ip -n "${PAIR_NS[$1]}" link set "$i" "$2"; done
}

# pair_watch SECONDS OUT [ha-watch args] -- ha-watch.py in the guest, in
# the background, with the standard probes: a plain forwarded download
# (port 5001), one through the proxy (port 80, intercepted), DNS on the
# gateway address, new connections, and what must stay refused (the LAN
# host, the boxes' own service on every address a guest could name).
# Returns when the streams run and DNS answered.
pair_watch() {
	local secs=$1 out=$2; shift 2
	rm -f "$out" "$out.ready"
	ip netns exec "$G" python3 tests/harness/ha-watch.py --for "$secs" --out "$out" \
	    --ready "$out.ready" --stream fwd=$STREAM_ADDR:5001 --dns $GW_ADDR \
	    --connect $INET_HTTP:80 --forbid $LAN_HOST:22 --forbid $GW_ADDR:2200 \
	    --forbid 192.168.77.1:2200 --forbid 192.168.77.3:2200 \
	    --forbid 198.51.100.11:2200 --forbid 198.51.100.12:2200 "$@" \
	    >>"$TOPO_TMP/watch.log" 2>&1 &
	TOPO_PIDS+=($!)
	WATCH_PID=$!
	wait_for 30 test -s "$out.ready"
}
# pair_watch_get OUT EXPR -- a value from ha-watch's result (Python expr on r).
pair_watch_get() {
	python3 -c "import json,sys; r = json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}
