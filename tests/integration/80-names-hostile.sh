#!/usr/bin/env bash
# Names a guest chose are data wherever they are shown (issue 40 finding
# 2), and `ctl refused` puts names before the kernel's port refusals
# (issue 41 item 5).
#  - The open sandbox dev resolves hostile names with dig, one of which
#    once widened allow_ports when `ctl names --as-allow` was pasted.  The
#    pasted output, after a sandbox's own allow_ports, still loads; the
#    sandbox keeps its allow_ports; no hostile name is in its list.
#  - `ctl names` and `ctl refused` show each name on one row (no raw
#    newline or quote from a name); names/refused --json parse and give
#    the name back; the audit log's lines parse.
#  - After web was refused a name and then scanned 200 ports of the
#    gateway, the name is the first row of `ctl refused web` and the ports
#    are one row, "10.77.0.1: N ports".
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
trap 'rc=$?; topo_down; exit $rc' EXIT
trap 'topo_down; exit 130' INT
trap 'topo_down; exit 143' TERM
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest solo 10.77.0.15 52:54:00:00:00:0f mt-solo
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53 --answer-all 203.0.113.99
topo_wait_port "$NS_INET" 203.0.113.53 53
cp examples/demo.conf "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"
printf '%s\n' 'mac = "52:54:00:00:00:0f"; address = "10.77.0.15"; tap = "mt-solo";' \
	'egress = "open";' >"$TOPO_TMP/sandboxes.d/solo.conf"
gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 @$GW_ADDR "$2" A; }

# --- hostile names in an open sandbox ------------------------------------
HOSTILE='zzzz.evil.test"]allow_ports=["tcp/22","tcp/80","tcp/443'
BUDGET='yyyy.evil.test"];egress_budget=[0];x=["'
expect_match "dev resolves the hostile name" 'status: NOERROR' "$(dig_in dev "$HOSTILE")"
expect_match "dev resolves a second one" 'status: NOERROR' "$(dig_in dev "$BUDGET")"
expect_match "dev resolves a name with a newline in a label" 'status: NOERROR' \
	"$(dig_in dev 'line\010break.evil.test')"
expect_match "dev resolves a name with a backslash" 'status: NOERROR' \
	"$(dig_in dev 'back\092slash.evil.test')"
expect_match "dev resolves a plain name" 'status: NOERROR' "$(dig_in dev ok.evil.test)"
listed() { gw_ctl names dev | grep -q 'zzzz\.evil\.test'; }
expect_ok "ctl names lists the hostile name" wait_for 5 listed
wait_for 5 bash -c "[ \$(build/gatewayd ctl -s '$GW_SOCK' names dev | grep -c evil) -ge 5 ]"

AS=$(gw_ctl names dev --as-allow)
printf '%s\n' "$AS" >"$TOPO_TMP/as-allow.txt"
expect_eq "--as-allow: the list holds the plain name only" 'allow = [ "ok.evil.test" ];' \
	"$(sed -n 1p <<<"$AS")"
expect_eq "every other line is a comment" "" "$(sed -n '2,$p' <<<"$AS" | grep -v '^#' | grep -v '^ok$')"
expect_match "...naming the hostile name, escaped" \
	'^#   "zzzz\.evil\.test\\"\]allow_ports=\[\\"tcp/22\\"' "$AS"
# Pasted as the homelab page says: into the sandbox's file, after its
# own allow_ports.
P=$TOPO_TMP/paste.conf
sed -e 's/^sandboxes = (.*/sandboxes = (\n  { name = "paste"; mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-paste";\n    egress = "allowlist"; allow_ports = [ "tcp\/443" ];\n    @PASTE@\n  },/' \
	"$GW_CONF" >"$P"
python3 - "$P" "$TOPO_TMP/as-allow.txt" <<'PY'
import sys
p, a = sys.argv[1], sys.argv[2]
paste = "".join(l for l in open(a) if l.strip() != "ok")
s = open(p).read().replace("@PASTE@", paste)
open(p, "w").write(s)
PY
out=$(in_ns "$NS_GW" build/gatewayd -nv -c "$P" 2>&1); rc=$?
expect_eq "the pasted output loads" 0 "$rc"
row=$(sed -n '/name = "paste"/,/^  }/p' <<<"$out")
expect_match "...paste keeps allow_ports tcp/443" 'allow_ports = \[ "tcp/443" \]' "$row"
expect_fail "...and gains no tcp/22" grep -q 'tcp/22' <<<"$row"
expect_match "...its list is the plain name" 'allow = \[ "ok\.evil\.test" \]' "$row"
expect_fail "...no egress budget was written" grep -q 'budget' <<<"$row"

# The attack as reported: an open sandbox resolved only the hostile name,
# and its --as-allow went into a sandbox that keeps the default ports.
expect_match "solo resolves only the hostile name" 'status: NOERROR' "$(dig_in solo "$HOSTILE")"
solo_listed() { gw_ctl names solo | grep -q 'zzzz\.evil\.test'; }
expect_ok "ctl names solo lists it" wait_for 5 solo_listed
gw_ctl names solo --as-allow >"$TOPO_TMP/as-allow-solo.txt"
P2=$TOPO_TMP/paste2.conf
sed -e 's/^sandboxes = (.*/sandboxes = (\n  { name = "paste"; mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-paste";\n    egress = "allowlist";\n    @PASTE@\n  },/' \
	"$GW_CONF" >"$P2"
