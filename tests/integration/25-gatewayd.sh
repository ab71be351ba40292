#!/usr/bin/env bash
# gatewayd: applies the policy, supervises its children, fails closed,
# reloads atomically, audits refusals, guards its control socket.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh
MEMBER_GATEWAYD=$(topo_pub build/gatewayd)	# run as a member or nobody: a copy anyone can run

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest locked 10.77.0.12 52:54:00:00:00:0c mt-locked
topo_services
topo_bg "$NS_INET" echo socat TCP-LISTEN:7000,bind=$INET_HTTP,fork,reuseaddr PIPE
topo_wait_port "$NS_INET" $INET_HTTP 7000
cp examples/demo.conf "$GW_CONF"
# Interception off: the tcp 80 probes here test the forward chain (the
# sandboxes' sets), which interception would hand to the proxy instead.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"

chmod 711 "$TOPO_TMP"	# other users reach the socket; its own mode decides
gw_start -X; expect_eq "gatewayd starts and answers its control socket" 0 $?
expect_match "policy tables are in the kernel" "table inet moat" \
	"$(in_ns "$NS_GW" nft list tables)"
st=$(stat -c '%a %G' "$GW_SOCK")
expect_eq "control socket is 0660 group moat" "660 moat" "$st"
expect_ok "ctl status --json is JSON" \
	python3 -c "import json,sys; json.loads(sys.argv[1])" "$(gw_ctl status --json)"
# Refusals: gatewayd lifted the kernel's per-host ICMP limit of its
# namespace (a fresh one starts at the kernel's default) and says so.
expect_eq "gatewayd lifts the per-host ICMP limit" 0 \
	"$(in_ns "$NS_GW" sysctl -n net.ipv4.icmp_ratelimit)"
expect_match "ctl status: refusals are immediate" '^refusals +immediate' "$(gw_ctl status)"
expect_eq "ctl status --json: refusals_fast" True \
	"$(gw_ctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["refusals_fast"])')"
in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=1000
expect_match "ctl status names a limit put back" \
	'^refusals +RATE-LIMITED: net.ipv4.icmp_ratelimit is 1000 ms' "$(gw_ctl status)"
expect_ok "reload" gw_ctl reload
expect_match "a reload lifts it again" '^refusals +immediate' "$(gw_ctl status)"
expect_ok "ctl counters --json is JSON with numbers" python3 -c '
import json, sys
c = json.loads(sys.argv[1])["counters"]
assert len(c) >= 16 and all(isinstance(x["packets"], int) and isinstance(x["bytes"], int) for x in c), c' \
	"$(gw_ctl counters --json)"
expect_ok "ctl sandboxes --json is JSON" \
	python3 -c "import json,sys; json.loads(sys.argv[1])" "$(gw_ctl sandboxes --json)"
expect_match "ctl sandboxes lists modes" 'dev +10\.77\.0\.11 +mt-dev +open' "$(gw_ctl sandboxes)"

# Policy works: open sandbox reaches the internet, not the LAN.
expect_eq "dev reaches the internet" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
: >"$GW_AUDIT.mark"
before=$(wc -l <"$GW_AUDIT")
expect_eq "dev is refused the LAN with admin-prohibited" unreachable \
	"$(tcp_probe $TOPO-dev $LAN_HOST 22)"
# One datagram is one refused packet (TCP may retry a SYN): one line.
in_ns $TOPO-dev python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.168.77.2", 5999))'
wait_for 30 grep -q '"port":5999' "$GW_AUDIT"
new=$(tail -n +$((before + 1)) "$GW_AUDIT" | grep '"event":"refusal"' | grep '"port":5999')
expect_eq "exactly one audit line for one refused packet" 1 "$(printf '%s\n' "$new" | grep -c refusal)"
expect_match "audit line names sandbox, destination, port, reason" \
	'"source":"nflog".*"reason":"private","sandbox":"dev","src":"10.77.0.11","dst":"192.168.77.2","proto":"udp","port":5999' "$new"
expect_match "the TCP refusal is audited too" \
	'"reason":"private","sandbox":"dev","src":"10.77.0.11","dst":"192.168.77.2","proto":"tcp","port":22' "$(cat "$GW_AUDIT")"

