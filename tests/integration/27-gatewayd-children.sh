#!/usr/bin/env bash
# gatewayd with its real children: dnsd and the proxy run as their own
# users without capabilities, dnsd's answers open web's allowlist through
# the parent, and each child comes back after kill -9 while the policy
# stays closed.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py --addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"
cp examples/demo.conf "$GW_CONF"
# Interception off: the tcp 80 probes here test the forward chain (the
# sandboxes' sets), which interception would hand to the proxy instead.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"

gw_start; expect_eq "gatewayd starts with dnsd and the proxy" 0 $?
children_up() { [ -n "$(gw_child_pid dnsd)" ] && [ -n "$(gw_child_pid proxy)" ]; }
wait_for 30 children_up
# dropped PID USER -- PID finished dropping privileges
dropped() {
	grep -Eq 'CapEff:\s+0000000000000000' /proc/$1/status && grep -Eq 'Seccomp:\s+2' /proc/$1/status &&
		[ "$(ps -o user= -p $1)" = "$2" ]
}
wait_for 30 gw_proxy_new ""	# every proxy worker
for c in dnsd proxy control; do
	pids=$(gw_child_pid $c)
	if [ -z "$pids" ]; then not_ok "$c is running" "$(gw_ctl status; tail -5 "$GW_LOG")"; continue; fi
	want=moat-dns; [ $c = proxy ] && want=moat-proxy; [ $c = control ] && want=moat-ctl
	for pid in $pids; do	# the proxy is a pool of workers
	wait_for 30 dropped "$pid" $want	# let it finish dropping privileges
	st=$(cat /proc/$pid/status)
	expect_match "$c holds no capabilities" 'CapEff:\s+0000000000000000' "$st"
	expect_match "$c has no_new_privs" 'NoNewPrivs:\s+1' "$st"
	expect_match "$c runs under seccomp" 'Seccomp:\s+2' "$st"
	expect_eq "$c runs as $want" $want "$(ps -o user= -p $pid)"
	done
done
# The control process parses what clients send: it holds the listening
# socket, its IPC end and its event loop's epoll, and opens nothing.
pid=$(gw_child_pid control)
expect_eq "the control process holds stdio, the control socket, its IPC end and its epoll" \
	"0 1 2 3 4 5:anon_inode:[eventpoll]" \
	"$(cd /proc/$pid/fd && for f in $(ls | sort -n); do
		case $f in 5) echo "$f:$(readlink $f)" ;; *) echo "$f" ;; esac
	done | tr '\n' ' ' | sed 's/ $//')"
# kill -9 it: the parent, which keeps the listening socket, starts another
# and the next request is answered.
kill -9 "$pid"
ctl_back() { pid2=$(gw_child_pid control); [ -n "$pid2" ] && [ "$pid2" != "$pid" ]; }
wait_for 30 ctl_back
if [ -n "$pid2" ] && [ "$pid2" != "$pid" ]; then ok "a killed control process is restarted (pid $pid -> $pid2)"
else not_ok "a killed control process is restarted" "$(tail -5 "$GW_LOG")"; fi
expect_match "the new control process answers" '^sandboxes' "$(gw_ctl status)"

# The signer holds the CA key and nothing else; the proxy, which talks
# to guests, never holds it.  The key's private scalar, searched for in
# each process's memory, proves it (the signer's copy is the control).
signers=$(gw_ctl status --json | python3 -c "import json,sys
print(*[c['pid'] for c in json.load(sys.stdin)['children'] if c['name']=='signer' and c['pid'] > 0])")
expect_eq "one signer per proxy worker" "$(gw_proxy_pids | wc -w)" "$(echo $signers | wc -w)"
for pid in $signers; do
	st=$(cat /proc/$pid/status)
	expect_eq "the signer runs as moat-ca" moat-ca "$(ps -o user= -p $pid)"
	expect_match "the signer holds no capabilities" 'CapEff:\s+0000000000000000' "$st"
	expect_match "the signer has no_new_privs" 'NoNewPrivs:\s+1' "$st"
	expect_match "the signer runs under seccomp" 'Seccomp:\s+2' "$st"
	expect_eq "the signer has no socket but its one to the proxy" 1 \
		"$(ls -l /proc/$pid/fd | grep -c 'socket:')"
	sdir=$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>/dev/null | awk -F'"' '/^  state_dir/ {print $2}')
	key=$(openssl ec -in "$sdir/proxy-ca.key" \
		-noout -text 2>/dev/null | sed -n '/^priv:/,/^pub:/p' | grep -v '^p' | tr -d ' :\n' | tail -c 64)
	expect_match "the CA key's private scalar is read" '^[0-9a-f]{64}$' "$key"
	expect_eq "the signer's memory holds the CA key (control)" found \
		"$(python3 tests/harness/memscan.py $pid "$key")"
	for p in $(gw_proxy_pids); do
		expect_eq "the proxy worker's memory never holds the CA key" absent \
			"$(python3 tests/harness/memscan.py "$p" "$key")"
	done