python3 - "$P2" "$TOPO_TMP/as-allow-solo.txt" <<'PY'
import sys
p, a = sys.argv[1], sys.argv[2]
paste = "".join(l for l in open(a) if l.strip() != "ok")
s = open(p).read().replace("@PASTE@", paste)
open(p, "w").write(s)
PY
out=$(in_ns "$NS_GW" build/gatewayd -nv -c "$P2" 2>&1); rc=$?
expect_eq "solo's pasted output loads" 0 "$rc"
row=$(sed -n '/name = "paste"/,/^  }/p' <<<"$out")
expect_match "...the sandbox keeps the default allow_ports" 'allow_ports = \[ "tcp/80", "tcp/443" \]' "$row"
expect_fail "...and gains no tcp/22" grep -q 'tcp/22' <<<"$row"
expect_match "...its list is empty" 'allow = \[ \]' "$row"

# --- rows and JSON -----------------------------------------------------------
N=$(gw_ctl names dev)
expect_eq "ctl names: every row is a row (header, dev rows, ok)" "" \
	"$(grep -vE '^(SANDBOX |dev |ok$)' <<<"$N")"
expect_match "ctl names shows the quote escaped" 'zzzz\.evil\.test\\"\]allow_ports' "$N"
expect_eq "ctl names --json parses and gives the name back" yes "$(gw_ctl names --json dev | python3 -c '
import json, sys
w = [e["what"] for v in json.load(sys.stdin) for e in v["entries"]]
print("yes" if sys.argv[1] + "." in w or sys.argv[1] in w else w)' "$HOSTILE")"
expect_match "web is refused the hostile name" 'status: REFUSED' "$(dig_in web "$HOSTILE")"
refused_has() { gw_ctl refused web | grep -q 'zzzz\.evil'; }
expect_ok "ctl refused lists it" wait_for 5 refused_has
R=$(gw_ctl refused web)
expect_eq "ctl refused: every row is a row" "" "$(grep -vE '^(SANDBOX |web |ok$)' <<<"$R")"
expect_eq "ctl refused --json parses" yes "$(gw_ctl refused --json web | python3 -c '
import json, sys
w = [e["what"] for v in json.load(sys.stdin) for e in v["entries"]]
print("yes" if sys.argv[1] in w else w)' "$HOSTILE")"
expect_eq "the audit log: JSON lines, the name in one, escaped" yes "$(python3 -c '
import json, sys
raw = open(sys.argv[1]).read()
names = [json.loads(l).get("name") for l in raw.splitlines()]
print("yes" if sys.argv[2] + "." in names and "allow_ports=[\"" not in raw
      else names)' "$GW_AUDIT" "$HOSTILE")"

# --- names first, ports folded ---------------------------------------------------
expect_match "web is refused open.test" 'status: REFUSED' "$(dig_in web open.test)"
sleep 1.1	# the scan comes later: names stay first however recent the ports
in_ns "$TOPO-web" python3 - $GW_ADDR <<'PY'
import socket, sys
for port in range(1000, 1200):
    s = socket.socket()
    s.settimeout(0.3)
    try:
        s.connect((sys.argv[1], port))
    except OSError:
        pass
    s.close()
PY
folded() { gw_ctl refused web | grep -qE "^web +$GW_ADDR: [0-9]+ ports "; }
expect_ok "the scan's ports are one folded row" wait_for 5 folded
R=$(gw_ctl refused web)
printf '%s\n' "$R" | head -8 | sed 's/^/# /'
n=$(sed -nE "s/^web +$GW_ADDR: ([0-9]+) ports .*/\1/p" <<<"$R")
expect_ok "...of many ports ($n)" test "${n:-0}" -ge 100
expect_eq "...and no row of a single gateway port" 0 "$(grep -cE "^web +$GW_ADDR:[0-9]" <<<"$R")"
expect_match "the first row is a name dnsd refused" '^web +(open\.test|zzzz\.evil\.test)\S* .* dns ' \
	"$(sed -n 2p <<<"$R")"
expect_match "the name rows come before the kernel's" "^web +$GW_ADDR: [0-9]+ ports " "$(grep '^web ' <<<"$R" | tail -1)"
expect_eq "--kind kernel keeps the kernel's rows only" "" "$(gw_ctl refused web --kind kernel | grep -E '^web ' | grep -v ' kernel ')"
expect_eq "--kind dns keeps dnsd's only" "" "$(gw_ctl refused web --kind dns | grep -E '^web ' | grep -v ' dns ')"
expect_fail "--kind takes dns, proxy or kernel" gw_ctl refused web --kind ports

# A sweep of the guests' network (containment-check makes one): refused
# at once, as another guest, and one row for all the addresses.  (2 s
# first: the port scan spent the guest's log lines for this second.)
sleep 2
in_ns "$TOPO-web" python3 - <<'PY'
import socket
for host in range(20, 40):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("10.77.0.%d" % host, 22))
    except OSError:
        pass
    s.close()
PY
guests() { gw_ctl refused web | grep -qE "^web +other guests: [0-9]+ addresses .* another guest"; }
expect_ok "a sweep of other guests' addresses is one folded row" wait_for 5 guests
R=$(gw_ctl refused web)
expect_eq "...and no row of a single other guest" 0 "$(grep -cE "^web +10\.77\.0\.[0-9]+:22 " <<<"$R")"
expect_match "the first row is still a name dnsd refused" '^web +(open\.test|zzzz\.evil\.test)\S* .* dns ' \
	"$(sed -n 2p <<<"$R")"
expect_eq "--json keeps every port, with its destination" yes "$(gw_ctl refused --json web | python3 -c '
import json, sys
e = [e for v in json.load(sys.stdin) for e in v["entries"] if e["source"] == "kernel"]
d = [x for x in e if x["destination"] == sys.argv[1] and x["what"].startswith(sys.argv[1] + ":")]
print("yes" if len(d) == int(sys.argv[2]) else (len(d), sys.argv[2]))' "$GW_ADDR" "$n")"
tap_done
