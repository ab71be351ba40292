#!/usr/bin/env bash
# containment-check finds every way around the boundary that a guest can
# observe, from the targets file provision writes: the gateway host's
# other addresses (directly, through the proxy explicitly and
# transparently), IPv6 literals and the sandbox network through the
# proxy, an exception that does not apply to this guest.  Under moat's
# policy and moat-proxy: contained.  Each hole reintroduced (a weakened
# ruleset, or a deliberately naive stand-in proxy): a named breach.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

cc_topo || { not_ok "topology comes up"; exit 1; }
CONF=$TOPO_TMP/cc-adm.conf
mkdir -p "$TOPO_TMP/state"
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = true; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( { to = "192.168.77.2/32"; proto = "tcp"; ports = [ 7001 ];
                   sandboxes = [ "g2" ]; } );
  state_dir = "$TOPO_TMP/state";
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "open"; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF
# What a breach would reach: services of the gateway host on every
# address, and the exception's service on the LAN host.
topo_banner "$NS_GW" 0.0.0.0 2222 "SSH-2.0-gateway-host"
topo_http "$NS_GW" 0.0.0.0 80 "gateway-host-web"
topo_bg "$NS_LAN" exc socat TCP-LISTEN:7001,bind=$LAN_HOST,fork,reuseaddr SYSTEM:"echo exc"
topo_wait_port "$NS_LAN" $LAN_HOST 7001 || not_ok "exception service starts"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0
# The targets file as provision writes it into the guest.
cat >"$TOPO_TMP/targets" <<'T'
# moat containment-check targets
gateway 203.0.113.1:2222
gateway 192.168.77.1:2222
exception 192.168.77.2:7001
lan 192.168.77.0/24
T
SCAN=(--targets-file "$TOPO_TMP/targets")

policy() { in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1; }
proxy_up() {	# proxy_up CMD... -- the one proxy on 10.77.0.1:3128
	[ -n "${PXPID:-}" ] && { kill $PXPID; wait $PXPID 2>/dev/null; }
	ip netns exec "$NS_GW" "$@" >"$TOPO_TMP/proxy.log" 2>&1 &
	PXPID=$!; TOPO_PIDS+=($PXPID)
	topo_wait_port "$NS_GW" $GW_ADDR 3128
}
policy || { not_ok "policy applies"; tap_done; exit 1; }
proxy_up build/moat-proxy -d -c "$CONF" --user nobody || not_ok "moat-proxy starts"

cc_scan web "${SCAN[@]}"
expect_eq "moat's policy and proxy: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# $(cc_q "[(x['class'], x['target'], x['evidence'], x['what']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')]")"
out=$(ip netns exec $TOPO-web "$CC_BIN" --targets-file /nonexistent 2>&1); rc=$?
expect_eq "a named targets file that is missing is a usage error" 2 $rc
printf 'gatewy 1.2.3.4\n' >"$TOPO_TMP/bad-targets"
out=$(ip netns exec $TOPO-web "$CC_BIN" --targets-file "$TOPO_TMP/bad-targets" 2>&1)
expect_match "a bad line is named with file:line" "bad-targets:1" "$out"

# cc_mut NAME CLASS WHAT-SUBSTRING -- scan; exit 1 and a breach whose
# what names the hole.
cc_mut() {
	cc_scan web "${SCAN[@]}"
	expect_eq "mutation '$1': exit 1" 1 "$CC_RC"
	expect_eq "mutation '$1': breach named ($2: $3)" True \
		"$(cc_q "any(x['outcome']=='BREACH' and x['class']=='$2' and '$3' in x['what'] for x in rs)")"
}

# A proxy without the admission check, running as root (not held by the
# output chain): it dials the gateway host and IPv6 for the guest.  The
# policy lets only the proxy's user answer guests from the proxy's port
# (svcreply), so for this mutation that rule is taken out as well.
proxy_up python3 tests/harness/naive-proxy.py $GW_ADDR 3128 || not_ok "naive proxy starts"
h=$(in_ns "$NS_GW" nft -a list chain inet moat output | sed -n 's/.*tcp sport 3128 goto drop_svcreply # handle \([0-9]*\)/\1/p')
expect_ok "mutation: the svcreply rule for the proxy's port is removed" \
	in_ns "$NS_GW" nft delete rule inet moat output handle "${h:-0}"
cc_mut "proxy dials the gateway host (CONNECT)" gateway "gateway host, CONNECT"
cc_mut "proxy dials the gateway host (absolute URI)" gateway "gateway host, absolute URI"
cc_mut "proxy dials the gateway host (transparent)" gateway "gateway host, transparent"
cc_mut "proxy dials the sandbox network" guests "sandbox network through the proxy"
# The same naive proxy as the proxy's user: the output chain holds it.
policy
proxy_up setpriv --reuid=nobody --regid=nogroup --clear-groups \
	/usr/bin/python3 "$(topo_pub tests/harness/naive-proxy.py)" $GW_ADDR 3128 || not_ok "naive proxy starts as nobody"
cc_scan web "${SCAN[@]}"
expect_eq "naive proxy as the proxy's user: the kernel still contains it" 0 \
	"$(cc_q "sum(1 for x in rs if x['outcome']=='BREACH' and x['class']=='gateway')")"

# The exception punched for every sandbox, as before exceptions named
# the sandboxes they apply to.
proxy_up build/moat-proxy -d -c "$CONF" --user nobody
policy && in_ns "$NS_GW" nft insert rule inet moat guest_fwd ip daddr 192.168.77.2 tcp dport 7001 accept
cc_mut "exception applies to every sandbox" private "exception that does not apply"
policy
tap_done