done
[ -n "$signers" ] || not_ok "the signer is running" "$(gw_ctl status)"

dig() { in_ns "$1" dig +time=2 +tries=1 @$GW_ADDR "${@:2}"; }
expect_match "web resolves an allowed name through dnsd" "^203\.0\.113\.10$" \
	"$(dig $TOPO-web +short a.github.test A)"
expect_match "the answer opened web's set through the parent" '203\.0\.113\.10 timeout' \
	"$(in_ns "$NS_GW" nft list set inet moat allow_web)"
expect_eq "web reaches the address it resolved" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"
expect_match "web is refused a name not on its list" "status: REFUSED" \
	"$(dig $TOPO-web denied.test A)"
expect_match "locked is refused every name" "status: REFUSED" "$(dig $TOPO-locked pypi.org A)"

for c in dnsd proxy; do
	pid=$(gw_child_pid $c | head -1)
	[ -n "$pid" ] || { not_ok "$c restart" "not running"; continue; }
	kill -9 "$pid"
	expect_eq "LAN refused while $c is down" unreachable "$(tcp_probe $TOPO-dev $LAN_HOST 22)"
	restarted() {	# every proxy worker runs again, the killed one replaced
		new=$(gw_child_pid $c | head -1)
		[ $c = dnsd ] && [ -n "$new" ] && [ "$new" != "$pid" ] ||
		    { [ $c = proxy ] && gw_proxy_new "$pid"; }
	}
	wait_for 30 restarted
	if [ -n "$new" ] && [ "$new" != "$pid" ]; then ok "$c restarted after kill -9"
	else not_ok "$c restarted after kill -9" "$(gw_ctl status)"; fi
done
answers() { dig $TOPO-web +short "$1" A | grep -q '^203\.0\.113\.10$'; }
wait_for 30 answers pypi.org
expect_match "dnsd answers again after its restart" "^203\.0\.113\.10$" \
	"$(dig $TOPO-web +short pypi.org A)"
expect_match "restarts are audited" '"event":"child-restart","child":"proxy"' "$(cat "$GW_AUDIT")"
expect_match "dnsd's refusals reach the audit log" '"source":"dnsd"' "$(cat "$GW_AUDIT")"
# Reload: dnsd and the proxy workers take the new config in place,
# quietly.
expect_match "web is refused open.test before the reload" "status: REFUSED" "$(dig $TOPO-web open.test A)"
old_dnsd=$(gw_child_pid dnsd); old_proxy=$(gw_proxy_pids)
taken() { grep -c 'dnsd took the new configuration in place' "$GW_LOG"; }
reconfigured() { [ "$(taken)" -gt "$1" ]; }
n=$(taken)
sed -i 's|allow = \[ "pypi.org", "\*.github.test" \]|allow = [ "pypi.org", "*.github.test", "open.test" ]|' "$GW_CONF"
expect_ok "reload accepted" gw_ctl reload
wait_for 30 reconfigured "$n"
expect_ok "dnsd took the new config in place" reconfigured "$n"
expect_eq "dnsd keeps its pid" "$old_dnsd" "$(gw_child_pid dnsd)"
expect_eq "only a sandbox changed: the same proxy workers go on" "$old_proxy" "$(gw_proxy_pids)"
expect_eq "... each told the new sandboxes in place" \
	"$(wc -w <<<"$old_proxy")" \
	"$(grep -c "proxy [0-9]*: only sandboxes changed, reconfigured in place" "$GW_LOG")"
wait_for 30 answers open.test
expect_match "dnsd follows the new allow list" "^203\.0\.113\.10$" "$(dig $TOPO-web +short open.test A)"
expect_eq "reload restarts are not reported as crashes" 1 \
	"$(grep -c '"event":"child-restart","child":"dnsd"' "$GW_AUDIT")"
expect_eq "the proxy still listens on the gateway" "LISTEN" \
	"$(in_ns "$NS_GW" ss -Hltn "src $GW_ADDR:3128" | awk '{print $1}' | head -1)"

