#!/usr/bin/env bash
# gatewayd runs the proxy as a pool of two workers sharing its port
# (gateway.proxy.workers = 2).  Every connection from one guest reaches
# the same worker (the worker its address modulo 2 names), so
# gateway.proxy.per_sandbox stays exact for the pool: of per_sandbox + 1
# connections from one guest exactly one is refused.  Killing one worker
# leaves the other's tunnels open; the parent, which keeps the worker's
# listening socket, starts a new worker on it that serves a connection
# queued while it was down.  A reload that changes a gateway setting drains
# both workers and starts two new ones; the old ones finish their tunnels.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh
. tests/harness/gw.sh

PER=8
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent	# even: worker 0
topo_guest plain 10.77.0.11 52:54:00:00:00:0b mt-plain	# odd: worker 1
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed	# even: worker 0
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect	# odd: worker 1
chmod 711 "$TOPO_TMP"
proxy_certs || not_ok "test certificates"
proxy_conf "$GW_CONF"
sed -i "s|proxy: { port = 3128; intercept = true; };|proxy: { port = 3128; intercept = true; workers = 2; per_sandbox = $PER; upstream_ca = \"$PX_DIR/testca.crt\"; };|" \
	"$GW_CONF"
expect_match "the config asks for two workers" "workers = 2;" \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)"
proxy_servers || not_ok "test servers start"
gw_start; expect_eq "gatewayd starts" 0 $?
cat "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/testca.crt" >"$PX_DIR/bundle.crt"

worker_pid() {	# worker_pid W -- the running worker W's pid, or nothing
	gw_ctl status --json 2>/dev/null | python3 -c "import json,sys
for c in json.load(sys.stdin)['children']:
    if c['name']=='proxy' and c.get('worker')==$1 and c['pid']>0: print(c['pid'])"
}
draining() {	# the pids of draining workers, sorted
	gw_ctl status --json 2>/dev/null | python3 -c "import json,sys
print(' '.join(sorted(str(d['pid']) for d in json.load(sys.stdin)['draining'])))"
}
both_up() {
	w0=$(worker_pid 0); w1=$(worker_pid 1)
	[ -n "$w0" ] && [ -n "$w1" ] && topo_listening "$NS_GW" $GW_ADDR 3128
}
wait_for 30 both_up
expect_ok "two proxy workers run, each its own process" test -n "$w0" -a -n "$w1" -a "$w0" != "$w1"
expect_eq "each worker has its own signer" 2 "$(gw_ctl status --json | python3 -c "import json,sys
print(len([c for c in json.load(sys.stdin)['children'] if c['name']=='signer' and c['pid']>0]))")"
expect_match "ctl status lists the workers" "child +proxy 1 +running pid $w1" "$(gw_ctl status)"
expect_eq "the parent holds one listening socket per worker" 2 \
	"$(in_ns "$NS_GW" ss -Hltn "src $GW_ADDR:3128" | wc -l)"

# --- one guest, one worker ------------------------------------------------
# Six connections from each guest, each refused (the LAN) and audited by
# the worker that took it.
refuse6() {
	in_ns "$TOPO-$1" python3 - "$GW_ADDR" <<'PY'
import socket, sys
for i in range(6):
    s = socket.create_connection((sys.argv[1], 3128), timeout=10)
    s.sendall(b"CONNECT 192.168.77.2:443 HTTP/1.1\r\nHost: 192.168.77.2:443\r\n\r\n")
    s.settimeout(10)
    s.recv(4096)
    s.close()
PY
}
for g in agent plain listed inspect; do refuse6 $g; done
workers_of() {	# workers_of SANDBOX -- "W:count" for its refusals in the audit log
	python3 - "$GW_AUDIT" "$1" <<'PY'
import collections, json, sys
n = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("source") == "proxy" and e.get("sandbox") == sys.argv[2] and \
            e.get("event") == "refuse":
        n[e.get("worker")] += 1
print(" ".join("%s:%d" % kv for kv in sorted(n.items())))
PY
}
six_each() {
	[ "$(workers_of agent)$(workers_of plain)$(workers_of listed)$(workers_of inspect)" = \
		"0:61:60:61:6" ]
}
wait_for 30 six_each
expect_eq "agent's 6 connections all reached worker 0" "0:6" "$(workers_of agent)"
expect_eq "plain's 6 connections all reached worker 1" "1:6" "$(workers_of plain)"
expect_eq "listed's 6 connections all reached worker 0" "0:6" "$(workers_of listed)"
expect_eq "inspect's 6 connections all reached worker 1" "1:6" "$(workers_of inspect)"

# --- per_sandbox is exact for the pool ---------------------------------------
in_ns "$TOPO-agent" python3 tests/harness/tcp-hold.py $GW_ADDR 3128 $((PER + 1)) \
	--first 'GET http://other.test/ HTTP/1.1\r\nX-Pad: ' --trickle a \
	--status "$TOPO_TMP/hold" --for 8 &
TOPO_PIDS+=($!)
wait_for 30 test -s "$TOPO_TMP/hold"
expect_eq "of per_sandbox + 1 connections from one guest, per_sandbox are held" \
	"held $PER" "$(head -1 "$TOPO_TMP/hold")"
wait_for 30 grep -q '^refused' "$TOPO_TMP/hold"
expect_match "... and exactly one is refused" '^refused 1 ' "$(sed -n 2p "$TOPO_TMP/hold")"

