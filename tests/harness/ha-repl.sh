# ha-repl.sh -- two gateway boxes replicating to each other
# (gateway.ha.peer), without keepalived: roles are given by hand
# (`ctl X ha ...`) and the gateway address is moved by hand (sourced,
# after tap.sh, topology.sh, gw.sh and dns-lib.sh).
#
#   guest ns "web": br0 10.77.0.10 -- ga --> box A mt-web (moat0)
#                                  -- gb --> box B mt-web (moat0)
#   A up0 203.0.113.1 <-> inet eth0     B up0 198.51.100.1 <-> inet eth1
#   A peer0 192.168.200.1 <-- replication, TLS --> B peer0 192.168.200.2
#
# repl_up builds it, with a banner on $INET_HTTP:2222 and a sink on
# :2223, makes each box's key (and "wrong" and "h1"'s) and writes both
# boxes' configurations: examples/demo.conf with gateway.ha and
# registration on the peer link, web's allow_ports tcp/2222 and tcp/2223
# and a 64K egress budget, host h1.  box_start X NS starts X's gatewayd
# (moat_daemon: its own state_dir, socket and audit file).

NS_A=$NS_GW
NS_B=$TOPO-gwb
G=$TOPO-web
PKI=$TOPO_TMP/pki
declare -A PID SOCK

mkcert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$1" -days 2 -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
pin() {
	echo "sha256:$(openssl x509 -in "$PKI/$1.crt" -pubkey -noout |
		openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)"
}
box_conf() {	# box_conf X LISTEN PEER PEERKEY -- $TOPO_TMP/X/moat.conf
	local x=${1,,} reg=${2%:*}:7443
	mkdir -p "$TOPO_TMP/$1/sandboxes.d"
	{ sed -e "s|^gateway: {|gateway: { state_dir = \"$TOPO_TMP/state-$1\";\n  ha: { enabled = true; listen = \"$2\"; peer = \"$3\";\n    peer_key = \"$4\"; cert = \"$PKI/$x.crt\"; key = \"$PKI/$x.key\"; };\n  registration: { listen = \"$reg\"; cert = \"$PKI/$x.crt\"; key = \"$PKI/$x.key\"; };|" \
	    -e 's|allow = \[ "pypi.org", "\*.github.test" \];|allow = [ "pypi.org", "*.github.test" ]; allow_ports = [ "tcp/2222", "tcp/2223" ];\n    egress_bytes_per_day = "64K";|' \
	    examples/demo.conf
	  echo "hosts = ( { name = \"h1\"; key = \"$(pin h1)\"; pool = \"10.77.0.64/26\"; trunk = \"tr-h1\"; } );"
	} >"$TOPO_TMP/$1/moat.conf"
}
box_start() {	# box_start X NS
	SOCK[$1]=$TOPO_TMP/$1.sock
	moat_daemon "$2" build/gatewayd -d -c "$TOPO_TMP/$1/moat.conf" -s "${SOCK[$1]}" \
	    -a "$TOPO_TMP/$1-audit.log" >>"$TOPO_TMP/$1-gatewayd.log" 2>&1 &
	PID[$1]=$!
	TOPO_PIDS+=("${PID[$1]}")
	wait_for 30 build/gatewayd ctl -s "${SOCK[$1]}" status >/dev/null 2>&1
}
ctl() { local x=$1; shift; build/gatewayd ctl -s "${SOCK[$x]}" "$@"; }
peer_line() {	# peer_line KEYNAME LINE -- say LINE to B as KEYNAME, print the answer
	(printf '%s\n' "$2"; sleep 2) | in_ns "$NS_A" timeout 8 openssl s_client -quiet \
		-connect 192.168.200.2:7444 -cert "$PKI/$1.crt" -key "$PKI/$1.key" 2>/dev/null
}
has_elem() {	# has_elem NS ADDR -- ADDR is in allow_web
	in_ns "$1" nft list set inet moat allow_web 2>/dev/null | grep -q "$2"
}

repl_up() {
	topo_up || { not_ok "topology"; exit 1; }
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
	topo_ns "$G"
	topo_link "$NS_A" mt-web "$G" ga
	topo_link "$NS_B" mt-web "$G" gb
	ip -n "$G" link add br0 type bridge
	ip -n "$G" link set br0 address 52:54:00:00:00:0a
	ip -n "$G" link set ga master br0
	ip -n "$G" link set gb master br0
	ip -n "$G" link set br0 up
	ip -n "$G" addr add 10.77.0.10/24 dev br0
	ip -n "$G" route add default via $GW_ADDR
	for ns in "$NS_A" "$NS_B"; do
		ip -n "$ns" link set mt-web master moat0
		ip -n "$ns" link set mt-web type bridge_slave isolated on
	done
	topo_services || { not_ok "services"; exit 1; }
	dns_upstream 203.0.113.53 || { not_ok "dns upstream"; exit 1; }
	# pypi.org is 203.0.113.10 upstream: a plain service there, not 80/443.
	topo_banner "$NS_INET" $INET_HTTP 2222 "far-end" || { not_ok "banner"; exit 1; }
	# And a sink, to spend the guest's egress budget into.
	topo_bg "$NS_INET" sink socat -u TCP-LISTEN:2223,bind=$INET_HTTP,fork,reuseaddr OPEN:/dev/null


	mkdir -p "$PKI"
	for k in a b wrong h1; do mkcert $k; done
	bash gatewayd/install-users.sh
	box_conf A 192.168.200.1:7444 192.168.200.2:7444 "$(pin b)"
	box_conf B 192.168.200.2:7444 192.168.200.1:7444 "$(pin a)"
}