# A flood of refusals cannot flood the audit log: per source it is rate
# limited and what was left out is reported as a count.  The count is per
# ingress, whatever the reason: dev's own IPv6 (router solicitations, MLD,
# refused as "ipv6") would add to it, so dev has none during the count.
in_ns $TOPO-dev sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
before=$(wc -l <"$GW_AUDIT"); t0=$EPOCHSECONDS
in_ns $TOPO-dev python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in range(1000, 3000): s.sendto(b"x", ("192.168.77.2", p))'
flood_counted() {	# the summary comes within a second or two (60 s under load)
	lines=$(tail -n +$((before + 1)) "$GW_AUDIT" | grep -c '"event":"refusal","reason":"private","sandbox":"dev"')
	sup=$(tail -n +$((before + 1)) "$GW_AUDIT" | grep '"event":"refusals-suppressed"' |
		sed -n 's/.*"sandbox":"dev".*"count":\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
	[ $((lines + sup)) -ge 2000 ]
}
wait_for 60 flood_counted
# 50 lines a second after a burst of 200: a loaded machine that takes
# longer to read the flood may log more, never more than that.
max=$((200 + 50 * (EPOCHSECONDS - t0 + 1))); [ $max -lt 400 ] && max=400
if [ "$lines" -ge 150 ] && [ "$lines" -le $max ]; then ok "2000 refused packets give a bounded number of audit lines ($lines)"
else not_ok "2000 refused packets give a bounded number of audit lines" "got $lines"; fi
expect_eq "the rest is reported as suppressed, exactly" 2000 "$((lines + ${sup:-0}))"

# The refusal reader is sandboxed: own user, no capabilities, seccomp.
pid=$(gw_child_pid nflog)
expect_match "nflog child has no capabilities" 'CapEff:\s+0000000000000000' "$(cat /proc/$pid/status)"
expect_match "nflog child runs as moat-log" "^moat-log$" "$(ps -o user= -p $pid)"
expect_match "nflog child has no_new_privs and seccomp" 'NoNewPrivs:\s+1' "$(cat /proc/$pid/status)"
expect_match "nflog child is in seccomp filter mode" 'Seccomp:\s+2' "$(cat /proc/$pid/status)"
expect_eq "nflog child holds only stdio, its nflog socket and its IPC end" "0 1 2 3 4" \
	"$(ls /proc/$pid/fd | sort -n | tr '\n' ' ' | sed 's/ $//')"

# kill -9 a child: it comes back; while it is down the LAN stays closed.
kill -9 "$pid"
expect_eq "LAN still refused while the child is down" unreachable \
	"$(tcp_probe $TOPO-web $LAN_HOST 22)"
nflog_restarted() { pid2=$(gw_child_pid nflog); [ -n "$pid2" ] && [ "$pid2" != "$pid" ]; }
wait_for 30 nflog_restarted
wait_for 30 grep -q '"event":"child-restart","child":"nflog"' "$GW_AUDIT"
if [ -n "$pid2" ] && [ "$pid2" != "$pid" ]; then ok "killed child restarted (pid $pid -> $pid2)"
else not_ok "killed child restarted" "$(gw_ctl status)"; fi
expect_match "child restart is audited" '"event":"child-restart","child":"nflog","status":"killed by signal 9"' "$(cat "$GW_AUDIT")"

# Control socket: not root, not in group moat -> refused.
out=$(runuser -u nobody -- "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" status 2>&1); rc=$?
expect_eq "user outside group moat cannot connect (exit 3)" 3 $rc
expect_match "a non-member is told they are not in group moat" "not in group moat" "$out"
expect_fail "a non-member is not asked whether gatewayd runs" grep -q "is gatewayd running" <<<"$out"
chmod 0666 "$GW_SOCK"	# even if the file mode is loosened, SO_PEERCRED holds
out=$(runuser -u nobody -- "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" status 2>&1); rc=$?
chmod 0660 "$GW_SOCK"
expect_eq "SO_PEERCRED check refuses a non-member (exit 1)" 1 $rc
expect_match "refusal says why" "permission denied: you are not in group moat" "$out"
useradd -M -N -G moat moattest$$ 2>/dev/null
out=$(runuser -u moattest$$ -- "$MEMBER_GATEWAYD" ctl -s "$GW_SOCK" sandboxes 2>&1); rc=$?
userdel moattest$$ 2>/dev/null
expect_eq "member of group moat may use ctl" 0 $rc

# Reload with a broken config: refused with file:line, old policy stays.
sed -i 's|egress = "open"; owner = "bob";|egress = "opne"; owner = "bob";|' "$GW_CONF"
out=$(gw_ctl reload 2>"$TOPO_TMP/reload.err"); rc=$?
err=$(cat "$TOPO_TMP/reload.err")
expect_eq "broken reload: ctl exits 1" 1 $rc
expect_match "broken reload: caller sees file:line on stderr" "^$GW_CONF:19: sandbox \"dev\": egress: expected" "$err"
expect_match "broken reload: ... and that the previous policy stays, on stderr" \
	"^configuration not reloaded; the previous policy stays in force$" "$err"
expect_eq "broken reload: nothing on stdout (gatewayd(8): errors on stderr)" "" "$out"
expect_eq "broken reload: old policy still lets dev out" connected "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_eq "broken reload: old policy still refuses the LAN" unreachable "$(tcp_probe $TOPO-dev $LAN_HOST 22)"
expect_match "broken reload audited" '"event":"reload","result":"refused"' "$(cat "$GW_AUDIT")"
expect_match "broken reload audited with the error count as a number" \
	'"event":"reload","result":"refused","errors":1,' "$(cat "$GW_AUDIT")"

# Reload that turns dev from open to none cuts its established flow.
sed -i 's|egress = "opne"; owner = "bob";|egress = "open"; owner = "bob";|' "$GW_CONF"
go=$TOPO_TMP/go; res=$TOPO_TMP/flow
ip netns exec $TOPO-dev python3 - "$go" "$res" <<'PY' &
import os, socket, sys, time
go, res = sys.argv[1], sys.argv[2]
out = open(res, "w", buffering=1)
s = socket.create_connection(("203.0.113.10", 7000), timeout=3)
s.sendall(b"one\n"); out.write("before:%s\n" % s.recv(100).decode().strip())
while not os.path.exists(go): time.sleep(0.05)
try:
    s.settimeout(3); s.sendall(b"two\n"); d = s.recv(100)
    out.write("after:%s\n" % (d.decode().strip() or "closed"))
except Exception as e:
    out.write("after:error %s\n" % type(e).__name__)
PY
flow=$!
wait_for 30 grep -qs before: "$res"
expect_match "long-lived flow established" "before:one" "$(cat "$res")"
sed -i 's|egress = "open"; owner = "bob";|egress = "none"; owner = "bob";|' "$GW_CONF"
expect_ok "reload to egress none accepted" gw_ctl reload
touch "$go"; wait $flow
expect_match "established flow is cut after the reload" "after:error" "$(cat "$res")"
expect_eq "dev now refused the internet" unreachable "$(tcp_probe $TOPO-dev $INET_HTTP 80)"
expect_match "reload audited with flows cut" '"event":"reload","result":"ok","flows_cut":[1-9]' "$(cat "$GW_AUDIT")"

# ctl log -f follows the audit log as it grows.
gw_ctl log -f >"$TOPO_TMP/follow" 2>&1 &
follower=$!
wait_for 30 test -s "$TOPO_TMP/follow"	# the tail is written, then it follows
in_ns $TOPO-web python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.168.77.2", 6111))'
wait_for 30 grep -q '"port":6111' "$TOPO_TMP/follow"
kill $follower 2>/dev/null; wait $follower 2>/dev/null
expect_match "ctl log -f shows a new refusal as it happens" '"sandbox":"web".*"port":6111' "$(cat "$TOPO_TMP/follow")"

# SIGUSR1 reopens the audit log, for rotation.
mv "$GW_AUDIT" "$GW_AUDIT.1"
kill -USR1 "$GW_PID"; wait_for 30 test -e "$GW_AUDIT"	# reopened
n1=$(wc -l <"$GW_AUDIT.1")
gw_ctl status >/dev/null
expect_ok "after SIGUSR1 a new audit file is written" grep -q '"verb":"status"' "$GW_AUDIT"
expect_eq "the rotated file gets nothing more" "$n1" "$(wc -l <"$GW_AUDIT.1")"

# kill -9 the parent: the policy stays in the kernel.
kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
expect_eq "after gatewayd is killed the LAN is still refused" unreachable \
	"$(tcp_probe $TOPO-web $LAN_HOST 22)"
expect_match "tables still present" "table inet moat" "$(in_ns "$NS_GW" nft list tables)"

# Clean stop: SIGTERM exits 0, removes its socket, leaves the policy.
rm -f "$GW_SOCK"
gw_start -X >/dev/null
kill -TERM "$GW_PID"; wait "$GW_PID"; rc=$?
expect_eq "SIGTERM: exit 0" 0 $rc
expect_eq "SIGTERM: control socket removed" no "$([ -e "$GW_SOCK" ] && echo yes || echo no)"
expect_match "SIGTERM: policy left in place" "table inet moat" "$(in_ns "$NS_GW" nft list tables)"

# Syslog: gatewayd runs in its own mount namespace whose /dev/log is a
# socket this test reads (the host's syslog is never touched).  A flood of
# refusals reaches syslog rate-limited, with a count of what was left out;
# status polls are not sent at all, a reload is.
SL=$TOPO_TMP/syslog; mkdir -p "$SL/dev"
topo_bg "$NS_GW" syslogd python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1])
out = open(sys.argv[2], "w", buffering=1)
while True: out.write(s.recv(65536).decode(errors="replace").replace("\n", " ") + "\n")' \
	"$SL/log.sock" "$SL/messages"
