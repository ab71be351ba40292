#!/usr/bin/env bash
# gatewayd with gateway.ipv6 hands each proxy worker a second listening
# socket, on the gateway's IPv6 address (gateway.proxy.workers = 5): a
# guest with secrets reaches the proxy there and gets its key injected
# over IPv6, and a guest's IPv6 connections reach the same worker as its
# IPv4 ones (the IPv6 group's steering puts the guest's IPv4 address back
# together from its IPv6 one), so per_sandbox holds across both families.
# Five workers, so that the network's bits matter: 10.77.0.10 is worker
# 172818442 % 5 = 2, where its host part alone (10) would be worker 0.
# A reload that turns gateway.ipv6 off closes the IPv6 group.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

NET6=fd77:0:0:1
GW6=$NET6::1
BOUND6=2606:4700:20::20
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent	# worker 2
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain	# worker 3
chmod 711 "$TOPO_TMP"
in_ns "$NS_GW" sysctl -qw net.ipv6.conf.all.forwarding=1
ip -n "$NS_GW" addr add $GW6/64 dev moat0 nodad
for g in agent:a plain:b; do
	ip -n "$TOPO-${g%%:*}" addr add $NET6::${g#*:}/64 dev eth0 nodad
	ip -n "$TOPO-${g%%:*}" -6 route add default via $GW6
done
ip -n "$NS_INET" addr add $BOUND6/128 dev eth0 nodad
for ns in "$NS_GW:moat0" "$TOPO-agent:eth0" "$TOPO-plain:eth0"; do
	topo_wait_dad "${ns%:*}" "${ns#*:}" || { not_ok "link-local ready in ${ns%:*}"; exit 1; }
done
proxy_certs || not_ok "test certificates"
proxy_conf "$GW_CONF"
sed -i -e "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = true; workers = 5; upstream_ca = \"$PX_DIR/testca.crt\"; };\n  ipv6 = { network = \"$NET6::/64\"; uplink_mode = \"nat66\"; };|" \
	"$GW_CONF"
expect_match "the config has gateway.ipv6 and five workers" "workers = 5;" \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
PX_NO_DNS=1 proxy_servers || not_ok "test servers start"
topo_bg "$NS_INET" px-dns6 python3 tests/harness/cc-dns.py 203.0.113.53 \
    api.bound.test=$PX_BOUND api.bound.test=$BOUND6 other.test=$PX_OTHER --lifetime 900
topo_bg "$NS_INET" px-bound6 python3 tests/harness/proxy-server.py $BOUND6 443 \
    --cert "$PX_DIR/api.bound.test.crt" --key "$PX_DIR/api.bound.test.key" \
    --log "$PX_DIR/bound6.log" --lifetime 900
topo_wait_port "$NS_INET" $BOUND6 443 || not_ok "the IPv6 echo server starts"
gw_start; expect_eq "gatewayd starts" 0 $?
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"
wait_for 30 topo_listening "$NS_GW" $GW6 3128
expect_eq "the parent holds one IPv6 listening socket per worker" 5 \
	"$(in_ns "$NS_GW" ss -Hltn "src [$GW6]:3128" | wc -l)"
expect_eq "... and one IPv4 one" 5 "$(in_ns "$NS_GW" ss -Hltn "src $GW_ADDR:3128" | wc -l)"

out=$(in_ns "$TOPO-agent" curl -sS --max-time 8 -x "http://[$GW6]:3128" \
	--cacert "$PX_DIR/bundle.crt" https://api.bound.test/echo \
	-H "Authorization: Bearer $PX_PLACEHOLDER" 2>&1)
expect_match "over the gateway's IPv6, the bound host receives the real secret over IPv6" \
	"Authorization: Bearer $PX_SECRET" "$(cat "$PX_DIR/bound6.log" 2>/dev/null)"
expect_match "... the guest sees the placeholder" "Bearer $PX_PLACEHOLDER" "$out"
expect_fail "... never the real value" grep -q "$PX_SECRET" <<<"$out"

# Four refused connections from each guest over each family: each is
# audited by the worker that took it.
refuse4() {	# refuse4 GUEST PROXY-ADDR
	in_ns "$TOPO-$1" python3 - "$2" <<'PY'
import socket, sys
for i in range(4):
    s = socket.create_connection((sys.argv[1], 3128), timeout=10)
    s.sendall(b"CONNECT 192.168.77.2:443 HTTP/1.1\r\nHost: 192.168.77.2:443\r\n\r\n")
    s.settimeout(10)
    s.recv(4096)
    s.close()
PY
}
workers_of() {	# workers_of SANDBOX SRC -- "W:count" of its refusals from SRC
	python3 - "$GW_AUDIT" "$1" "$2" <<'PY'
import collections, json, sys
n = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("source") == "proxy" and e.get("sandbox") == sys.argv[2] and \
            e.get("event") == "refuse" and e.get("src") == sys.argv[3]:
        n[e.get("worker")] += 1
print(" ".join("%s:%d" % kv for kv in sorted(n.items())))
PY
}
for g in agent plain; do refuse4 $g $GW_ADDR; refuse4 $g $GW6; done
sleep 1
expect_eq "agent's IPv4 connections all reach worker 2" "2:4" "$(workers_of agent 10.77.0.10)"
expect_eq "agent's IPv6 connections reach the same worker" "2:4" "$(workers_of agent $NET6::a)"
expect_eq "plain's IPv4 connections all reach worker 3" "3:4" "$(workers_of plain 10.77.0.11)"
expect_eq "plain's IPv6 connections reach the same worker" "3:4" "$(workers_of plain $NET6::b)"

# --- a reload that turns gateway.ipv6 off ends the IPv6 group -------------
worker_pid() {	# worker_pid W -- the running worker W's pid, or nothing
	gw_ctl status --json 2>/dev/null | python3 -c "import json,sys
for c in json.load(sys.stdin)['children']:
    if c['name']=='proxy' and c.get('worker')==$1 and c['pid']>0: print(c['pid'])"
}
o0=$(worker_pid 0)
sed -i '/^  ipv6 = {/d' "$GW_CONF"
expect_ok "reload without gateway.ipv6 accepted" gw_ctl reload
renewed() { n0=$(worker_pid 0); [ -n "$n0" ] && [ "$n0" != "$o0" ]; }
wait_for 30 renewed
no6() { [ "$(in_ns "$NS_GW" ss -Hltn "src [$GW6]:3128" | wc -l)" = 0 ]; }
wait_for 40 no6
expect_eq "nothing listens on the gateway's IPv6 proxy port any more" 0 \
	"$(in_ns "$NS_GW" ss -Hltn "src [$GW6]:3128" | wc -l)"
expect_eq "the IPv4 group is still there, one socket per worker" 5 \
	"$(in_ns "$NS_GW" ss -Hltn "src $GW_ADDR:3128" | wc -l)"
tap_done
