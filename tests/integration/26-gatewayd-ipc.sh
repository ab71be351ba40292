#!/usr/bin/env bash
# gatewayd's side of the child protocol, driven by a scripted stand-in for
# dnsd: a malformed message kills only the sender; set additions are
# applied only to the asking sandbox's own set and only for public IPv4.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_services
chmod 711 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/bin"
cp examples/demo.conf "$GW_CONF"
# Interception off: the tcp 80 probes here test the forward chain (the
# sandboxes' sets), which interception would hand to the proxy instead.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"

# The stand-in reads its script from $TOPO_TMP/script.py each start.
cat >"$TOPO_TMP/bin/dnsd" <<SH
#!/bin/sh
exec python3 $TOPO_TMP/script.py "\$@"
SH
chmod 755 "$TOPO_TMP/bin/dnsd"
cat >"$TOPO_TMP/script.py" <<PY
import socket, struct, sys, time
s = socket.socket(fileno=3)
# A plain addition (the sandbox's allow_ports), no ports of its own: the
# 16 port slots stay zero; gen 0 is the list dnsd starts with.
SET_PLAIN = struct.pack("=BB2xI", 1, 0, 0) + b"\0" * (16 * 8)
def set_add(i, sandbox, addrs):
    body = sandbox.encode().ljust(33, b"\0") + b"\0" * 3
    body += struct.pack("=II", 60000, len(addrs))
    body += SET_PLAIN
    for a in addrs:
        body += struct.pack("=i", 2) + socket.inet_aton(a) + b"\0" * 12
    s.send(struct.pack("=HHII", 1, 0, len(body), i) + body)
    h = s.recv(64)
    typ, _, ln, rid = struct.unpack("=HHII", h[:12])
    st, = struct.unpack("=i", h[12:16])
    return "%d:%d:%d" % (typ, rid, st)
out = open("$TOPO_TMP/acks", "a")
out.write(set_add(7, "web", ["203.0.113.10", "192.168.77.2", "10.77.0.11"]) + "\n")
out.write(set_add(8, "dev", ["203.0.113.11"]) + "\n")
out.write(set_add(9, "nosuch", ["203.0.113.12"]) + "\n")
forged = b'{"source":"proxy","event":"forged"}'
s.send(struct.pack("=HHII", 3, 0, len(forged), 10) + forged)
# several events in one message, a line each: each line is stamped
batch = b'{"event":"batched-1"}\n{"source":"proxy","event":"batched-2"}'
s.send(struct.pack("=HHII", 3, 0, len(batch), 11) + batch)
out.flush()
time.sleep(60)
PY
gw_start -B "$TOPO_TMP/bin"; expect_eq "gatewayd starts with the stand-in dnsd" 0 $?
three_acks() { [ "$(cat "$TOPO_TMP/acks" 2>/dev/null | wc -l)" = 3 ]; }
wait_for 30 three_acks
expect_eq "set-add for web: 1 address added, acked with the request id" "2:7:1" \
	"$(sed -n 1p "$TOPO_TMP/acks")"
expect_eq "set-add for an open sandbox is refused" "2:8:-1" "$(sed -n 2p "$TOPO_TMP/acks")"
expect_eq "set-add for an unknown sandbox is refused" "2:9:-1" "$(sed -n 3p "$TOPO_TMP/acks")"
set=$(in_ns "$NS_GW" nft list set inet moat allow_web)
expect_match "public address is in web's set with a timeout" '203\.0\.113\.10 timeout' "$set"
case "$set" in *192.168.77.2*|*10.77.0.11*) not_ok "private addresses kept out of the set" "$set" ;;
	*) ok "private addresses kept out of the set" ;; esac
expect_eq "web now reaches the address dnsd opened" connected "$(tcp_probe $TOPO-web $INET_HTTP 80)"
expect_eq "web still refused the LAN" unreachable "$(tcp_probe $TOPO-web $LAN_HOST 22)"

wait_for 30 grep -q '"event":"forged"' "$GW_AUDIT"
expect_match "a child cannot claim another child's name in the audit log" \
	'"source":"dnsd","SOURCE":"proxy","event":"forged"' "$(cat "$GW_AUDIT")"