for i in $(seq 100); do [ -S "$SL/log.sock" ] && break; sleep 0.1; done
rm -f "$GW_SOCK"
# Its /var/log is an empty tmpfs too: without -a the audit log goes to
# /var/log/moat/audit.log, folder made 0750.
ip netns exec "$NS_GW" unshare -m sh -c '
	mount --make-rprivate / && mount -t tmpfs moat-dev "$1/dev" || exit 1
	for n in null zero random urandom; do touch "$1/dev/$n"; mount --bind "/dev/$n" "$1/dev/$n"; done
	ln -s "$1/log.sock" "$1/dev/log" && mount --bind "$1/dev" /dev || exit 1
	mount -t tmpfs moat-log /var/log || exit 1
	shift; exec "$@"' sh "$SL" build/gatewayd -d -X -c "$GW_CONF" -s "$GW_SOCK" >>"$GW_LOG" 2>&1 &
GW_PID=$!; TOPO_PIDS+=("$GW_PID")
for i in $(seq 100); do gw_ctl status >/dev/null 2>&1 && break; sleep 0.1; done
GW_AUDIT=/proc/$GW_PID/root/var/log/moat/audit.log
expect_match "default audit log: /var/log/moat/audit.log" '"event":"start"' "$(cat "$GW_AUDIT" 2>&1)"
expect_eq "/var/log/moat is 0750, the audit log 0640" "750 640" \
	"$(stat -c %a "/proc/$GW_PID/root/var/log/moat") $(stat -c %a "$GW_AUDIT")"