# DNS rate from moat.conf: "locked" gets 5 queries a second (burst 5);
# dnsd drops the rest and gatewayd counts them per sandbox.
sed -i 's|egress = "none"; }|egress = "none"; dns_rate = 5; dns_burst = 5; }|' "$GW_CONF"
expect_match "the sandbox's dns_rate is in the config" 'dns_rate = 5;' "$(in_ns "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>/dev/null)"
n=$(taken)
expect_ok "reload with a per-sandbox DNS rate accepted" gw_ctl reload
wait_for 30 reconfigured "$n"
topo_wait_port "$NS_GW" $GW_ADDR 53
flood() {	# flood GUEST N -- N queries at once; prints how many were answered
	in_ns "$1" python3 - "$GW_ADDR" "$2" <<'PY'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = int(sys.argv[2])
for i in range(n):
    q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + b"\x05flood\x04test\x00\x00\x01\x00\x01"
    s.sendto(q, (sys.argv[1], 53))
s.settimeout(3); got = 0
try:
    while True: s.recv(512); got += 1
except socket.timeout: pass
print(got)
PY
}
got=$(flood $TOPO-locked 60)
if [ "${got:-0}" -ge 1 ] && [ "${got:-0}" -le 15 ]; then ok "locked: a burst of 60 queries gets about its burst of 5 answers ($got)"
else not_ok "locked: a burst of 60 queries gets about its burst of 5 answers" "got $got"; fi
expect_eq "dev (gateway default, 500/s) gets every answer" 60 "$(flood $TOPO-dev 60)"
for i in $(seq 100); do	# dnsd reports once a second
	c=$(gw_ctl counters --json)
	n=$(python3 -c 'import json,sys; print({d["sandbox"]: d["queries"] for d in json.loads(sys.argv[1])["dns_dropped"]}.get("locked", 0))' "$c")
	[ "$n" -ge $((60 - got)) ] && break; sleep 0.2
done
expect_eq "ctl counters --json counts locked's dropped queries" $((60 - got)) "$n"
expect_match "ctl counters shows dev dropped none" 'dns +dev +0 queries dropped' "$(gw_ctl counters)"
expect_match "ctl counters shows locked's drops" "dns +locked +$((60 - got)) queries dropped" "$(gw_ctl counters)"
# --- kill -9 of gatewayd itself: every child exits, the policy stays ----
# Started afresh, so the nflog reader has nothing queued to report: it may
# not rely on a failed write to notice that its parent is gone.
ns_moat_pids() {	# processes in the gateway namespace run by moat's users
	local pid
	for pid in $(ip netns pids "$NS_GW"); do
		case $(ps -o user= -p "$pid" 2>/dev/null) in moat-*) echo "$pid";; esac
	done
}
wait_gone() {	# wait_gone PID... -- up to 30 s; prints the pids still alive
	local deadline=$((SECONDS + 30)) alive pid
	while :; do
		alive=""
		for pid in "$@"; do [ -e /proc/$pid ] && alive="$alive $pid"; done
		[ -z "$alive" ] || [ $SECONDS -ge $deadline ] && break
		sleep 0.1
	done
	echo ${alive# }
}
children() {
	gw_ctl status --json | python3 -c "import json,sys
print(' '.join(str(c['pid']) for c in json.load(sys.stdin)['children'] if c['pid'] > 0))"
}
# Quiet guests too: a packet logged after the kill would make the reader
# write to its dead parent and die of that, hiding a missing death signal.
for g in web dev locked; do in_ns $TOPO-$g ip link set eth0 down; done
kids=$(children)
kill -TERM "$GW_PID"
expect_eq "a clean stop of gatewayd leaves no child" "" "$(wait_gone $GW_PID $kids)"
gw_start; expect_eq "gatewayd starts again" 0 $?
deadline=$((SECONDS + 30))
nw=$(gw_ctl status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['proxy_workers'])")
while [ "$(children | wc -w)" -lt $((3 + 2 * nw)) ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
kids=$(children)
expect_eq "nflog, dnsd, control, and $nw proxy workers with a signer each" $((3 + 2 * nw)) "$(echo $kids | wc -w)"
kill -9 "$GW_PID"
expect_eq "after kill -9 of gatewayd, no child survives" "" "$(wait_gone $kids)"
expect_eq "no process of moat's users is left in the namespace" "" "$(ns_moat_pids)"
expect_ok "the policy is still in the kernel" in_ns "$NS_GW" nft list table inet moat
in_ns $TOPO-dev ip link set eth0 up
in_ns $TOPO-dev ip route replace default via $GW_ADDR 2>/dev/null
expect_eq "LAN still refused with no gatewayd at all" unreachable "$(tcp_probe $TOPO-dev $LAN_HOST 22)"
gw_start; expect_eq "a new gatewayd starts" 0 $?
deadline=$((SECONDS + 30))
while [ "$(ns_moat_pids | wc -l)" -lt 4 ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
expect_eq "...with exactly one nflog reader" 1 \
	"$(for p in $(ns_moat_pids); do ps -o user= -p $p; done | grep -c '^moat-log$')"
tap_done