# --- one worker killed: the other's tunnels stay, it comes back --------------
tunnel() {	# tunnel GUEST NAME -- a kept CONNECT tunnel, status in $TOPO_TMP/NAME
	in_ns "$TOPO-$1" python3 tests/harness/tunnel.py $GW_ADDR 3128 \
		$PX_OTHER:80 other.test "$TOPO_TMP/$2" --for 120 &
	TOPO_PIDS+=($!)
}
has() { grep -qx "$2" "$TOPO_TMP/$1" 2>/dev/null; }
use() {	# use NAME N -- one request through tunnel NAME; waits for its verdict
	touch "$TOPO_TMP/$1.go-$2"
	wait_for 30 grep -Eqx "(ok|closed) $2" "$TOPO_TMP/$1"
}
tunnel agent ta; tunnel plain tp
wait_for 30 has ta 200; wait_for 30 has tp 200
use ta 1; use tp 1
expect_ok "a tunnel through each worker carries a request" has tp "ok 1"
kill -9 "$w1"
use ta 2
expect_ok "worker 1 killed: worker 0's tunnel still carries requests" has ta "ok 2"
use tp 2
expect_ok "worker 1's own tunnel is gone with it" has tp "closed 2"
# A connection made while worker 1 is down waits in its socket, which the
# parent keeps, for the worker started in its place.  The restart comes
# after a backoff (1 s, then 2 s, ...): if it won the race, kill it again.
queued=""
for try in 1 2 3; do
	down() { [ -z "$(worker_pid 1)" ]; }
	wait_for 30 down
	tq=tq$try
	tunnel plain $tq
	wait_for 30 has $tq connected
	if [ -z "$(worker_pid 1)" ]; then queued=yes; break; fi
	wait_for 30 has $tq 200
	touch "$TOPO_TMP/$tq.stop"
	kill -9 "$(worker_pid 1)" 2>/dev/null
done
expect_eq "a connection was made while worker 1 was down" yes "$queued"
wait_for 60 has $tq 200
expect_ok "the new worker 1 serves the connection queued while it was down" has $tq 200
w1b=$(worker_pid 1)
expect_ok "worker 1 is back with a new pid" test -n "$w1b" -a "$w1b" != "$w1"
expect_eq "worker 0 was not touched" "$w0" "$(worker_pid 0)"
use $tq 1
expect_ok "the new worker 1 carries requests" has $tq "ok 1"
expect_match "the restart is audited" '"event":"child-restart","child":"proxy"' "$(cat "$GW_AUDIT")"
touch "$TOPO_TMP/ta.stop" "$TOPO_TMP/$tq.stop"

# --- reload: both workers drain, two new ones take the sockets ---------------
# (A gateway setting changes: a reload that changed only sandboxes would
# keep the workers, 29-gatewayd-proxy-reconfigure.)
tunnel agent ra; tunnel plain rp
wait_for 30 has ra 200; wait_for 30 has rp 200
# ... and an intercepted one, where the proxy reads the requests and puts
# the secret in: it is cut at once, since what it works by may be other.
in_ns "$TOPO-agent" python3 tests/harness/tunnel.py $GW_ADDR 3128 \
	api.bound.test:443 api.bound.test "$TOPO_TMP/ri" --for 120 \
	--tls "$PX_DIR/bundle.crt" &
TOPO_PIDS+=($!)
wait_for 30 has ri 200
use ri 1
expect_ok "an intercepted tunnel answers before the reload" has ri "ok 1"
o0=$(worker_pid 0); o1=$(worker_pid 1)
sed -i "s|per_sandbox = $PER;|per_sandbox = $((PER + 1));|" "$GW_CONF"
expect_ok "reload accepted" gw_ctl reload
new_pair() {
	n0=$(worker_pid 0); n1=$(worker_pid 1)
	[ -n "$n0" ] && [ -n "$n1" ] && [ "$n0" != "$o0" ] && [ "$n1" != "$o1" ]
}
wait_for 30 new_pair
expect_ok "a reload starts two new workers" new_pair
expect_eq "both old workers drain" "$(printf '%s\n' "$o0" "$o1" | sort | tr '\n' ' ' | sed 's/ $//')" "$(draining)"
use ra 1; use rp 1
expect_ok "a draining worker 0 still carries its tunnel" has ra "ok 1"
expect_ok "a draining worker 1 still carries its tunnel" has rp "ok 1"
use ri 2
expect_ok "the intercepted tunnel was cut by the reload" has ri "closed 2"
expect_match "... audited with its reason" \
	'"event":"cut","sandbox":"agent".*"host":"api.bound.test".*"reason":"secrets or settings changed"' \
	"$(grep '"event":"cut"' "$GW_AUDIT")"
expect_eq "a new connection is served by the new workers" 200 \
	"$(px_curl plain https://other.test/echo -o /dev/null -w '%{http_code}')"
touch "$TOPO_TMP/ra.stop" "$TOPO_TMP/rp.stop"
gone() { [ -z "$(draining)" ]; }
wait_for 40 gone
expect_eq "the old workers exit once their tunnels close" "" "$(draining)"
expect_ok "they are gone" test ! -e /proc/"$o0" -a ! -e /proc/"$o1"
tap_done