for i in $(seq 100); do grep -q '"event":"start"' "$SL/messages" 2>/dev/null && break; sleep 0.1; done
expect_match "syslog gets the audit events" '"event":"start"' "$(cat "$SL/messages" 2>/dev/null)"
for i in 1 2 3 4 5; do gw_ctl status >/dev/null; gw_ctl sandboxes >/dev/null; done
gw_ctl reload >/dev/null
for i in $(seq 100); do grep -q '"verb":"reload"' "$SL/messages" && break; sleep 0.1; done
expect_match "a reload request reaches syslog" '"verb":"reload"' "$(cat "$SL/messages")"
expect_fail "status and sandboxes polls do not reach syslog" grep -qE '"verb":"(status|sandboxes)"' "$SL/messages"
expect_ok "the audit file still has the polls" grep -q '"verb":"status"' "$GW_AUDIT"
sed -i 's|egress = "none"; owner = "bob";|egress = "open"; owner = "bob";|' "$GW_CONF"
gw_ctl reload >/dev/null
before=$(wc -l <"$GW_AUDIT")
in_ns $TOPO-dev python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in range(1000, 3000): s.sendto(b"x", ("192.168.77.2", p))'
for i in $(seq 100); do	# wait until the audit file has the flood
	n=$(tail -n +$((before + 1)) "$GW_AUDIT" | grep -c '"event":"refusal"')
	[ "$n" -ge 150 ] && break; sleep 0.2
done
in_ns $TOPO-dev python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.168.77.2", 999))'
for i in $(seq 100); do grep -q 'left out of syslog' "$SL/messages" && break; sleep 0.2; done
file=$(tail -n +$((before + 1)) "$GW_AUDIT" | grep -c '"event":"refusal"')
sys=$(grep -c '"event":"refusal"' "$SL/messages")
if [ "$file" -ge 150 ] && [ "$sys" -le 80 ]; then ok "syslog gets refusals rate-limited ($sys of the file's $file)"
else not_ok "syslog gets refusals rate-limited" "file $file, syslog $sys"; fi
expect_match "syslog says how many events it left out" 'audit: [0-9]+ event\(s\) left out of syslog' "$(cat "$SL/messages")"
tap_done