wait_for 30 grep -q '"event":"batched-2"' "$GW_AUDIT"
expect_match "an audit message of several lines: the first stamped with its sender" \
	'^\{"time":"[^"]*","source":"dnsd","event":"batched-1"\}$' "$(cat "$GW_AUDIT")"
expect_match "an audit message of several lines: a later line cannot claim another child's name" \
	'^\{"time":"[^"]*","source":"dnsd","SOURCE":"proxy","event":"batched-2"\}$' "$(cat "$GW_AUDIT")"

# A malformed message: the sender is killed and logged, nothing else.
nflog_pid=$(gw_child_pid nflog)
dnsd_pid=$(gw_child_pid dnsd)
cat >"$TOPO_TMP/script.py" <<'PY'
import socket, struct, time
s = socket.socket(fileno=3)
s.send(struct.pack("=HHII", 1, 0, 0xffff, 1) + b"short")
time.sleep(60)
PY
kill "$dnsd_pid"	# restarted with the malformed script
wait_for 60 grep -q '"event":"child-killed","child":"dnsd"' "$GW_AUDIT"
expect_match "malformed message kills the sender, audited with the reason" \
	'"event":"child-killed","child":"dnsd","reason":"set-add: header says 65535 bytes, got 5"' "$(cat "$GW_AUDIT")"
expect_ok "gatewayd itself is still running" kill -0 "$GW_PID"
expect_eq "the other child is untouched" "$nflog_pid" "$(gw_child_pid nflog)"
expect_ok "control socket still answers" gw_ctl status

# A set-add asking to pin an address for ~49 days: the timeout is capped
# in the shape check, so the message is a violation and nothing is added.
cat >"$TOPO_TMP/script.py" <<PY
import socket, struct, time
s = socket.socket(fileno=3)
body = b"web".ljust(33, b"\0") + b"\0" * 3 + struct.pack("=II", 0xffffffff, 1)
body += struct.pack("=BB2xI", 1, 0, 0) + b"\0" * (16 * 8)
body += struct.pack("=i", 2) + socket.inet_aton("203.0.113.44") + b"\0" * 12
s.send(struct.pack("=HHII", 1, 0, len(body), 11) + body)
time.sleep(60)
PY
# The stand-in is being restarted after its violation, or is asleep:
# either way the next one runs this script.
kill "$(gw_child_pid dnsd)" 2>/dev/null
for i in $(seq 100); do grep -q 'timeout 4294967295 ms' "$GW_AUDIT" && break; sleep 0.1; done
expect_match "a set-add timeout above the cap kills the sender" \
	'"event":"child-killed","child":"dnsd","reason":"set-add: timeout 4294967295 ms exceeds 3600000 ms"' \
	"$(cat "$GW_AUDIT")"
expect_fail "... and the address is not in the set" grep -q 203.0.113.44 \
	<<<"$(in_ns "$NS_GW" nft list set inet moat allow_web)"

# A well-formed budget charge is the proxy's to send, not dnsd's.  Its
# type number is read from lib/ipc.h, so new messages cannot shift it.
budget_type=$(awk '/^enum ipc_type/{f=1;n=0;next} f&&/IPC_TYPE_MAX/{exit} f&&/^\tIPC_/{n++; if ($1 ~ /^IPC_BUDGET_REQ/) {print n; exit}}' lib/ipc.h)
cat >"$TOPO_TMP/script.py" <<PY
import socket, struct, time
s = socket.socket(fileno=3)
body = struct.pack("=I", 1) + b"gh".ljust(33, b"\0") + b"\0" * (7 * 33 + 4)
s.send(struct.pack("=HHII", $budget_type, 0, len(body), 12) + body)
time.sleep(60)
PY
kill "$(gw_child_pid dnsd)" 2>/dev/null
wait_for 60 grep -q 'sent budget-req' "$GW_AUDIT"
expect_match "a budget charge from dnsd kills it (the proxy's message only)" \
	'"event":"child-killed","child":"dnsd","reason":"sent budget-req, which its role may not ' \
	"$(cat "$GW_AUDIT")"
tap_done
